package gemm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// bf16AtStart is whether the bf16 path was on when the tests started
// (LGFLOW_GEMM_BF16=1); TestMain then switches it off, since the other
// tests check the float32 path through Sgemm at float32 tolerances, and
// the bf16 tests choose the bf16 kernel themselves.
var bf16AtStart bool

func TestMain(m *testing.M) {
	bf16AtStart = BF16()
	SetBF16(false)
	os.Exit(m.Run())
}

// skipNoBF16 skips a test that runs the bf16 kernel where the CPU or build
// cannot.
func skipNoBF16(t testing.TB) {
	t.Helper()
	if !hasBF16 {
		t.Skip("the CPU lacks AVX512_BF16 (or AVX-512F/BW), or the build has no assembly")
	}
}

// bf16Round returns the bf16 of x as VCVTNE2PS2BF16 rounds it: to nearest
// even; zeros and denormals become zeros of their sign, NaNs quiet NaNs.
func bf16Round(x float32) uint16 {
	b := math.Float32bits(x)
	switch {
	case b&0x7f800000 == 0:
		return uint16(b>>16) & 0x8000
	case b&0x7fffffff > 0x7f800000:
		return uint16(b>>16) | 0x40
	case b&0x7fffffff == 0x7f800000:
		return uint16(b >> 16)
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// bf16Value returns the float32 value of a bf16.
func bf16Value(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// roundBF16 returns x rounded to bf16, as a float32.
func roundBF16(x float32) float32 { return bf16Value(bf16Round(x)) }

// ftz flushes a denormal result to zero, as VDPBF16PS does.
func ftz(x float32) float32 {
	if math.Float32bits(x)&0x7f800000 == 0 {
		return 0 * x
	}
	return x
}

// dpStep is VDPBF16PS on one lane: the product of the odd (high) words,
// then that of the even (low) words, each added to acc with one rounding
// (the products of two bf16 are exact in float32).
func dpStep(acc, a0, a1, b0, b1 float32) float32 {
	acc = ftz(acc + a1*b1)
	return ftz(acc + a0*b0)
}

// emulateBF16 computes what the bf16 path computes, as scalar Go: op(A)
// and op(B) rounded to bf16, each k block of the kernel (kc, in pairs,
// the last one padded with zero) accumulated from zero with dpStep, and
// the blocks and k slices (kSlices) merged into C as the driver does. beta
// must be 0 or 1 (where the kernel's fused beta*C + acc and the edge
// tiles' separately rounded products agree); bias, if not nil, replaces
// beta*C.
func emulateBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, bias, c []float32, ldc int) {
	kc := sBF16kc()
	// op(A) by rows and op(B) by columns, rounded, zero-padded to an even k.
	kp := k + k%2
	ar, bc := make([]float32, m*kp), make([]float32, n*kp)
	for p := range k {
		for i := range m {
			if transA {
				ar[i*kp+p] = roundBF16(a[p*lda+i])
			} else {
				ar[i*kp+p] = roundBF16(a[i*lda+p])
			}
		}
		for j := range n {
			if transB {
				bc[j*kp+p] = roundBF16(b[j*ldb+p])
			} else {
				bc[j*kp+p] = roundBF16(b[p*ldb+j])
			}
		}
	}
	block := func(i, j, pc, kcur int) float32 {
		x, y := ar[i*kp+pc:i*kp+pc+kcur+kcur%2], bc[j*kp+pc:j*kp+pc+kcur+kcur%2]
		var acc float32
		for p := 0; p < len(x); p += 2 {
			acc = dpStep(acc, x[p], x[p+1], y[p], y[p+1])
		}
		return acc
	}
	nb := ceilDiv(k, kc)
	slices := kSlices(&kernel[float32]{kc: kc}, m, n, k)
	for i := range m {
		for j := range n {
			var sum float32 // slice 0, into C
			for s := range slices {
				k0, k1 := s*nb/slices*kc, min(k, (s+1)*nb/slices*kc)
				var part float32
				for pc := k0; pc < k1; pc += kc {
					v := float32(alpha * block(i, j, pc, min(kc, k1-pc)))
					switch {
					case pc > k0:
						part += v
					case s > 0 || beta == 0 && bias == nil:
						part = v
					case bias != nil:
						part = v + bias[j]
					default:
						part = v + c[i*ldc+j] // beta == 1
					}
				}
				if s == 0 {
					sum = part
				} else {
					sum += part
				}
			}
			c[i*ldc+j] = sum
		}
	}
}

// sBF16kc is the bf16 kernel's depth kc.
func sBF16kc() int { return sBF16.kc }

func sameBits(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || math.IsNaN(float64(x)) && math.IsNaN(float64(y))
}

// TestBF16Pairs checks the conversion of packed panels against bf16Round
// on special values (ties, denormals, infinities, NaNs, overflow), panel
// widths with and without a partial chunk of 16, odd depths, and several
// panels converted in place at once.
func TestBF16Pairs(t *testing.T) {
	skipNoBF16(t)
	rng := rand.New(rand.NewPCG(41, 42))
	specials := []float32{
		0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, -math.MaxFloat32,
		math.Float32frombits(0x3f808000), // a tie: 1 + 2^-8, rounds down to even
		math.Float32frombits(0x3f818000), // a tie rounding up to even
		math.Float32frombits(0x3f808001), // just past a tie
		math.Float32frombits(0x7f7fffff), // rounds to +Inf
		math.Float32frombits(0x00000001), // denormals: zero
		math.Float32frombits(0x807fffff),
		math.Float32frombits(0x00800000), // the least normal
		float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0x7f800001), // quiet and signalling NaNs
		math.Float32frombits(0xffbfffff),
	}
	for _, w := range []int{1, 5, 12, 16, 17, 32, 33, 48} {
		for _, kc := range []int{1, 2, 3, 7, 8, 256} {
			for _, panels := range []int{1, 3} {
				src := make([]float32, w*kc*panels+17)
				for i := range src {
					if rng.IntN(4) == 0 {
						src[i] = specials[rng.IntN(len(specials))]
					} else {
						src[i] = math.Float32frombits(rng.Uint32())
					}
				}
				p := append([]float32(nil), src...)
				pairsBF16(p[:w*kc*panels], w, kc, panels)
				for r := range panels {
					in := src[r*w*kc:]
					out := unsafe.Slice((*uint32)(unsafe.Pointer(&p[r*w*kc])), w*kc)
					for q := range ceilDiv(kc, 2) {
						for i := range w {
							lo := bf16Round(in[2*q*w+i])
							hi := uint16(0)
							if 2*q+1 < kc {
								hi = bf16Round(in[(2*q+1)*w+i])
							}
							if got, want := out[q*w+i], uint32(hi)<<16|uint32(lo); got != want {
								t.Fatalf("w=%d kc=%d panel %d: pair %d value %d = %#08x, want %#08x (from %#08x, %#08x)",
									w, kc, r, q, i, got, want, math.Float32bits(in[2*q*w+i]), math.Float32bits(in[min(2*q+1, kc-1)*w+i]))
							}
						}
					}
				}
				// The same panels made from rows at a stride (pairsFrom),
				// the values past each row NaN.
				for r := range panels {
					ld := w + 3
					rows := make([]float32, kc*ld)
					for pp := range kc {
						copy(rows[pp*ld:], src[r*w*kc+pp*w:r*w*kc+pp*w+w])
						for i := w; i < ld; i++ {
							rows[pp*ld+i] = float32(math.NaN())
						}
					}
					d := make([]float32, ceilDiv(kc, 2)*w+5)
					for i := range d {
						d[i] = -7
					}
					pairsFromBF16(d, rows, ld, w, kc)
					for i := range d {
						want := float32(-7)
						if i < ceilDiv(kc, 2)*w {
							want = p[r*w*kc+i]
						}
						if math.Float32bits(d[i]) != math.Float32bits(want) {
							t.Fatalf("w=%d kc=%d panel %d from rows at stride %d: dword %d = %#08x, want %#08x", w, kc, r, ld, i, math.Float32bits(d[i]), math.Float32bits(want))
						}
					}
				}
				// Past the panels, nothing is written.
				for i := w * kc * panels; i < len(p); i++ {
					if math.Float32bits(p[i]) != math.Float32bits(src[i]) {
						t.Fatalf("w=%d kc=%d panels=%d: element %d past the panels was written", w, kc, panels, i)
					}
				}
			}
		}
	}
}

// TestBF16Kernel checks the micro-kernel bit for bit against dpStep on
// random panels of every depth up to 20 (the unrolled loop and its tail,
// odd depths), with alpha and beta, and a bias.
func TestBF16Kernel(t *testing.T) {
	skipNoBF16(t)
	rng := rand.New(rand.NewPCG(43, 44))
	kn := sBF16
	mr, nr := kn.mr, kn.nr
	for kc := 0; kc <= 20; kc++ {
		for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {-1.5, 0.25}, {1, -1}} {
			for _, withBias := range []bool{false, true} {
				// Values of op(A) and op(B), already bf16, and their panels.
				av, bv := make([]float32, mr*kc), make([]float32, kc*nr)
				for i := range av {
					av[i] = roundBF16(float32(2*rng.Float64() - 1))
				}
				for i := range bv {
					bv[i] = roundBF16(float32(2*rng.Float64() - 1))
				}
				ap, bp := make([]float32, max(1, mr*kc)), make([]float32, max(1, kc*nr))
				for i := range mr {
					for p := range kc {
						ap[p*mr+i] = av[i*kc+p]
					}
				}
				copy(bp, bv)
				pairsBF16(ap, mr, kc, 1)
				pairsBF16(bp, nr, kc, 1)
				const ldc = 40
				c := make([]float32, mr*ldc)
				for i := range c {
					c[i] = float32(2*rng.Float64() - 1)
				}
				want := append([]float32(nil), c...)
				var bias []float32
				var biasp *float32
				if withBias {
					bias = randSlice32(nr, rng)
					biasp = &bias[0]
				}
				kn.fn(kc, &ap[0], &bp[0], &c[0], ldc, ab[0], ab[1], biasp)
				for i := range mr {
					for j := range nr {
						var acc float32
						for p := 0; p < kc; p += 2 {
							a1, b1 := float32(0), float32(0)
							if p+1 < kc {
								a1, b1 = av[i*kc+p+1], bv[(p+1)*nr+j]
							}
							acc = dpStep(acc, av[i*kc+p], a1, bv[p*nr+j], b1)
						}
						x := float32(ab[0] * acc)
						switch {
						case withBias:
							x += bias[j]
						case ab[1] != 0:
							x = float32(math.FMA(float64(want[i*ldc+j]), float64(ab[1]), float64(x))) // exact in float64, one rounding
						}
						if got := c[i*ldc+j]; !sameBits(got, x) {
							t.Fatalf("kc=%d alpha=%g beta=%g bias=%v: C[%d][%d] = %v, want %v", kc, ab[0], ab[1], withBias, i, j, got, x)
						}
					}
					for j := nr; j < ldc; j++ {
						if c[i*ldc+j] != want[i*ldc+j] {
							t.Fatalf("kc=%d: C[%d][%d] past the tile was written", kc, i, j)
						}
					}
				}
			}
		}
	}
}

