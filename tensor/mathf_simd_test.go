package tensor

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
)

// vecImpl is one implementation of the float32 vector kernels of
// mathf_vec.go: the portable Go code, or the assembly.
type vecImpl struct {
	name                           string
	simd                           bool
	exp, sigmoid, silu, tanh, gelu func(d, a []float32)
	geluGrad, siluGrad             func(d, a, gy []float32)
	expSub                         func(d, x []float32, m float32) float64
	sumExpSub                      func(x []float32, m float32) float64
	unary                          map[string]func(d, a []float32) // by kernel name, incl. expSub with m = 0
	binary                         map[string]func(d, a, gy []float32)
}

func newVecImpl(name string, simd bool) *vecImpl {
	v := &vecImpl{name: name, simd: simd}
	if simd {
		v.exp, v.sigmoid, v.silu, v.tanh, v.gelu = expVec32SIMD, sigmoidVec32SIMD, siluVec32SIMD, tanhVec32SIMD, geluVec32SIMD
		v.geluGrad, v.siluGrad = geluGradVec32SIMD, siluGradVec32SIMD
		v.expSub, v.sumExpSub = expSubVec32SIMD, sumExpSub32SIMD
	} else {
		v.exp, v.sigmoid, v.silu, v.tanh, v.gelu = expVec32Go, sigmoidVec32Go, siluVec32Go, tanhVec32Go, geluVec32Go
		v.geluGrad, v.siluGrad = geluGradVec32Go, siluGradVec32Go
		v.expSub, v.sumExpSub = expSubVec32Go, sumExpSub32Go
	}
	v.unary = map[string]func(d, a []float32){
		"exp": v.exp, "sigmoid": v.sigmoid, "silu": v.silu, "tanh": v.tanh, "gelu": v.gelu,
		"expSub": func(d, a []float32) { v.expSub(d, a, 0) },
	}
	v.binary = map[string]func(d, a, gy []float32){"geluGrad": v.geluGrad, "siluGrad": v.siluGrad}
	return v
}

// vecImpls returns the implementations this machine can run.
func vecImpls(t testing.TB) []*vecImpl {
	impls := []*vecImpl{newVecImpl("go", false)}
	if cpuHasSIMD {
		impls = append(impls, newVecImpl("avx2", true))
	} else {
		t.Logf("SIMD kernels not available (built: %v): testing the Go kernels only", simdBuilt)
	}
	return impls
}

// Float64 references.

func refGELU(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

func refGELUGrad(x float64) float64 {
	return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
}

func refSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func refSiLU(x float64) float64 { return x / (1 + math.Exp(-x)) }

func refSiLUGrad(x float64) float64 {
	if x < -800 {
		return 0
	}
	e := math.Exp(-x)
	s := 1 / (1 + e)
	oms := e * s // 1 - s without cancellation
	if x < 0 {
		oms = 1 - s
	}
	return s * (1 + x*oms)
}

var unaryRefs = map[string]func(float64) float64{
	"exp": math.Exp, "sigmoid": refSigmoid, "silu": refSiLU, "tanh": math.Tanh, "gelu": refGELU,
	"expSub": math.Exp,
}

var binaryRefs = map[string]func(float64) float64{"geluGrad": refGELUGrad, "siluGrad": refSiLUGrad}

// errScaled is |got-want| / max(1, |want|): absolute below 1, relative
// above.
func errScaled(got float32, want float64) float64 {
	return math.Abs(float64(got)-want) / max(1, math.Abs(want))
}

// grid returns n evenly spaced float32 values on [lo, hi].
func grid(lo, hi float64, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(lo + (hi-lo)*float64(i)/float64(n-1))
	}
	return x
}

// logGrid returns ±10^k for k on an even grid of n points over [lo, hi]
// (both signs, 2n values).
func logGrid(lo, hi float64, n int) []float32 {
	var x []float32
	for i := range n {
		v := float32(math.Pow(10, lo+(hi-lo)*float64(i)/float64(n-1)))
		x = append(x, v, -v)
	}
	return x
}

