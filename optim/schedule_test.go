package optim

import (
	"math"
	"testing"
)

func TestWarmupCosine(t *testing.T) {
	// The LG-VAE Planar run: 2e-4 -> 1.5e-4, warmup 100, 5e4 steps.
	s := WarmupCosine{Peak: 2e-4, Min: 1.5e-4, Warmup: 100, DecaySteps: 50000}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	noWarm := WarmupCosine{Peak: 1, Min: 0, Warmup: 0, DecaySteps: 10}
	short := WarmupCosine{Peak: 1, Min: 0.1, Warmup: 10, DecaySteps: 5}
	cases := []struct {
		s    WarmupCosine
		step int
		want float64
	}{
		{s, 0, 0},
		{s, 1, 2e-6}, // lr*s/W
		{s, 50, 1e-4},
		{s, 99, 1.98e-4},
		{s, 100, 2e-4}, // cosine starts at Peak
		{s, 101, 1.5e-4 + 0.5*(1+math.Cos(math.Pi/49900))*0.5e-4},
		{s, 25050, 1.75e-4}, // halfway: (Peak+Min)/2
		{s, 49999, 1.5e-4 + 0.5*(1+math.Cos(math.Pi*49899/49900))*0.5e-4},
		{s, 50000, 1.5e-4},
		{s, 50001, 1.5e-4},
		{s, 1 << 30, 1.5e-4},
		{noWarm, 0, 1},
		{noWarm, 5, 0.5},
		{noWarm, 10, 0},
		{short, 5, 0.5}, // still warming up
		{short, 10, 0.1},
		{short, 11, 0.1},
	}
	for _, c := range cases {
		if got := c.s.LR(c.step); math.Abs(got-c.want) > 1e-15*math.Max(1, c.want) {
			t.Errorf("%+v.LR(%d) = %.17g, want %.17g", c.s, c.step, got, c.want)
		}
	}
	// Monotone: non-decreasing in warmup, non-increasing after.
	for i := 1; i < 50100; i++ {
		a, b := s.LR(i), s.LR(i+1)
		if (i < 100 && b < a) || (i >= 100 && b > a) {
			t.Fatalf("not monotone at %d: %v -> %v", i, a, b)
		}
	}
}

func TestWarmupCosineValidate(t *testing.T) {
	for _, w := range []WarmupCosine{
		{Peak: -1}, {Peak: math.NaN()}, {Peak: math.Inf(1)}, {Peak: 1, Min: 2}, {Peak: 1, Min: -1},
		{Peak: 1, Warmup: -1}, {Peak: 1, DecaySteps: -5},
	} {
		if w.Validate() == nil {
			t.Errorf("%+v accepted", w)
		}
	}
}

func TestConstant(t *testing.T) {
	var s Schedule = Constant(2e-4)
	for _, step := range []int{0, 1, 1000, 1 << 40} {
		if s.LR(step) != 2e-4 {
			t.Errorf("LR(%d) = %v", step, s.LR(step))
		}
	}
}

func TestStableDecay(t *testing.T) {
	d := StableDecay{Peak: 1e-4, Steps: 1000, Decay: 4}
	for _, c := range []struct {
		step int
		want float64
	}{
		{1, 1e-4}, {996, 1e-4}, {997, 1e-4}, {998, 0.75e-4}, {999, 0.5e-4}, {1000, 0.25e-4}, {1001, 0}, {5000, 0},
	} {
		if got := d.LR(c.step); math.Abs(got-c.want) > 1e-18 {
			t.Errorf("LR(%d) = %v, want %v", c.step, got, c.want)
		}
	}
	if got := (StableDecay{Peak: 3e-4, Steps: 10}).LR(9); got != 3e-4 {
		t.Errorf("no decay: LR(9) = %v, want 3e-4", got)
	}
	// The rate never rises and the decay phase sums to Peak*(Decay+1)/2.
	d = StableDecay{Peak: 2, Steps: 50, Decay: 20}
	sum, prev := 0.0, math.Inf(1)
	for s := 1; s <= 60; s++ {
		lr := d.LR(s)
		if lr > prev {
			t.Fatalf("LR rises at step %d: %v -> %v", s, prev, lr)
		}
		prev = lr
		if s > 30 {
			sum += lr
		}
	}
	if math.Abs(sum-21) > 1e-12 {
		t.Errorf("decay phase sums to %v, want 21", sum)
	}
}

func TestStableDecayValidate(t *testing.T) {
	if err := (StableDecay{Peak: 1, Steps: 10, Decay: 10}).Validate(); err != nil {
		t.Errorf("valid schedule refused: %v", err)
	}
	for _, d := range []StableDecay{
		{Peak: -1, Steps: 10}, {Peak: math.NaN(), Steps: 10}, {Peak: math.Inf(1)}, {Peak: 1, Steps: -1},
		{Peak: 1, Steps: 10, Decay: -1}, {Peak: 1, Steps: 10, Decay: 11},
	} {
		if d.Validate() == nil {
			t.Errorf("%+v accepted", d)
		}
	}
}
