package flow

import (
	"lgflow/graph"
	"math"
	"slices"
	"testing"

	"lgflow/tensor"
)

// TestSampleTimeLocation checks the training-time distribution against
// its closed form. With t = 0.01 + 0.98·(0.98·sigmoid(m + u) + 0.02·v),
// u ~ N(0, s²) and v ~ U(0, 1), P(t > c) is the average over v of
// P(u > (logit(q) - m)/s) with q = (p - 0.02·v) / 0.98 and p = (c - 0.01) / 0.98,
// computed here by the midpoint rule over v.
func TestSampleTimeLocation(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) } // P(N(0,1) > x)
	want := func(m, sd, c float64) float64 {
		p := (c - 0.01) / 0.98
		const k = 2000
		s := 0.0
		for i := range k {
			v := (float64(i) + 0.5) / k
			q := (p - 0.02*v) / 0.98
			switch {
			case q >= 1:
			case q <= 0:
				s++
			default:
				s += phi((math.Log(q/(1-q)) - m) / sd)
			}
		}
		return s / k
	}
	for _, tc := range []struct{ mean, std, cut float64 }{
		{0, 1, 0.5}, {0, 1, 0.9}, {1, 1, 0.9}, {2, 1, 0.95}, {-1, 1, 0.2},
		{3, 0.35, 0.93}, {3, 0.35, 0.96}, {0, 2, 0.9}, {1, 0.5, 0.5},
	} {
		ts := sampleTime(tensor.NewRNG(4), 200000, tc.mean, tc.std)
		n := 0
		for _, v := range ts {
			if v < 0.01 || v > 0.99 {
				t.Fatalf("time %v outside [0.01, 0.99]", v)
			}
			if v > tc.cut {
				n++
			}
		}
		got, exp := float64(n)/float64(len(ts)), want(tc.mean, tc.std, tc.cut)
		if sd := math.Sqrt(exp * (1 - exp) / float64(len(ts))); math.Abs(got-exp) > 5*sd+1e-4 {
			t.Errorf("mean %v, std %v: P(t > %v) = %.4f, want %.4f", tc.mean, tc.std, tc.cut, got, exp)
		}
	}
}

func TestResumable(t *testing.T) {
	base, err := Preset("", "tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want bool
	}{
		{"same", func(*Config) {}, true},
		{"steps", func(c *Config) { c.Steps *= 2 }, true},
		{"lr", func(c *Config) { c.LR /= 2 }, true},
		{"cooldown", func(c *Config) { c.Cooldown = c.Steps / 2 }, true},
		{"time mean", func(c *Config) { c.TimeMean = 1 }, true},
		{"time std", func(c *Config) { c.TimeStd = 0.35 }, true},
		{"decoder weight", func(c *Config) { c.DecoderWeight = 100 }, true},
		{"seed", func(c *Config) { c.Seed++ }, false},
		{"validation", func(c *Config) { c.ValEvery, c.ValSamples = 7, 3 }, true},
		{"batch", func(c *Config) { c.BatchSize++ }, true}, // batch order is a function of (seed, step, batch)
		{"width", func(c *Config) { c.DiT.Width *= 2 }, false},
		{"cond drop", func(c *Config) { c.CondDrop = 0.2 }, true},
		{"classes", func(c *Config) { c.DiT.Classes = 2 }, false},
		{"cond dim", func(c *Config) { c.DiT.CondDim = 1 }, false},
		{"self-conditioning", func(c *Config) { c.SelfCondProb = 0.25 }, false},
	} {
		c := base
		tc.edit(&c)
		if got := resumable(base, c); got != tc.want {
			t.Errorf("%s: resumable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNodeCountHistogram(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		want  []int
	}{
		{nil, nil},
		{[]int{0}, []int{1}},
		{[]int{3, 1, 3}, []int{0, 1, 0, 2}},
		{[]int{2, 2, 2, 5}, []int{0, 0, 3, 0, 0, 1}},
	} {
		var gs []*graph.Graph
		for _, n := range tc.sizes {
			gs = append(gs, graph.New(n))
		}
		if got := nodeCountHistogram(gs); !slices.Equal(got, tc.want) {
			t.Errorf("sizes %v: histogram %v, want %v", tc.sizes, got, tc.want)
		}
	}
}