// bf16Problems are the shapes of the bf16 conformance tests: edge tiles in
// both directions, odd depths, k past one and several blocks, more rows
// than mc, several nc blocks, k slices, and the linear layers' shapes.
func bf16Problems() []problem {
	shapes := [][3]int{
		{12, 32, 8}, {13, 33, 9}, {64, 64, 64}, {67, 31, 127}, {31, 67, 255},
		{100, 90, 257}, {367, 75, 300}, {725, 64, 129}, {64, 3100, 600},
		{20, 37, 8400}, {2048, 128, 384}, {128, 384, 4096},
	}
	var ps []problem
	for si, s := range shapes {
		for ti, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			pad := 0
			if (si+ti)%2 == 1 {
				pad = 3
			}
			ab := [][2]float64{{1, 0}, {0.5, 1}, {-0.75, 0.5}, {1, 1}}[(si+ti)%4]
			ps = append(ps, problem{tr[0], tr[1], s[0], s[1], s[2], ab[0], ab[1], pad, pad + 1, pad + 2})
		}
	}
	return ps
}

// TestSgemmBF16Exact checks the bf16 path, through the driver with one and
// two threads, bit for bit against emulateBF16 (beta 0 and 1, alpha a power
// of two or not).
func TestSgemmBF16Exact(t *testing.T) {
	skipNoBF16(t)
	rng := rand.New(rand.NewPCG(45, 46))
	for _, pr := range bf16Problems() {
		if pr.beta != 0 && pr.beta != 1 {
			pr.beta = 1
		}
		o := makeOperands(pr, rng)
		a, b := to32(o.a), to32(o.b)
		want := to32(o.c)
		emulateBF16(pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), nil, want, o.ldc)
		for _, threads := range []int{1, 2} {
			c := to32(o.c)
			callGemm(&sState, sBF16, pathBlocked, threads, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), c, o.ldc)
			for i := range pr.m {
				for j := range o.ldc {
					if g, w := c[i*o.ldc+j], want[i*o.ldc+j]; !sameBits(g, w) {
						t.Fatalf("%v, threads=%d: C[%d][%d] = %v, want %v", pr, threads, i, j, g, w)
					}
				}
			}
		}
	}
}

