package flow

import (
	"math"
	"slices"
	"testing"

	"lgflow/tensor"
)

// bruteAssignment returns the minimal cost over all permutations.
func bruteAssignment(c []float64, n int) float64 {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	best := math.Inf(1)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			s := 0.0
			for i, j := range p {
				s += c[i*n+j]
			}
			best = min(best, s)
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
	return best
}

func TestAssignment(t *testing.T) {
	r := tensor.NewRNG(3)
	for _, tc := range []struct {
		name string
		n    int
		c    []float64
		want []int // nil: compare the cost with brute force
	}{
		{"one", 1, []float64{5}, []int{0}},
		{"swap", 2, []float64{9, 1, 1, 9}, []int{1, 0}},
		{"hand 3x3", 3, []float64{4, 1, 3, 2, 0, 5, 3, 2, 2}, []int{1, 0, 2}},
		{"ties", 3, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1}, nil},
		{"negative", 4, nil, nil},
		{"random 6", 6, nil, nil},
		{"random 7", 7, nil, nil},
	} {
		c := tc.c
		if c == nil {
			c = make([]float64, tc.n*tc.n)
			for i := range c {
				c[i] = r.Normal()
			}
		}
		p := assignment(c, tc.n)
		seen := make([]bool, tc.n)
		got := 0.0
		for i, j := range p {
			if j < 0 || j >= tc.n || seen[j] {
				t.Fatalf("%s: %v is not a permutation", tc.name, p)
			}
			seen[j] = true
			got += c[i*tc.n+j]
		}
		if tc.want != nil && !slices.Equal(p, tc.want) {
			t.Errorf("%s: assignment %v, want %v", tc.name, p, tc.want)
		}
		if want := bruteAssignment(c, tc.n); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: cost %g, brute force %g", tc.name, got, want)
		}
	}
}

// TestCouple: coupling permutes each graph's noise tokens (the multiset of
// rows is unchanged, padding untouched) and does not lengthen the paths.
func TestCouple(t *testing.T) {
	r := tensor.NewRNG(4)
	const B, N, d = 3, 6, 2
	sizes := []int{6, 4, 1}
	x0 := tensor.RandN(r, tensor.Float64, B, N, d).Data64()
	x1 := tensor.RandN(r, tensor.Float64, B, N, d).Data64()
	before := slices.Clone(x0)
	couple(x0, x1, sizes, N, d)
	dist := func(x []float64, b, n int) float64 {
		s := 0.0
		for i := range n * d {
			e := x[b*N*d+i] - x1[b*N*d+i]
			s += e * e
		}
		return s
	}
	for b, n := range sizes {
		if dist(x0, b, n) > dist(before, b, n)+1e-12 {
			t.Errorf("graph %d: coupling lengthened the paths (%g > %g)", b, dist(x0, b, n), dist(before, b, n))
		}
		rows := func(x []float64) [][2]float64 {
			var out [][2]float64
			for i := range N {
				out = append(out, [2]float64{x[(b*N+i)*d], x[(b*N+i)*d+1]})
			}
			slices.SortFunc(out[:n], func(a, c [2]float64) int {
				if a[0] < c[0] {
					return -1
				}
				if a[0] > c[0] {
					return 1
				}
				return 0
			})
			return out
		}
		if !slices.Equal(rows(x0), rows(before)) {
			t.Errorf("graph %d: the noise rows changed beyond a permutation", b)
		}
	}
	if slices.Equal(x0, before) {
		t.Error("nothing was permuted: the checks are vacuous")
	}
}

// TestOTCouple: the tensor wrapper keeps dtype and padding and shortens
// the real tokens' paths; a config with OTCoupling trains.
func TestOTCouple(t *testing.T) {
	r := tensor.NewRNG(5)
	const B, N, d = 2, 5, 3
	x0 := tensor.RandN(r, tensor.Float32, B, N, d)
	x1 := tensor.RandN(r, tensor.Float32, B, N, d)
	mask := tensor.New(tensor.Float32, B, N)
	for b, n := range []int{5, 3} {
		for j := range n {
			mask.Set(1, b, j)
		}
		for j := n; j < N; j++ {
			for k := range d {
				x0.Set(0, b, j, k)
			}
		}
	}
	got := otCouple(x0, x1, mask)
	if got.DType() != tensor.Float32 || !slices.Equal(got.Shape(), x0.Shape()) {
		t.Fatalf("otCouple gave %v %v", got.DType(), got.Shape())
	}
	sq := func(a *tensor.Tensor) float64 {
		s := 0.0
		for b := range B {
			for j := range N {
				for k := range d {
					e := (a.At(b, j, k) - x1.At(b, j, k)) * mask.At(b, j)
					s += e * e
				}
			}
		}
		return s
	}
	if sq(got) >= sq(x0) {
		t.Errorf("coupled paths %g, random %g", sq(got), sq(x0))
	}
	for j := 3; j < N; j++ {
		for k := range d {
			if got.At(1, j, k) != 0 {
				t.Fatalf("padding (1, %d, %d) = %g", j, k, got.At(1, j, k))
			}
		}
	}
}