// TestVecKernelAccuracy compares every kernel of each implementation with
// a float64 reference on dense grids and asserts the error bounds promised
// in mathf_vec.go / mathf_amd64.s.
func TestVecKernelAccuracy(t *testing.T) {
	// Each bound is on errScaled; GELU's and GELUGrad's are absolute where
	// |value| <= 1. tanh/sigmoid/SiLU: about 2 float32 ulps of 1.
	tol := map[string]float64{
		"gelu": 3e-7, "geluGrad": 5e-7, "sigmoid": 1.5e-7, "silu": 2.5e-7, "siluGrad": 3e-7, "tanh": 1e-7,
	}
	dense := grid(-20, 20, 1<<20)
	dense = append(dense, logGrid(-3, 9, 4000)...)
	dense = append(dense, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-40, -1e-40, 37, -37, 37.7, -37.7,
		40, -40, 1e6, -1e6, 1e30, -1e30, math.MaxFloat32, -math.MaxFloat32, 14.45, -14.45, 9.5, -9.5)
	ones := make([]float32, len(dense))
	for i := range ones {
		ones[i] = 1
	}
	d := make([]float32, len(dense))
	for _, im := range vecImpls(t) {
		for _, name := range []string{"gelu", "sigmoid", "silu", "tanh"} {
			im.unary[name](d, dense)
			checkGrid(t, im.name, name, dense, d, unaryRefs[name], tol[name])
		}
		for _, name := range []string{"geluGrad", "siluGrad"} {
			im.binary[name](d, dense, ones)
			checkGrid(t, im.name, name, dense, d, binaryRefs[name], tol[name])
		}
	}
}

func checkGrid(t *testing.T, impl, name string, x, got []float32, ref func(float64) float64, tol float64) {
	t.Helper()
	worst, at := 0.0, float32(0)
	for i, v := range x {
		g := got[i]
		if g != g || math.IsInf(float64(g), 0) {
			t.Errorf("%s %s(%v) = %v", impl, name, v, g)
			continue
		}
		if e := errScaled(g, ref(float64(v))); e > worst {
			worst, at = e, v
		}
	}
	if worst > tol {
		t.Errorf("%s %s: error %.3g at x=%v > %.3g", impl, name, worst, at, tol)
	} else {
		t.Logf("%s %-8s error %.3g (at x=%v; bound %.3g)", impl, name, worst, at, tol)
	}
}

// TestVecExp checks exp: relative error <= 2e-7 on [-87, 88], one
// subnormal ulp down to -104, 0 below, +Inf above 88.7228, NaN passes.
func TestVecExp(t *testing.T) {
	x := grid(-87, 88, 1<<20)
	r := NewRNG(62)
	for range 1 << 16 {
		x = append(x, float32((r.Uniform()*2-1)*5))
	}
	d := make([]float32, len(x))
	sub := grid(-104, -87, 1<<16)
	ds := make([]float32, len(sub))
	for _, im := range vecImpls(t) {
		im.exp(d, x)
		worst, at := 0.0, float32(0)
		for i, v := range x {
			want := math.Exp(float64(v))
			if e := math.Abs(float64(d[i])-want) / want; e > worst {
				worst, at = e, v
			}
		}
		if worst > 2e-7 {
			t.Errorf("%s exp: relative error %.3g at x=%v > 2e-7", im.name, worst, at)
		} else {
			t.Logf("%s exp relative error %.3g at x=%v", im.name, worst, at)
		}
		im.exp(ds, sub)
		for i, v := range sub {
			if e := math.Abs(float64(ds[i]) - math.Exp(float64(v))); e > 0x1p-149 {
				t.Errorf("%s exp(%v) = %g, want %g", im.name, v, ds[i], math.Exp(float64(v)))
				break
			}
		}
		specials := []struct{ x, want float32 }{
			{0, 1}, {float32(math.Copysign(0, -1)), 1}, {1, float32(math.E)},
			{-104, 0}, {-110, 0}, {-1e30, 0}, {float32(math.Inf(-1)), 0},
			{88.73, float32(math.Inf(1))}, {89, float32(math.Inf(1))}, {1e30, float32(math.Inf(1))},
			{float32(math.Inf(1)), float32(math.Inf(1))},
			{88.72283, float32(math.Exp(float64(float32(88.72283))))},
		}
		for _, c := range specials {
			out := []float32{0}
			im.exp(out, []float32{c.x})
			if out[0] != c.want && math.Abs(float64(out[0]-c.want)) > 2e-7*math.Abs(float64(c.want)) {
				t.Errorf("%s exp(%v) = %v, want %v", im.name, c.x, out[0], c.want)
			}
		}
	}
}