// TestSgemmBF16Bias checks SgemmBias on the bf16 path against emulateBF16.
func TestSgemmBF16Bias(t *testing.T) {
	skipNoBF16(t)
	defer SetBF16(BF16())
	if err := SetBF16(true); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(47, 48))
	for _, pr := range []problem{
		{false, true, 367, 75, 300, 1, 0, 0, 0, 3},
		{false, false, 2048, 96, 129, -0.5, 0, 1, 0, 0},
		{true, false, 40, 37, 9000, 1, 0, 0, 2, 0},
	} {
		o := makeOperands(pr, rng)
		a, b := to32(o.a), to32(o.b)
		bias := randSlice32(pr.n, rng)
		want, c := to32(o.c), to32(o.c)
		emulateBF16(pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, 0, bias, want, o.ldc)
		SgemmBias(pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, bias, c, o.ldc)
		for i := range c {
			if !sameBits(c[i], want[i]) {
				t.Fatalf("%v: C[%d] = %v, want %v", pr, i, c[i], want[i])
			}
		}
	}
}

// TestSgemmBF16Reference checks the bf16 path against the float64 product
// of the float32 operands (before rounding to bf16), with every alpha and
// beta of the float32 tests, within two bounds:
//
//   - per element, a bound that holds whatever the data: rounding each
//     operand to bf16 (8 significant bits, to nearest) changes it by a
//     factor 1+d with |d| <= u = 2^-8, a product by at most (2u+u^2) of
//     itself; the float32 sums and the alpha and beta products add the
//     float32 path's bound, 2(k+2)2^-24 (|alpha| sum|a||b| + |beta||c|);
//   - over all elements, the typical error: the rounding errors of the
//     operands are independent and about uniform, of variance at most
//     u^2/3 relative, so the error of a sum of k products has a standard
//     deviation of at most u sqrt(2/3) |alpha| sqrt(sum (ab)^2), about
//     2^-8 sqrt(k) times the size of one product. The root mean square of
//     the errors, each divided by |alpha| sqrt(sum (ab)^2), must be at most
//     2^-8 (it comes to about 0.8 2^-8).
func TestSgemmBF16Reference(t *testing.T) {
	skipNoBF16(t)
	rng := rand.New(rand.NewPCG(49, 50))
	var probs []problem
	for _, pr := range bf16Problems() {
		if work(pr.m, pr.n, pr.k) <= 1<<24 { // the larger ones: TestSgemmBF16Exact
			probs = append(probs, pr)
		}
	}
	for _, pr := range tableProblems() {
		if min(pr.m, pr.n, pr.k) >= 8 {
			probs = append(probs, pr)
		}
	}
	for _, pr := range probs {
		o := makeOperands(pr, rng)
		want, bound := reference(pr, o)
		a, b, c := to32(o.a), to32(o.b), to32(o.c)
		callGemm(&sState, sBF16, pathBlocked, 2, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), c, o.ldc)
		const u = 0x1p-8
		var sumSq float64
		var count int
		for i := range pr.m {
			for j := range o.ldc {
				idx := i*o.ldc + j
				g := float64(c[idx])
				if j >= pr.n {
					if !math.IsNaN(g) {
						t.Fatalf("%v: padding C[%d][%d] was written", pr, i, j)
					}
					continue
				}
				var sa, s2 float64
				for p := range pr.k {
					av, bv := o.at(pr, i, j, p)
					sa += math.Abs(av * bv)
					s2 += av * bv * av * bv
				}
				d := math.Abs(g - want[idx])
				if lim := bound[idx] + (2*u+u*u)*math.Abs(pr.alpha)*sa; !(d <= lim) {
					t.Fatalf("%v: C[%d][%d] = %.9g, want %.9g (|diff| %.3g > %.3g)", pr, i, j, g, want[idx], d, lim)
				}
				if pr.alpha != 0 && s2 > 0 {
					r := d / (math.Abs(pr.alpha) * math.Sqrt(s2))
					sumSq += r * r
					count++
				}
			}
		}
		if count >= 500 {
			if rms := math.Sqrt(sumSq / float64(count)); rms > u {
				t.Errorf("%v: relative RMS error %.3g 2^-8, want at most 2^-8", pr, rms/u)
			}
		}
	}
}

