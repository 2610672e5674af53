package tensor

import (
	"math"
	"unsafe"
)

// Transcendental functions of the kernels. Float64 uses package math.
// Float32 uses the fast functions below, evaluated in float64 arithmetic so
// that their error stays below float32 resolution: exp64fast has a relative
// error under 1e-8 (the degree-7 remainder), erfc32 under 1.2e-7 (tested
// against math.Erf/Exp in mathf_test.go).

const (
	invSqrt2   = 0.70710678118654752440 // 1/√2
	invSqrt2Pi = 0.39894228040143267794 // 1/√(2π)
	log2e      = 1.44269504088896340736
	ln2Hi      = 6.93147180369123816490e-01
	ln2Lo      = 1.90821492927058770002e-10
)

// is32 reports whether T is float32 (a constant per instantiation).
func is32[T float]() bool {
	var z T
	return unsafe.Sizeof(z) == 4
}

// exp64fast returns e^x: expReduced for |x| <= 708, saturating to 0 or +Inf
// outside that range (where the exponent bits would wrap).
func exp64fast(x float64) float64 {
	if x < -708 {
		return 0
	}
	if x > 708 {
		return math.Inf(1)
	}
	return expReduced(x)
}

// expReduced returns e^x for -708 <= x <= 708 with relative error below
// 1e-8 (7.0e-9 measured), without range checks (callers clamp x):
// x = n·ln2 + r with |r| <= ln2/2, e^r by a degree-7 Taylor polynomial
// evaluated with Estrin's scheme (short dependency chains), times 2^n built
// from exponent bits. It is small enough to inline into the vector loops.
func expReduced(x float64) float64 {
	n := (x*log2e + expShifter) - expShifter
	r := (x - n*ln2Hi) - n*ln2Lo
	r2 := r * r
	p := (1 + r) + r2*(1.0/2+r*(1.0/6)) + r2*r2*((1.0/24+r*(1.0/120))+r2*(1.0/720+r*(1.0/5040)))
	return p * math.Float64frombits(uint64(int64(n)+1023)<<52)
}

// erfc32 returns erfc(x) with relative error below 1.2e-7 (the Chebyshev
// fit of Numerical Recipes, erfcc), in float64 arithmetic.
func erfc32(x float64) float64 {
	z := math.Abs(x)
	if z > 10 {
		if x > 0 {
			return 0
		}
		return 2
	}
	t := 1 / (1 + 0.5*z)
	t2 := t * t
	t4 := t2 * t2
	t8 := t4 * t4
	q := (-1.26551223 + t*1.00002368) + t2*(0.37409196+t*0.09678418) +
		t4*((-0.18628806+t*0.27886807)+t2*(-1.13520398+t*1.48851587)) + t8*(-0.82215223+t*0.17087277)
	ans := t * exp64fast(q-z*z)
	if x >= 0 {
		return ans
	}
	return 2 - ans
}

func expVec[T float](d, a []T) {
	if is32[T]() {
		expVec32(f32s(d), f32s(a))
		return
	}
	a = a[:len(d)]
	for i := range d {
		d[i] = T(math.Exp(float64(a[i])))
	}
}

func tanhT[T float](x T) T {
	if is32[T]() {
		xf := float64(x)
		if math.Abs(xf) < 0.004 {
			x2 := xf * xf
			return T(xf * (1 - x2*(1.0/3-x2*(2.0/15))))
		}
		if xf > 20 {
			return 1
		}
		if xf < -20 {
			return -1
		}
		return T(1 - 2/(exp64fast(2*xf)+1))
	}
	return T(math.Tanh(float64(x)))
}

func sigmoidT[T float](x T) T {
	if is32[T]() {
		xf := float64(x)
		if xf < -700 {
			return 0
		}
		return T(1 / (1 + exp64fast(-max(xf, -700))))
	}
	if x >= 0 {
		return T(1 / (1 + math.Exp(-float64(x))))
	}
	e := math.Exp(float64(x))
	return T(e / (1 + e))
}

// geluT is x·Φ(x) = x/2·erfc(-x/√2) with the exact error function.
func geluT[T float](x T) T {
	xf := float64(x)
	if is32[T]() {
		return T(0.5 * xf * erfc32(-xf*invSqrt2))
	}
	return T(0.5 * xf * math.Erfc(-xf*invSqrt2))
}

// geluGradT is d/dx x·Φ(x) = Φ(x) + x·φ(x).
func geluGradT[T float](x T) T {
	xf := float64(x)
	if is32[T]() {
		if math.Abs(xf) > 40 {
			if xf > 0 {
				return 1
			}
			return 0
		}
		return T(0.5*erfc32(-xf*invSqrt2) + xf*invSqrt2Pi*exp64fast(-0.5*xf*xf))
	}
	return T(0.5*math.Erfc(-xf*invSqrt2) + xf*invSqrt2Pi*math.Exp(-0.5*xf*xf))
}