// TestVecErfc checks the relative accuracy of erfc through GELU at x < 0,
// where x·Φ(x) = x/2·erfc(|x|/√2), down to results of magnitude 1e-36
// (x ≈ -12.7); further out the SIMD kernels flush their denormal
// intermediates to zero (FTZON), so there they are only within 1e-36 of
// the reference.
func TestVecErfc(t *testing.T) {
	x := grid(-13, -1e-3, 1<<20)
	d := make([]float32, len(x))
	for _, im := range vecImpls(t) {
		im.gelu(d, x)
		worst, at := 0.0, float32(0)
		for i, v := range x {
			want := refGELU(float64(v))
			if e := math.Abs(float64(d[i])-want) / -want; e > worst && want < -1e-36 {
				worst, at = e, v
			}
			if math.Abs(float64(d[i])-want) > max(1e-36, 1e-6*-want) {
				t.Fatalf("%s GELU(%v) = %v, want %v", im.name, v, d[i], want)
			}
		}
		// The erfc of the SIMD code is accurate to 2e-8 in exact
		// arithmetic; float32 evaluation adds up to ~3 ulps.
		if worst > 5e-7 {
			t.Errorf("%s erfc (GELU at x < 0): relative error %.3g at x=%v > 5e-7", im.name, worst, at)
		} else {
			t.Logf("%s erfc relative error %.3g at x=%v", im.name, worst, at)
		}
	}
}

// TestVecSpecialValues checks ±0, ±Inf, NaN and huge arguments, and that
// no finite input gives NaN or ±Inf (except where the exact value
// overflows) on a log grid 1e-3..1e9 of both signs.
func TestVecSpecialValues(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negz := float32(math.Copysign(0, -1))
	type sv struct{ x, want float32 }
	cases := map[string][]sv{
		"gelu":     {{0, 0}, {negz, negz}, {inf, inf}, {-inf, 0}, {1e30, 1e30}, {-1e30, 0}, {40, 40}, {-40, 0}, {37.7, 37.7}, {-37.7, 0}},
		"geluGrad": {{0, 0.5}, {inf, 1}, {-inf, 0}, {1e30, 1}, {-1e30, 0}, {40, 1}, {-40, 0}, {37.7, 1}, {-37.7, 0}},
		"sigmoid":  {{0, 0.5}, {inf, 1}, {-inf, 0}, {1e30, 1}, {-1e30, 0}, {200, 1}, {-200, 0}},
		"silu":     {{0, 0}, {inf, inf}, {-inf, 0}, {1e30, 1e30}, {-1e30, 0}, {200, 200}, {-200, 0}},
		"siluGrad": {{0, 0.5}, {inf, 1}, {-inf, 0}, {1e30, 1}, {-1e30, 0}, {200, 1}, {-200, 0}},
		"tanh":     {{0, 0}, {negz, negz}, {inf, 1}, {-inf, -1}, {1e30, 1}, {-1e30, -1}, {10, 1}, {-10, -1}, {1e-30, 1e-30}, {-1e-40, -1e-40}},
	}
	scan := logGrid(-3, 9, 2000)
	out := make([]float32, len(scan))
	ones := make([]float32, len(scan))
	for i := range ones {
		ones[i] = 1
	}
	for _, im := range vecImpls(t) {
		for name, cs := range cases {
			for _, c := range cs {
				got := runOne(im, name, c.x)
				if got != c.want || math.Signbit(float64(got)) != math.Signbit(float64(c.want)) && c.x == 0 {
					t.Errorf("%s %s(%v) = %v, want %v", im.name, name, c.x, got, c.want)
				}
			}
			if got := runOne(im, name, nan); got == got {
				t.Errorf("%s %s(NaN) = %v, want NaN", im.name, name, got)
			}
			if f, ok := im.unary[name]; ok {
				f(out, scan)
			} else {
				im.binary[name](out, scan, ones)
			}
			for i, v := range out {
				big := (name == "gelu" || name == "silu") && scan[i] > 0
				if v != v || math.IsInf(float64(v), 0) && !big {
					t.Errorf("%s %s(%v) = %v", im.name, name, scan[i], v)
				}
			}
		}
		if got := runOne(im, "exp", nan); got == got {
			t.Errorf("%s exp(NaN) = %v", im.name, got)
		}
	}
}