// TestBF16ThreadsBitwise checks that the bf16 path gives the same bits
// with one, two and three threads in each of the driver's orders.
func TestBF16ThreadsBitwise(t *testing.T) {
	skipNoBF16(t)
	rng := rand.New(rand.NewPCG(51, 52))
	for _, pr := range []problem{
		{false, true, 300, 200, 100, 1, 0, 0, 0, 0},
		{false, true, 700, 60, 600, 1, 0.5, 0, 1, 0},
		{false, false, 515, 200, 800, 1, 0.5, 1, 2, 3},
		{false, false, 300, 96, 1200, 1, 0, 0, 0, 0},
		{true, false, 128, 96, 18000, 1, 0, 0, 0, 0},
		{false, false, 64, 3100, 600, 1, 0, 0, 0, 0},
	} {
		o := makeOperands(pr, rng)
		a, b := to32(o.a), to32(o.b)
		var first []float32
		for _, threads := range []int{1, 2, 3} {
			c := to32(o.c)
			callGemm(&sState, sBF16, pathBlocked, threads, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), c, o.ldc)
			if first == nil {
				first = c
				continue
			}
			for i := range c {
				if !sameBits(c[i], first[i]) {
					t.Fatalf("%v: C[%d] = %v with %d threads, %v with one", pr, i, c[i], threads, first[i])
				}
			}
		}
	}
}

