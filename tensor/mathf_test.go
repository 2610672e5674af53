package tensor

import (
	"math"
	"testing"
)

func TestFastMath(t *testing.T) {
	r := NewRNG(60)
	var worstExp, worstErfc, worstGELU, worstGrad, worstTanh, worstSig float64
	for i := range 400000 {
		x := (r.Uniform()*2 - 1) * 30
		if i%2 == 0 {
			x /= 10
		}
		x32 := float32(x)
		xf := float64(x32)
		if want := math.Exp(xf); want > 1e-37 && want < 1e37 {
			got := exp64fast(xf)
			worstExp = max(worstExp, math.Abs(got-want)/want)
		}
		if want := math.Erfc(xf / 3); want > 1e-30 {
			worstErfc = max(worstErfc, math.Abs(erfc32(xf/3)-want)/want)
		}
		worstGELU = max(worstGELU, math.Abs(float64(geluT(x32))-erfGELU(xf)))
		wantGrad := 0.5*(1+math.Erf(xf/math.Sqrt2)) + xf*math.Exp(-xf*xf/2)/math.Sqrt(2*math.Pi)
		worstGrad = max(worstGrad, math.Abs(float64(geluGradT(x32))-wantGrad))
		worstTanh = max(worstTanh, math.Abs(float64(tanhT(x32))-math.Tanh(xf)))
		worstSig = max(worstSig, math.Abs(float64(sigmoidT(x32))-1/(1+math.Exp(-xf))))
	}
	for _, c := range []struct {
		name         string
		worst, limit float64
	}{
		{"exp64fast relative", worstExp, 1e-8}, // the remainder r⁸/8! alone is 5.2e-9 at |r| = ln2/2
		{"erfc32 relative", worstErfc, 1.2e-7},
		{"GELU abs", worstGELU, 2e-6}, // |x| <= 30
		{"GELUGrad abs", worstGrad, 1e-6},
		{"tanh abs", worstTanh, 1e-7},
		{"sigmoid abs", worstSig, 1e-7},
	} {
		if c.worst > c.limit {
			t.Errorf("%s error %.3g > %.3g", c.name, c.worst, c.limit)
		} else {
			t.Logf("%s error %.3g", c.name, c.worst)
		}
	}
	// Special values.
	if exp64fast(math.Inf(-1)) != 0 || !math.IsInf(exp64fast(1000), 1) || exp64fast(0) != 1 {
		t.Error("exp64fast special values")
	}
	if tanhT[float32](1e-30) != 1e-30 || geluT[float32](0) != 0 || sigmoidT[float32](-1000) != 0 {
		t.Error("tiny/huge arguments")
	}
}

// TestFastMathVec checks the inlined float32 vector kernels against the
// scalar functions they expand, and against package math.
func TestFastMathVec(t *testing.T) {
	r := NewRNG(61)
	n := 100000
	a, gy := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = float32((r.Uniform()*2 - 1) * 12)
		gy[i] = float32(r.Uniform()*2 - 1)
	}
	a[0], a[1], a[2] = 0, float32(math.Inf(1)), float32(math.Inf(-1))
	d := make([]float32, n)
	check := func(name string, ref func(x, g float64) float64, tol float64) {
		t.Helper()
		worst := 0.0
		for i, x := range a {
			want := ref(float64(x), float64(gy[i]))
			got := float64(d[i])
			if math.IsInf(want, 0) || want == 0 {
				if got != want && math.Abs(got-want) > 1e-30 {
					t.Errorf("%s(%v) = %v, want %v", name, x, got, want)
				}
				continue
			}
			worst = max(worst, math.Abs(got-want)/max(1, math.Abs(want)))
		}
		if worst > tol {
			t.Errorf("%s: error %.3g > %.3g", name, worst, tol)
		}
	}
	expVec32(d, a)
	check("exp", func(x, _ float64) float64 { return math.Exp(x) }, 1.2e-7)
	geluVec32(d, a)
	check("gelu", func(x, _ float64) float64 { return erfGELU(x) }, 1e-6)
	geluGradVec32(d, a, gy)
	check("geluGrad", func(x, g float64) float64 {
		return g * (0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi))
	}, 1e-6)
	sigmoidVec32(d, a)
	check("sigmoid", func(x, _ float64) float64 { return 1 / (1 + math.Exp(-x)) }, 1e-7)
	siluVec32(d, a)
	check("silu", func(x, _ float64) float64 { return x / (1 + math.Exp(-x)) }, 1e-6)
	siluGradVec32(d, a, gy)
	check("siluGrad", func(x, g float64) float64 {
		s := 1 / (1 + math.Exp(-x))
		return g * s * (1 + x*(1-s))
	}, 1e-6)
	tanhVec32(d, a)
	check("tanh", func(x, _ float64) float64 { return math.Tanh(x) }, 1e-7)
	m := float32(12)
	s := expSubVec32(d, a, m)
	check("expSub", func(x, _ float64) float64 { return math.Exp(x - 12) }, 1.2e-7)
	if s2 := sumExpSub32(a, m); math.Abs(s-s2) > 1e-12*s {
		t.Errorf("sumExpSub32 = %v, expSubVec32 sum = %v", s2, s)
	}
	nan := []float32{float32(math.NaN())}
	for name, f := range map[string]func(d, a []float32){"exp": expVec32, "gelu": geluVec32, "sigmoid": sigmoidVec32, "tanh": tanhVec32, "silu": siluVec32} {
		out := []float32{0}
		f(out, nan)
		if out[0] == out[0] {
			t.Errorf("%s(NaN) = %v", name, out[0])
		}
	}
}