func runOne(im *vecImpl, name string, x float32) float32 {
	out := []float32{42}
	if f, ok := im.unary[name]; ok {
		f(out, []float32{x})
	} else {
		im.binary[name](out, []float32{x}, []float32{1})
	}
	return out[0]
}

// TestVecTails runs every kernel on lengths 0..17 at offsets 0..3 (so
// unaligned), in and out of place, and checks that the results equal those
// of one long call (the tail takes the same path as the body), that
// nothing outside the slice is written, and that the Go and SIMD results
// agree.
func TestVecTails(t *testing.T) {
	const pad = 8
	r := NewRNG(63)
	src, gsrc := make([]float32, 64), make([]float32, 64)
	for i := range src {
		src[i] = float32((r.Uniform()*2 - 1) * 6)
		gsrc[i] = float32(r.Uniform()*2 - 1)
	}
	impls := vecImpls(t)
	for _, im := range impls {
		names := append(slices.Sorted(maps.Keys(im.unary)), slices.Sorted(maps.Keys(im.binary))...)
		for _, name := range names {
			// Reference: one call over the whole of src.
			full := make([]float32, len(src))
			im.call(name, full, src, gsrc)
			for n := range 18 {
				for off := range 4 {
					for _, inPlace := range []bool{false, true} {
						buf := make([]float32, n+2*pad)
						for i := range buf {
							buf[i] = -7777
						}
						a := make([]float32, n+off)
						copy(a[off:], src[off:off+n])
						gy := gsrc[off : off+n]
						d := buf[pad : pad+n]
						in := a[off : off+n]
						if inPlace {
							copy(d, in)
							in = d
						}
						im.call(name, d, in, gy)
						for i := range n {
							if d[i] != full[off+i] && !(d[i] != d[i] && full[off+i] != full[off+i]) {
								t.Fatalf("%s %s n=%d off=%d inPlace=%v: [%d] = %v, want %v", im.name, name, n, off, inPlace, i, d[i], full[off+i])
							}
						}
						for i := range pad {
							if buf[i] != -7777 || buf[pad+n+i] != -7777 {
								t.Fatalf("%s %s n=%d off=%d: wrote outside the slice", im.name, name, n, off)
							}
						}
					}
				}
			}
		}
	}
	if len(impls) == 2 {
		for _, name := range []string{"exp", "expSub", "sigmoid", "silu", "tanh", "gelu", "geluGrad", "siluGrad"} {
			a, b := make([]float32, len(src)), make([]float32, len(src))
			impls[0].call(name, a, src, gsrc)
			impls[1].call(name, b, src, gsrc)
			for i := range a {
				if errScaled(a[i], float64(b[i])) > 5e-7 {
					t.Errorf("%s(%v): go %v, avx2 %v", name, src[i], a[i], b[i])
				}
			}
		}
	}
}

func (im *vecImpl) call(name string, d, a, gy []float32) {
	if f, ok := im.unary[name]; ok {
		f(d, a)
		return
	}
	im.binary[name](d, a, gy)
}