// TestSetBF16 checks the switch and the dispatch: off by default (unless
// LGFLOW_GEMM_BF16=1), the bf16 kernel for large products only when on,
// and Sgemm's result that of the bf16 path then.
func TestSetBF16(t *testing.T) {
	skipNoBF16(t)
	defer SetBF16(BF16())
	if os.Getenv("LGFLOW_GEMM_BF16") != "1" && bf16AtStart {
		t.Errorf("the bf16 path is on by default")
	}
	if err := SetBF16(false); err != nil || BF16() {
		t.Fatalf("SetBF16(false) = %v, BF16() = %v", err, BF16())
	}
	if k := sgemmKern(512, 512, 512); k != sKern {
		t.Errorf("off: 512^3 uses %q", k.name)
	}
	if kn := sBF16; kn.kc%2 != 0 || kn.mc%kn.mr != 0 || kn.nc%kn.nr != 0 {
		t.Errorf("bf16 blocking mc=%d nc=%d kc=%d: kc must be even (k blocks start on pairs), mc and nc multiples of the tile", kn.mc, kn.nc, kn.kc)
	}
	if err := SetBF16(true); err != nil || !BF16() {
		t.Fatalf("SetBF16(true) = %v, BF16() = %v", err, BF16())
	}
	for _, tc := range []struct {
		m, n, k int
		bf16    bool
	}{
		{512, 512, 512, true}, {64, 64, 128, true}, {64, 64, 64, false}, {63, 64, 128, false}, {8, 8, 8192, true},
		{4096, 4096, 4, false}, {1, 4096, 4096, false}, {4096, 7, 4096, false}, {16, 16, 16, false},
	} {
		if got := sgemmKern(tc.m, tc.n, tc.k) == sBF16; got != tc.bf16 {
			t.Errorf("on: %dx%dx%d on the bf16 path: %v, want %v", tc.m, tc.n, tc.k, got, tc.bf16)
		}
	}
	rng := rand.New(rand.NewPCG(53, 54))
	pr := problem{false, true, 100, 90, 80, 1, 0, 0, 0, 0}
	o := makeOperands(pr, rng)
	a, b := to32(o.a), to32(o.b)
	want, c := to32(o.c), to32(o.c)
	emulateBF16(false, true, pr.m, pr.n, pr.k, 1, a, o.lda, b, o.ldb, 0, nil, want, o.ldc)
	Sgemm(false, true, pr.m, pr.n, pr.k, 1, a, o.lda, b, o.ldb, 0, c, o.ldc)
	for i := range c {
		if !sameBits(c[i], want[i]) {
			t.Fatalf("Sgemm with the bf16 path on: C[%d] = %v, want %v", i, c[i], want[i])
		}
	}
}

