package tensor

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// TestRNGGolden pins the exact output for a fixed seed: these numbers must
// never change, on any machine or Go release.
func TestRNGGolden(t *testing.T) {
	r := NewRNG(42)
	if got := r.Uint64(); got != 6195063244628665600 {
		t.Errorf("Uint64 = %d", got)
	}
	if got := r.Uniform(); got != 0.8779001142378786 {
		t.Errorf("Uniform = %.17g", got)
	}
	if got := r.Intn(1000); got != 86 {
		t.Errorf("Intn = %d", got)
	}
	for i, want := range []float64{-0.45513714744320205, 0.21621535387732116, 0.91069379938828166} {
		if got := r.Normal(); got != want {
			t.Errorf("Normal #%d = %.17g, want %.17g", i, got, want)
		}
	}
	if got := fmt.Sprint(r.Perm(8)); got != "[0 2 3 5 6 4 7 1]" {
		t.Errorf("Perm = %s", got)
	}
	if got := r.Split().Normal(); got != 0.34202988106520121 {
		t.Errorf("Split().Normal = %.17g", got)
	}
	x := RandN(NewRNG(7), Float32, 4).Data32()
	for i, want := range []float32{-0.0051934407, -0.15334937, 0.42711347, -1.773255} {
		if x[i] != want {
			t.Errorf("RandN[%d] = %v, want %v", i, x[i], want)
		}
	}
}

func TestPortableLog(t *testing.T) {
	r := NewRNG(1)
	for range 100000 {
		x := r.Uniform()
		if x == 0 {
			continue
		}
		if got, want := portableLog(x), math.Log(x); math.Abs(got-want) > 1e-15*math.Abs(want) {
			t.Fatalf("portableLog(%v) = %v, want %v", x, got, want)
		}
	}
}

func TestRNGDistributions(t *testing.T) {
	r := NewRNG(3)
	const n = 200000
	var s, s2 float64
	for range n {
		z := r.Normal()
		s += z
		s2 += z * z
	}
	if mean, v := s/n, s2/n-(s/n)*(s/n); math.Abs(mean) > 0.01 || math.Abs(v-1) > 0.02 {
		t.Errorf("Normal: mean %v variance %v", mean, v)
	}
	counts := make([]int, 7)
	for range 70000 {
		counts[r.Intn(7)]++
	}
	for i, c := range counts {
		if c < 9500 || c > 10500 {
			t.Errorf("Intn(7) gave %d %d times of 70000", i, c)
		}
	}
	u := FillUniform(New(Float64, 1000), r, 2, 3)
	if lo, hi := -Max(nil, Neg(nil, u), 0, false).Item(), Max(nil, u, 0, false).Item(); lo < 2 || hi >= 3 {
		t.Errorf("FillUniform range [%v, %v]", lo, hi)
	}
	// Same stream whatever the layout.
	a := FillNormal(New(Float32, 3, 4), NewRNG(9), 1, 2)
	b := FillNormal(New(Float32, 4, 3).T(), NewRNG(9), 1, 2)
	assertClose(t, b, []int{3, 4}, a.Float64s(), 0, "layout-independent FillNormal")
}

// TestFillNormalPasses checks FillNormal's two-pass fill of large CPU
// tensors against drawing variate by variate with Normal, bit for bit, and
// that it leaves the generator where Normal would: odd and even sizes
// around the threshold, with and without a spare variate, in views that
// start inside their storage, on one and two threads.
func TestFillNormalPasses(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct {
		dt        DType
		n, skip   int // elements filled; elements of the storage before them
		spare     bool
		mean, std float64
	}{
		{Float32, 10, 0, false, 0, 1},
		{Float32, 2*normalGrain - 1, 0, false, 0, 1},
		{Float32, 2 * normalGrain, 0, false, 0, 1},
		{Float32, 2*normalGrain + 1, 0, true, 0, 1},
		{Float32, 2*normalGrain + 2, 0, true, 0.5, 2},
		{Float32, 65536, 3, false, -1, 0.25},
		{Float64, 65537, 0, false, 0, 1},
		{Float64, 40000, 5, true, 3, 0.1},
	} {
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			name := fmt.Sprintf("%v/n=%d/skip=%d/spare=%v/procs=%d", c.dt, c.n, c.skip, c.spare, procs)
			r, ref := NewRNG(9), NewRNG(9)
			if c.spare {
				r.Normal()
				ref.Normal()
			}
			got := New(c.dt, c.skip+c.n).Slice(0, c.skip, c.skip+c.n)
			FillNormal(got, r, c.mean, c.std)
			g := got.To(Float64).Data64()
			for i := range c.n {
				want := c.mean + float64(c.std*ref.Normal()) // rounded: no fused multiply-add (GOAMD64=v3)
				if c.dt == Float32 {
					want = float64(float32(want))
				}
				if math.Float64bits(g[i]) != math.Float64bits(want) {
					t.Fatalf("%s: element %d = %v, want %v", name, i, g[i], want)
				}
			}
			if a, b := r.Normal(), ref.Normal(); a != b {
				t.Fatalf("%s: next variate %v, want %v", name, a, b)
			}
		}
	}
}
