package flow

import (
	"math"
	"slices"
	"testing"

	"lgflow/tensor"
)

func TestTimeGrid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  int
		random bool
		jumpAt float64
		want   []float64 // nil: only the invariants are checked
	}{
		{"uniform", 4, false, 0, []float64{0.01, 0.2575, 0.505, 0.7525, 1}},
		{"jump", 4, false, 0.7, []float64{0.01, 0.24, 0.47, 0.7, 1}},
		{"jump, two steps", 2, false, 0.9, []float64{0.01, 0.9, 1}},
		{"random", 50, true, 0, nil},
		{"random with jump", 50, true, 0.95, nil},
	} {
		g := timeGrid(0.01, tc.steps, tc.random, tc.jumpAt, 1, tensor.NewRNG(3))
		if len(g) != tc.steps+1 || g[0] != 0.01 || g[tc.steps] != 1 {
			t.Errorf("%s: grid %v, want %d times from 0.01 to 1", tc.name, g, tc.steps+1)
			continue
		}
		for i := 1; i < len(g); i++ {
			if g[i] < g[i-1] {
				t.Errorf("%s: time %d (%g) before time %d (%g)", tc.name, i, g[i], i-1, g[i-1])
			}
		}
		if tc.jumpAt > 0 {
			if g[tc.steps-1] != tc.jumpAt {
				t.Errorf("%s: the last step starts at %g, want %g", tc.name, g[tc.steps-1], tc.jumpAt)
			}
			for _, x := range g[:tc.steps] {
				if x > tc.jumpAt {
					t.Errorf("%s: time %g after the jump at %g", tc.name, x, tc.jumpAt)
				}
			}
		}
		for i, w := range tc.want {
			if math.Abs(g[i]-w) > 1e-12 {
				t.Errorf("%s: grid %v, want %v", tc.name, g, tc.want)
				break
			}
		}
	}
	// A grid from a later start (EndpointPerturbation): uniform from 0.5
	// to the jump at 0.9, then to 1.
	if g, want := timeGrid(0.5, 3, false, 0.9, 1, nil), []float64{0.5, 0.7, 0.9, 1}; !slices.EqualFunc(g, want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
		t.Errorf("grid from 0.5: %v, want %v", g, want)
	}
	// A shift of 3 over 0.01..0.95 in 4 steps then the jump: u = 1/4 maps
	// to 3·0.25/(1 + 2·0.25) = 0.5, u = 1/2 to 0.75, u = 3/4 to 0.9.
	want := []float64{0.01, 0.01 + 0.94*0.5, 0.01 + 0.94*0.75, 0.01 + 0.94*0.9, 0.95, 1}
	if g := timeGrid(0.01, 5, false, 0.95, 3, nil); !slices.EqualFunc(g, want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
		t.Errorf("grid with shift 3: %v, want %v", g, want)
	}
}