// TestSetBF16Unavailable checks that, on a CPU without AVX512_BF16
// (simulated), SetBF16(true) fails with ErrNoBF16 and leaves the switch
// off, and that Sgemm keeps the float32 path.
func TestSetBF16Unavailable(t *testing.T) {
	defer func(h, on bool) { hasBF16 = h; bf16On.Store(on) }(hasBF16, bf16On.Load())
	hasBF16 = false
	bf16On.Store(false)
	if err := SetBF16(true); !errors.Is(err, ErrNoBF16) {
		t.Errorf("SetBF16(true) without the CPU feature = %v, want ErrNoBF16", err)
	}
	if BF16() || BF16Available() {
		t.Errorf("BF16() = %v, BF16Available() = %v, want false", BF16(), BF16Available())
	}
	if k := sgemmKern(512, 512, 512); k != sKern {
		t.Errorf("512^3 uses %q", k.name)
	}
	if err := SetBF16(false); err != nil {
		t.Errorf("SetBF16(false) = %v", err)
	}
}

// TestBF16Encodings assembles the Intel-syntax comment of every
// instruction of bf16_amd64.s written as bytes (BYTE directives) with GNU
// as and compares the encodings. It is skipped where as or objcopy is
// missing.
func TestBF16Encodings(t *testing.T) {
	asPath, err := exec.LookPath("as")
	if err != nil {
		t.Skip("GNU as is not installed")
	}
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Skip("objcopy is not installed")
	}
	f, err := os.Open("bf16_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^\s*((?:BYTE \$0x[0-9a-f]{2}(?:; )?)+)\s*// (.*)$`)
	var want [][]byte
	var insts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mm := line.FindStringSubmatch(sc.Text())
		if mm == nil {
			continue
		}
		var code []byte
		for _, field := range strings.Split(mm[1], ";") {
			v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(field), "BYTE $0x"), 16, 8)
			if err != nil {
				t.Fatalf("%q: %v", sc.Text(), err)
			}
			code = append(code, byte(v))
		}
		want = append(want, code)
		insts = append(insts, mm[2])
	}
	if len(insts) == 0 {
		t.Fatal("no instructions as bytes in bf16_amd64.s")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "x.s")
	obj := filepath.Join(dir, "x.o")
	bin := filepath.Join(dir, "x.bin")
	if err := os.WriteFile(src, []byte(".intel_syntax noprefix\n"+strings.Join(insts, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(asPath, "--64", "-o", obj, src).CombinedOutput(); err != nil {
		t.Skipf("as cannot assemble AVX512_BF16 (too old?): %v: %s", err, out)
	}
	if out, err := exec.Command(objcopy, "-O", "binary", "--only-section=.text", obj, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v: %s", err, out)
	}
	got, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if all := bytes.Join(want, nil); !bytes.Equal(got, all) {
		// Find the first instruction that differs.
		off := 0
		for i, w := range want {
			if off+len(w) > len(got) || !bytes.Equal(got[off:off+len(w)], w) {
				t.Fatalf("%s: bytes % x, GNU as gives % x", insts[i], w, got[off:min(len(got), off+len(w))])
			}
			off += len(w)
		}
		t.Fatalf("GNU as gives %d bytes, the file %d", len(got), len(all))
	}
	t.Logf("%d instructions checked", len(insts))
}

// BenchmarkSgemmBF16 measures the bf16 path next to the float32 one at
// 512^3 and 1024^3, one thread and all, for comparison in one run.
func BenchmarkSgemmBF16(b *testing.B) {
	skipNoBF16(b)
	rng := rand.New(rand.NewPCG(55, 56))
	for _, n := range []int{512, 1024} {
		a, bb, c := randSlice32(n*n, rng), randSlice32(n*n, rng), make([]float32, n*n)
		for _, threads := range []int{1, 0} {
			for _, kn := range []*kernel[float32]{sKern, sBF16} {
				name := fmt.Sprintf("%d/%s/threads=%d", n, kn.name, threads)
				if threads == 0 {
					name = fmt.Sprintf("%d/%s/threads=all", n, kn.name)
				}
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						gemm(&sState, kn, threads, "Sgemm", false, false, n, n, n, 1, a, n, bb, n, 0, nil, c, n)
					}
					reportGFLOPS(b, n, n, n)
				})
			}
		}
	}
}

