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