// TestVecExpSub checks e^(x-m) and its float64 sum (softmax's inner loop),
// including -Inf (masked) entries, every tail length, and the sum-only
// form.
func TestVecExpSub(t *testing.T) {
	r := NewRNG(64)
	for _, im := range vecImpls(t) {
		for _, n := range []int{0, 1, 5, 7, 8, 9, 15, 16, 17, 100, 1003} {
			x := make([]float32, n)
			m := float32(math.Inf(-1))
			for i := range x {
				x[i] = float32((r.Uniform()*2 - 1) * 30)
				if i%5 == 3 {
					x[i] = float32(math.Inf(-1))
				}
				m = max(m, x[i])
			}
			if n == 0 {
				m = 0
			}
			d := make([]float32, n)
			s := im.expSub(d, x, m)
			want := 0.0
			for i, v := range x {
				// The Go code subtracts in float64, the SIMD code in
				// float32 (x-m rounds like x itself, as in PyTorch).
				w := math.Exp(float64(v) - float64(m))
				if im.simd {
					w = math.Exp(float64(v - m))
				}
				want += w
				if e := math.Abs(float64(d[i]) - w); e > 2e-7*w {
					t.Errorf("%s expSub n=%d: e^(%v-%v) = %v, want %v", im.name, n, v, m, d[i], w)
				}
			}
			if math.Abs(s-want) > 2e-7*want {
				t.Errorf("%s expSub n=%d: sum %v, want %v", im.name, n, s, want)
			}
			if s2 := im.sumExpSub(x, m); math.Abs(s2-s) > 1e-12*s {
				t.Errorf("%s sumExpSub n=%d: %v, expSub's sum %v", im.name, n, s2, s)
			}
		}
		nan := []float32{1, float32(math.NaN()), 2}
		if s := im.sumExpSub(nan, 2); s == s {
			t.Errorf("%s sumExpSub with a NaN = %v", im.name, s)
		}
	}
}

// TestVecDispatch checks that the dispatchers use the SIMD kernels exactly
// when the CPU has them (and LGFLOW_MATHF is not "go").
func TestVecDispatch(t *testing.T) {
	t.Logf("cpuHasSIMD=%v useSIMD=%v", cpuHasSIMD, useSIMD)
	if useSIMD && !cpuHasSIMD {
		t.Fatal("useSIMD without CPU support")
	}
	x := grid(-5, 5, 1001)
	got, want := make([]float32, len(x)), make([]float32, len(x))
	geluVec32(got, x)
	if useSIMD {
		geluVec32SIMD(want, x)
	} else {
		geluVec32Go(want, x)
	}
	if !slices.Equal(got, want) {
		t.Error("geluVec32 does not dispatch to the selected implementation")
	}
}

// BenchmarkVecKernels times each kernel on 1M float32 elements (one
// thread), for the Go and (where available) the AVX2 implementation (and
// the AVX-512 form of the GELU kernels), and
// reports ns/elem; the AVX2 runs also report speedup, the ratio to the Go
// time measured in the same run.
func BenchmarkVecKernels(b *testing.B) {
	const n = 1 << 20
	r := NewRNG(65)
	x, gy, d := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(r.Normal() * 2)
		gy[i] = float32(r.Normal())
	}
	goNs := map[string]float64{}
	impls := vecImpls(b)
	if cpuHasAVX512 {
		// The GELU kernels also have AVX-512 forms: "avx2" runs the AVX2
		// forms, "avx512" the AVX-512 ones.
		impls = append(impls, newVecImpl("avx512", true))
	}
	defer func(u bool) { useAVX512 = u }(useAVX512)
	for _, name := range []string{"gelu", "geluGrad", "exp", "sigmoid", "silu", "siluGrad", "tanh", "expSub"} {
		for _, im := range impls {
			if im.name == "avx512" && name != "gelu" && name != "geluGrad" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", name, im.name), func(b *testing.B) {
				useAVX512 = im.name == "avx512"
				b.SetBytes(4 * n)
				for b.Loop() {
					im.call(name, d, x, gy)
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / n
				b.ReportMetric(ns, "ns/elem")
				if im.simd {
					if g := goNs[name]; g > 0 {
						b.ReportMetric(g/ns, "speedup")
					}
				} else {
					goNs[name] = ns
				}
			})
		}
	}
}
