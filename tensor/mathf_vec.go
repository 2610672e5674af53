package tensor

// The float32 vector kernels of the transcendental ops. Each exists twice:
// as assembly (AVX2+FMA, 8 lanes, float32 arithmetic; mathf_amd64.s) and as
// the portable Go code below, which writes the exponential and erfc
// polynomials out inline (the Go compiler will not inline them: a call per
// element would cost more than the arithmetic) and computes in float64.
// The dispatchers pick the assembly when the CPU has AVX2 and FMA, unless
// the package is built with the noasm tag or the environment variable
// LGFLOW_MATHF=go (read once at start-up) asks for the Go code. Both are
// accurate to about float32 resolution, but their results may differ in
// the last bits. The scalar reference versions are in mathf.go and the
// accuracy tests in mathf_test.go and mathf_simd_test.go, which measure
// these worst errors, |got-f|/max(1,|f|) against float64 references:
//
//	kernel         Go      AVX2
//	exp (rel.)     6.0e-8  8.3e-8   on [-87, 88]
//	GELU           6.9e-8  8.6e-8
//	GELUGrad       7.1e-8  1.1e-7
//	sigmoid        3.1e-8  8.9e-8
//	SiLU           6.0e-8  1.2e-7
//	SiLUGrad       6.0e-8  2.0e-7
//	tanh           3.1e-8  8.5e-8
//	erfc (rel.)    1.6e-7  3.9e-7   through GELU at x < 0
//
// In both, NaN propagates, ±Inf give the limits (GELU(-Inf) = 0,
// GELUGrad(+Inf) = gy, ...), and no finite input gives NaN or ±Inf except
// where the value overflows (exp above 88.72).

import (
	"math"
	"os"
)

// useSIMD reports whether the dispatchers below call the assembly kernels.
var useSIMD = cpuHasSIMD && os.Getenv("LGFLOW_MATHF") != "go"

// expVec32 sets d[i] = e^a[i]; d and a have equal length and may be the
// same slice (likewise for the other dispatchers).
func expVec32(d, a []float32) {
	if useSIMD {
		expVec32SIMD(d, a)
		return
	}
	expVec32Go(d, a)
}

// expSubVec32 sets d[i] = e^(x[i]-m) and returns Σ d[i] in float64. d may
// be x; m >= max x. The Go code subtracts in float64, the SIMD code in
// float32 (x-m is then rounded like x itself).
func expSubVec32(d, x []float32, m float32) float64 {
	if useSIMD {
		return expSubVec32SIMD(d, x, m)
	}
	return expSubVec32Go(d, x, m)
}

// sumExpSub32 returns Σ e^(x[i]-m) in float64 (m >= max x).
func sumExpSub32(x []float32, m float32) float64 {
	if useSIMD {
		return sumExpSub32SIMD(x, m)
	}
	return sumExpSub32Go(x, m)
}

// geluVec32 sets d[i] = a[i]·Φ(a[i]).
func geluVec32(d, a []float32) {
	if useSIMD {
		geluVec32SIMD(d, a)
		return
	}
	geluVec32Go(d, a)
}

// geluGradVec32 sets d[i] = gy[i]·(Φ(x) + x·φ(x)) with x = a[i].
func geluGradVec32(d, a, gy []float32) {
	if useSIMD {
		geluGradVec32SIMD(d, a, gy)
		return
	}
	geluGradVec32Go(d, a, gy)
}

// sigmoidVec32 sets d[i] = 1/(1+e^-a[i]).
func sigmoidVec32(d, a []float32) {
	if useSIMD {
		sigmoidVec32SIMD(d, a)
		return
	}
	sigmoidVec32Go(d, a)
}

// siluVec32 sets d[i] = a[i]·sigmoid(a[i]).
func siluVec32(d, a []float32) {
	if useSIMD {
		siluVec32SIMD(d, a)
		return
	}
	siluVec32Go(d, a)
}

// siluGradVec32 sets d[i] = gy[i]·s·(1 + x·(1-s)) with s = sigmoid(x),
// x = a[i].
func siluGradVec32(d, a, gy []float32) {
	if useSIMD {
		siluGradVec32SIMD(d, a, gy)
		return
	}
	siluGradVec32Go(d, a, gy)
}

// tanhVec32 sets d[i] = tanh a[i].
func tanhVec32(d, a []float32) {
	if useSIMD {
		tanhVec32SIMD(d, a)
		return
	}
	tanhVec32Go(d, a)
}

const expShifter = 0x1.8p52

// expVec32Go sets d[i] = e^a[i].
func expVec32Go(d, a []float32) {
	a = a[:len(d)]
	for i := range d {
		x := min(max(float64(a[i]), -120), 89)
		e := expReduced(x)
		d[i] = float32(e)
	}
}

// expSubVec32Go sets d[i] = e^(x[i]-m) and returns Σ d[i] in float64. d may
// be x; m >= max x.
func expSubVec32Go(d, x []float32, m float32) float64 {
	x = x[:len(d)]
	mf := float64(m)
	s := 0.0
	for i := range d {
		y := max(float64(x[i])-mf, -120)
		e := expReduced(y)
		d[i] = float32(e)
		s += e
	}
	return s
}