// BenchmarkMicroKernelBF16 is BenchmarkMicroKernel for the bf16 kernel,
// next to the float32 AVX-512 one: L1-resident panels of depth 256.
func BenchmarkMicroKernelBF16(b *testing.B) {
	skipNoBF16(b)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, kn := range []*kernel[float32]{sAVX512f32(), sBF16} {
		b.Run(kn.name, func(b *testing.B) {
			const kc = 256
			ap, bp := randSlice32(kc*kn.mr, rng), randSlice32(kc*kn.nr, rng)
			if kn.pairs != nil {
				kn.pairs(ap, kn.mr, kc, 1)
				kn.pairs(bp, kn.nr, kc, 1)
			}
			c := make([]float32, kn.mr*kn.nr)
			for b.Loop() {
				kn.fn(kc, &ap[0], &bp[0], &c[0], kn.nr, 1, 1, nil)
			}
			reportGFLOPS(b, kn.mr, kn.nr, kc)
		})
	}
}

// TestBF16Env checks that LGFLOW_GEMM_BF16=1 switches the bf16 path on at
// start-up (where the CPU has it), in a child process of the test binary.
func TestBF16Env(t *testing.T) {
	if os.Getenv("LGFLOW_GEMM_BF16_CHILD") == "1" {
		fmt.Printf("bf16=%v\n", bf16AtStart)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBF16Env$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LGFLOW_GEMM_BF16=1", "LGFLOW_GEMM_BF16_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	want := fmt.Sprintf("bf16=%v", hasBF16)
	if !strings.Contains(string(out), want) {
		t.Errorf("with LGFLOW_GEMM_BF16=1: %q, want %q", out, want)
	}
}