// sumExpSub32Go returns Σ e^(x[i]-m) in float64 (m >= max x).
func sumExpSub32Go(x []float32, m float32) float64 {
	mf := float64(m)
	s := 0.0
	for _, v := range x {
		y := max(float64(v)-mf, -120)
		e := expReduced(y)
		s += e
	}
	return s
}

// geluVec32Go sets d[i] = a[i]·Φ(a[i]) = a/2·erfc(-a/√2). It works in
// blocks of two passes — the rational part, then the exponential — so that
// each loop body is short and the processor overlaps many elements.
func geluVec32Go(d, a []float32) {
	a = a[:len(d)]
	var tb, eb [blk]float64
	for s := 0; s < len(d); s += blk {
		ds, as := d[s:min(s+blk, len(d))], a[s:min(s+blk, len(d))]
		erfcPass1(as, &tb, &eb)
		for i := range ds {
			ea := eb[i]
			e := expReduced(ea)
			x := max(float64(as[i]), -40) // -Inf gives 0, not -Inf·0
			c := tb[i] * e
			if x > 0 {
				c = 2 - c
			}
			ds[i] = float32(0.5 * x * c)
		}
	}
}

// erfcPass1 sets tb[i] = t and eb[i] = the exponent of erfc(|a[i]|/√2) =
// t·e^eb[i] (Numerical Recipes' erfcc, relative error < 1.2e-7).
func erfcPass1(a []float32, tb, eb *[blk]float64) {
	a = a[:min(len(a), blk)]
	for i, v := range a {
		z := math.Abs(float64(v)) * invSqrt2
		t := 1 / (1 + 0.5*z)
		t2 := t * t
		t4 := t2 * t2
		q := (-1.26551223 + t*1.00002368) + t2*(0.37409196+t*0.09678418) +
			t4*((-0.18628806+t*0.27886807)+t2*(-1.13520398+t*1.48851587)) + t4*t4*(-0.82215223+t*0.17087277)
		tb[i] = t
		eb[i] = max(q-z*z, -700)
	}
}

// geluGradVec32Go sets d[i] = gy[i]·(Φ(x) + x·φ(x)) with x = a[i].
func geluGradVec32Go(d, a, gy []float32) {
	a, gy = a[:len(d)], gy[:len(d)]
	var tb, eb [blk]float64
	for s := 0; s < len(d); s += blk {
		ds, as, gs := d[s:min(s+blk, len(d))], a[s:min(s+blk, len(d))], gy[s:min(s+blk, len(d))]
		erfcPass1(as, &tb, &eb)
		for i := range ds {
			ea := eb[i]
			e := expReduced(ea)
			x := min(max(float64(as[i]), -40), 40) // x·φ(x) is 0 beyond, also at ±Inf
			c := tb[i] * e
			if x > 0 {
				c = 2 - c
			}
			g := max(-0.5*x*x, -700)
			f := expReduced(g)
			ds[i] = float32(float64(gs[i]) * (0.5*c + x*invSqrt2Pi*f))
		}
	}
}

// sigmoidVec32Go sets d[i] = 1/(1+e^-a[i]).
func sigmoidVec32Go(d, a []float32) {
	a = a[:len(d)]
	for i := range d {
		y := min(max(-float64(a[i]), -120), 120)
		e := expReduced(y)
		d[i] = float32(1 / (1 + e))
	}
}

// siluVec32Go sets d[i] = a[i]·sigmoid(a[i]).
func siluVec32Go(d, a []float32) {
	a = a[:len(d)]
	for i := range d {
		x := max(float64(a[i]), -200) // -Inf gives -0, not -Inf
		y := min(max(-x, -120), 120)
		e := expReduced(y)
		d[i] = float32(x / (1 + e))
	}
}

// siluGradVec32Go sets d[i] = gy[i]·s·(1 + x·(1-s)) with s = sigmoid(x),
// x = a[i].
func siluGradVec32Go(d, a, gy []float32) {
	a, gy = a[:len(d)], gy[:len(d)]
	for i := range d {
		x := min(max(float64(a[i]), -200), 200) // ±Inf give 0 and gy, not NaN
		y := min(max(-x, -120), 120)
		e := expReduced(y)
		s := 1 / (1 + e)
		d[i] = float32(float64(gy[i]) * s * (1 + x*(1-s)))
	}
}

// tanhVec32Go sets d[i] = tanh a[i].
func tanhVec32Go(d, a []float32) {
	a = a[:len(d)]
	for i := range d {
		x := float64(a[i])
		if math.Abs(x) < 0.004 {
			x2 := x * x
			d[i] = float32(x * (1 - x2*(1.0/3-x2*(2.0/15))))
			continue
		}
		y := min(max(2*x, -60), 60)
		e := expReduced(y)
		d[i] = float32(1 - 2/(e+1))
	}
}
