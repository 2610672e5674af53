package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// path selects how a test call reaches the kernels.
type path int

const (
	pathAuto    path = iota // the public dispatch (small or blocked)
	pathBlocked             // always the packed, blocked algorithm
	pathSmall               // always the direct path
)

func (p path) String() string { return [...]string{"auto", "blocked", "small"}[p] }

// callGemm runs one GEMM through the chosen path, kernel and thread cap.
func callGemm[T scalar](st *typeState[T], kn *kernel[T], p path, threads int, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	switch {
	case p == pathAuto || m == 0 || n == 0 || k == 0:
		gemm(st, kn, threads, "test", transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, nil, c, ldc)
	case p == pathBlocked:
		checkArgs("test", transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
		st.blocked(kn, threads, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, nil, c, ldc)
	default:
		checkArgs("test", transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
		smallGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// problem is one GEMM with its operands. Stored matrices have padding
// columns (ld > row length) filled with NaN, so reading them shows.
type problem struct {
	transA, transB  bool
	m, n, k         int
	alpha, beta     float64
	padA, padB, pad int // extra row stride beyond the row length
}

func (pr problem) String() string {
	return fmt.Sprintf("tA=%v,tB=%v,m=%d,n=%d,k=%d,alpha=%g,beta=%g,pad=%d/%d/%d",
		pr.transA, pr.transB, pr.m, pr.n, pr.k, pr.alpha, pr.beta, pr.padA, pr.padB, pr.pad)
}

// operands are the stored matrices of a problem in float64.
type operands struct {
	a, b, c       []float64
	lda, ldb, ldc int
	ar, ac        int // stored rows and columns of A
	br, bc        int
}

// makeOperands fills A, B and C with values in [-1, 1) from rng; padding
// is NaN. When beta == 0, C is all NaN (it must be overwritten).
func makeOperands(pr problem, rng *rand.Rand) operands {
	var o operands
	o.ar, o.ac = pr.m, pr.k
	if pr.transA {
		o.ar, o.ac = pr.k, pr.m
	}
	o.br, o.bc = pr.k, pr.n
	if pr.transB {
		o.br, o.bc = pr.n, pr.k
	}
	fill := func(rows, cols, pad int, nanAll bool) ([]float64, int) {
		ld := max(1, cols+pad)
		s := make([]float64, rows*ld)
		for i := range rows {
			for j := range ld {
				if j < cols && !nanAll {
					s[i*ld+j] = 2*rng.Float64() - 1
				} else {
					s[i*ld+j] = math.NaN()
				}
			}
		}
		return s, ld
	}
	o.a, o.lda = fill(o.ar, o.ac, pr.padA, false)
	o.b, o.ldb = fill(o.br, o.bc, pr.padB, false)
	o.c, o.ldc = fill(pr.m, pr.n, pr.pad, pr.beta == 0)
	return o
}

// at returns op(A)[i][p] and op(B)[p][j] of pr's operands.
func (o operands) at(pr problem, i, j, p int) (av, bv float64) {
	if pr.transA {
		av = o.a[p*o.lda+i]
	} else {
		av = o.a[i*o.lda+p]
	}
	if pr.transB {
		bv = o.b[j*o.ldb+p]
	} else {
		bv = o.b[p*o.ldb+j]
	}
	return av, bv
}

// reference computes the expected C in float64 and, per element, a bound
// on the float32 rounding error: 2(k+2) u (|alpha| sum|a||b| + |beta||c|).
func reference(pr problem, o operands) (want, bound []float64) {
	want = make([]float64, len(o.c))
	bound = make([]float64, len(o.c))
	copy(want, o.c)
	const u = 0x1p-24
	for i := range pr.m {
		for j := range pr.n {
			var s, sa float64
			for p := range pr.k {
				av, bv := o.at(pr, i, j, p)
				s += av * bv
				sa += math.Abs(av * bv)
			}
			idx := i*o.ldc + j
			v := pr.alpha * s
			mag := math.Abs(pr.alpha) * sa
			if pr.beta != 0 {
				v += pr.beta * o.c[idx]
				mag += math.Abs(pr.beta * o.c[idx])
			}
			want[idx] = v
			bound[idx] = 2*float64(pr.k+2)*u*mag + 1e-30
		}
	}
	return want, bound
}

func to32(s []float64) []float32 {
	r := make([]float32, len(s))
	for i, v := range s {
		r[i] = float32(v)
	}
	return r
}

// check compares got with want within bound (scaled by slack) on the m x n
// elements, and requires the padding of C to be untouched (still NaN).
func check[T scalar](t *testing.T, what string, pr problem, o operands, got []T, want, bound []float64, slack float64) {
	t.Helper()
	bad := 0
	for i := range pr.m {
		for j := range o.ldc {
			idx := i*o.ldc + j
			g := float64(got[idx])
			if j >= pr.n {
				if !math.IsNaN(g) {
					t.Errorf("%s %v: padding C[%d][%d] was written: %g", what, pr, i, j, g)
					return
				}
				continue
			}
			if d := math.Abs(g - want[idx]); !(d <= slack*bound[idx]) {
				if bad < 3 {
					t.Errorf("%s %v: C[%d][%d] = %.9g, want %.9g (|diff| %.3g > %.3g)", what, pr, i, j, g, want[idx], d, slack*bound[idx])
				}
				bad++
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s %v: %d wrong elements in all", what, pr, bad)
	}
}

// runSgemm runs pr through Sgemm with kernel kn on path p and checks the
// result against the float64 reference.
func runSgemm(t *testing.T, kn *kernel[float32], p path, threads int, pr problem, rng *rand.Rand) []float32 {
	t.Helper()
	o := makeOperands(pr, rng)
	want, bound := reference(pr, o)
	a, b, c := to32(o.a), to32(o.b), to32(o.c)
	callGemm(&sState, kn, p, threads, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), c, o.ldc)
	check(t, fmt.Sprintf("Sgemm[%s,%v,threads=%d]", kn.name, p, threads), pr, o, c, want, bound, 1)
	return c
}

// tableProblems returns every combination of transposes and alpha/beta
// values over a set of shapes, with and without padded strides.
func tableProblems() []problem {
	shapes := [][3]int{
		{1, 1, 1}, {7, 13, 31}, {13, 7, 67}, {31, 67, 13}, {67, 31, 127}, {127, 67, 7},
		{1, 300, 1}, {1, 130, 257}, {300, 1, 40}, {40, 2, 300}, // vector-like
		{130, 17, 9}, {5, 200, 33}, // tall-skinny, wide
		{6, 16, 256}, {12, 32, 1}, {25, 49, 520}, // tile multiples, k past one block
	}
	var ps []problem
	for si, s := range shapes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, ab := range [][2]float64{{1, 0}, {1, 1}, {-0.75, 0}, {0.5, -1.25}, {0, 0.5}, {0, 0}, {1.5, 1}} {
				pad := 0
				if si%2 == 1 {
					pad = 3
				}
				ps = append(ps, problem{tr[0], tr[1], s[0], s[1], s[2], ab[0], ab[1], pad, pad + 1, pad + 2})
			}
		}
	}
	return ps
}

// naiveKernel returns a Go micro-kernel for any mr x nr tile, for testing
// the driver with the tile shapes of kernels this CPU cannot run.
func naiveKernel[T scalar](name string, mr, nr, mc, kc, nc int) *kernel[T] {
	return &kernel[T]{name: name, mr: mr, nr: nr, mc: mc, kc: kc, nc: nc,
		fn: func(kc int, a, b, c *T, ldc int, alpha, beta T, bias *T) {
			ap, bp := unsafe.Slice(a, kc*mr), unsafe.Slice(b, kc*nr)
			cs := unsafe.Slice(c, (mr-1)*ldc+nr)
			for i := range mr {
				for j := range nr {
					var s T
					for p := range kc {
						s += T(ap[p*mr+i] * bp[p*nr+j])
					}
					if bias != nil {
						cs[i*ldc+j] = T(alpha*s) + unsafe.Slice(bias, nr)[j]
					} else if beta == 0 {
						cs[i*ldc+j] = alpha * s
					} else {
						cs[i*ldc+j] = T(alpha*s) + T(beta*cs[i*ldc+j])
					}
				}
			}
		}}
}

// testKernels returns the float32 kernels this CPU runs plus Go stand-ins
// with the tile shape and blocking of the AVX-512 and AVX2 kernels, so the
// driver is exercised with every geometry even where AVX-512 is missing.
func testKernels() []*kernel[float32] {
	ks := sgemmKernels()
	if !hasAVX512Test() {
		ks = append(ks, naiveKernel[float32]("as-avx512", 12, 32, 360, 128, 3072))
	}
	return append(ks, naiveKernel[float32]("as-avx2", 6, 16, 144, 256, 4080))
}

func hasAVX512Test() bool { return sgemmKernels()[0].name == "avx512" }

func TestSgemmTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, pr := range tableProblems() {
		runSgemm(t, sKern, pathAuto, 0, pr, rng)
		runSgemm(t, sKern, pathSmall, 1, pr, rng)
		for _, kn := range testKernels() {
			for _, threads := range []int{1, 2} {
				runSgemm(t, kn, pathBlocked, threads, pr, rng)
			}
		}
	}
}

// TestSgemmBlocks covers several nc and kc blocks and edge tiles on the
// blocked path with each thread count.
func TestSgemmBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	probs := []problem{
		{false, false, 3, 4200, 5, 1, 0, 0, 0, 0},           // several nc blocks
		{true, true, 70, 4100, 3, 1, 0.5, 1, 2, 3},          // several nc blocks, transposed
		{false, true, 100, 90, 600, -1, 1, 0, 5, 0},         // three kc blocks
		{true, false, 199, 101, 300, 0.25, 0, 2, 0, 1},      // more rows than mc
		{false, false, 390, 40, 270, 1, 2, 0, 0, 0},         // several mc blocks per worker
		{false, false, 256, 256, 256, 1, 0, 0, 0, 0},        // the benchmark shape
		{true, true, 1, 5000, 70, 1, 0, 0, 0, 0},            // one row
		{false, false, 5000, 1, 70, 1, 0, 0, 0, 0},          // one column
		{false, true, 64 * 64 / 8, 256, 256, 1, 0, 0, 0, 0}, // a model shape (fewer rows)
		{true, false, 20, 37, 4200, 1, 0.5, 1, 0, 2},        // k slices (kc 128)
		{true, true, 9, 13, 8200, -0.5, 1, 0, 1, 0},         // k slices (kc 128 and 256)
		{false, false, 700, 60, 300, 2, 0, 0, 0, 1},         // k-inner order, several tasks
	}
	for _, kn := range testKernels() {
		for _, threads := range []int{1, 2, 3} {
			for _, pr := range probs {
				if strings.HasPrefix(kn.name, "as-") && (threads == 3 || pr.m*pr.n*pr.k > 4e6) {
					continue // the naive stand-in kernels are slow
				}
				runSgemm(t, kn, pathBlocked, threads, pr, rng)
			}
		}
	}
}

// TestSgemmRandom runs seeded random shapes, strides, scalars, kernels,
// paths and thread counts.
func TestSgemmRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	kernels := testKernels()
	scalars := []float64{0, 1, -1, 0.5, 2.25}
	for range 300 {
		pr := problem{
			transA: rng.IntN(2) == 0, transB: rng.IntN(2) == 0,
			m: 1 + rng.IntN(90), n: 1 + rng.IntN(90), k: 1 + rng.IntN(300),
			alpha: scalars[rng.IntN(len(scalars))], beta: scalars[rng.IntN(len(scalars))],
			padA: rng.IntN(3), padB: rng.IntN(3), pad: rng.IntN(3),
		}
		if rng.IntN(10) == 0 {
			pr.k = 0
		}
		runSgemm(t, kernels[rng.IntN(len(kernels))], path(rng.IntN(3)), 1+rng.IntN(3), pr, rng)
	}
}

// TestSgemmKernelsAgree checks that the assembly kernels and the portable Go
// kernel produce the same products to float32 accuracy.
func TestSgemmKernelsAgree(t *testing.T) {
	kernels := sgemmKernels()
	if len(kernels) < 2 {
		t.Skip("only the Go kernel is available")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, pr := range []problem{
		{false, false, 67, 127, 31, 1, 0, 0, 0, 0},
		{true, false, 131, 97, 300, -0.5, 2, 1, 0, 2},
		{false, true, 256, 256, 256, 1, 1, 0, 0, 0},
		{true, true, 50, 333, 129, 1.5, 0, 2, 1, 0},
	} {
		o := makeOperands(pr, rng)
		_, bound := reference(pr, o)
		a, b := to32(o.a), to32(o.b)
		var results [][]float32
		for _, kn := range kernels {
			c := to32(o.c)
			callGemm(&sState, kn, pathBlocked, 2, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), c, o.ldc)
			results = append(results, c)
		}
		goRes := results[len(results)-1]
		for ki, c := range results[:len(results)-1] {
			want := make([]float64, len(goRes))
			for i, v := range goRes {
				want[i] = float64(v)
			}
			// Both are within bound of the exact value, so within 2*bound of each other.
			check(t, "kernel "+kernels[ki].name+" vs go", pr, o, c, want, bound, 2)
		}
	}
}

// TestSgemmGonum compares Sgemm with gonum's native blas32.Gemm.
func TestSgemmGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	tr := func(b bool) blas.Transpose {
		if b {
			return blas.Trans
		}
		return blas.NoTrans
	}
	for _, pr := range []problem{
		{false, false, 7, 13, 31, 1, 0, 0, 0, 0},
		{false, true, 67, 127, 13, -1, 0.5, 1, 2, 3},
		{true, false, 127, 31, 67, 2, 1, 0, 1, 0},
		{true, true, 100, 120, 300, 0.5, -1, 2, 0, 1},
		{false, false, 256, 256, 256, 1, 0, 0, 0, 0},
		{false, false, 1, 257, 129, 1, 0, 0, 0, 0},
	} {
		o := makeOperands(pr, rng)
		_, bound := reference(pr, o)
		a, b := to32(o.a), to32(o.b)
		c := to32(o.c)
		Sgemm(pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), c, o.ldc)
		g := to32(o.c)
		for i := range g {
			if pr.beta == 0 && math.IsNaN(float64(g[i])) {
				g[i] = 0 // gonum reads C... it must not be NaN for the oracle
			}
		}
		blas32.Gemm(tr(pr.transA), tr(pr.transB), float32(pr.alpha),
			blas32.General{Rows: o.ar, Cols: o.ac, Stride: o.lda, Data: a},
			blas32.General{Rows: o.br, Cols: o.bc, Stride: o.ldb, Data: b},
			float32(pr.beta), blas32.General{Rows: pr.m, Cols: pr.n, Stride: o.ldc, Data: g})
		want := make([]float64, len(g))
		for i, v := range g {
			want[i] = float64(v)
		}
		for i := range pr.m { // restore NaN padding expected by check
			for j := pr.n; j < o.ldc; j++ {
				c[i*o.ldc+j] = float32(math.NaN())
			}
		}
		check(t, "Sgemm vs gonum", pr, o, c, want, bound, 2)
	}
}

func TestDgemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var probs []problem
	for i, pr := range tableProblems() {
		if i%3 == 0 {
			probs = append(probs, pr)
		}
	}
	probs = append(probs,
		problem{false, true, 100, 90, 600, -1, 1, 0, 5, 0},
		problem{true, false, 199, 101, 300, 0.25, 0, 2, 0, 1},
		problem{false, false, 3, 4200, 5, 1, 0, 0, 0, 0},
	)
	for _, kn := range dgemmKernels() {
		for _, p := range []path{pathAuto, pathBlocked, pathSmall} {
			for _, pr := range probs {
				o := makeOperands(pr, rng)
				want, bound := reference(pr, o)
				// float64 rounding: the float32 bound times 2^-29.
				for i := range bound {
					bound[i] *= 0x1p-29
				}
				c := append([]float64(nil), o.c...)
				callGemm(&dState, kn, p, 2, pr.transA, pr.transB, pr.m, pr.n, pr.k, pr.alpha, o.a, o.lda, o.b, o.ldb, pr.beta, c, o.ldc)
				check(t, fmt.Sprintf("Dgemm[%s,%v]", kn.name, p), pr, o, c, want, bound, 1)
			}
		}
	}
}

func TestDgemmGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	pr := problem{true, false, 97, 131, 203, 0.75, 0.5, 1, 0, 2}
	o := makeOperands(pr, rng)
	_, bound := reference(pr, o)
	c := append([]float64(nil), o.c...)
	Dgemm(pr.transA, pr.transB, pr.m, pr.n, pr.k, pr.alpha, o.a, o.lda, o.b, o.ldb, pr.beta, c, o.ldc)
	g := append([]float64(nil), o.c...)
	blas64.Gemm(blas.Trans, blas.NoTrans, pr.alpha,
		blas64.General{Rows: o.ar, Cols: o.ac, Stride: o.lda, Data: o.a},
		blas64.General{Rows: o.br, Cols: o.bc, Stride: o.ldb, Data: o.b},
		pr.beta, blas64.General{Rows: pr.m, Cols: pr.n, Stride: o.ldc, Data: g})
	for i := range bound {
		bound[i] *= 0x1p-29
	}
	check(t, "Dgemm vs gonum", pr, o, c, g, bound, 2)
}

// TestSgemmHandComputed checks small products worked out by hand.
func TestSgemmHandComputed(t *testing.T) {
	// A = [1 2 3; 4 5 6], B = [7 8; 9 10; 11 12]: A*B = [58 64; 139 154].
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{7, 8, 9, 10, 11, 12}
	at := []float32{1, 4, 2, 5, 3, 6}    // A^T stored 3x2
	bt := []float32{7, 9, 11, 8, 10, 12} // B^T stored 2x3
	tests := []struct {
		name           string
		transA, transB bool
		a, b           []float32
		alpha, beta    float32
		c, want        []float32
	}{
		{"NN", false, false, a, b, 1, 0, []float32{nan32(), nan32(), nan32(), nan32()}, []float32{58, 64, 139, 154}},
		{"TN", true, false, at, b, 1, 0, make([]float32, 4), []float32{58, 64, 139, 154}},
		{"NT", false, true, a, bt, 1, 0, make([]float32, 4), []float32{58, 64, 139, 154}},
		{"TT", true, true, at, bt, 1, 0, make([]float32, 4), []float32{58, 64, 139, 154}},
		{"alpha,beta", false, false, a, b, 2, -1, []float32{1, 2, 3, 4}, []float32{115, 126, 275, 304}},
		{"alpha=0", false, false, a, b, 0, 3, []float32{1, 2, 3, 4}, []float32{3, 6, 9, 12}},
	}
	for _, tc := range tests {
		lda, ldb := 3, 2
		if tc.transA {
			lda = 2
		}
		if tc.transB {
			ldb = 3
		}
		c := append([]float32(nil), tc.c...)
		Sgemm(tc.transA, tc.transB, 2, 2, 3, tc.alpha, tc.a, lda, tc.b, ldb, tc.beta, c, 2)
		for i := range c {
			if c[i] != tc.want[i] {
				t.Errorf("%s: C = %v, want %v", tc.name, c, tc.want)
				break
			}
		}
	}
}

func nan32() float32 { return float32(math.NaN()) }

// TestSgemmBias checks that C = alpha*op(A)*op(B) + bias equals, bit for
// bit, copying bias into every row of C and accumulating the product with
// beta = 1, on every kernel, path and thread count, over the table's shapes,
// the blocked shapes and k == 0; C starts as NaN (it must not be read).
func TestSgemmBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var probs []problem
	for _, pr := range tableProblems() {
		if pr.beta == 0 {
			probs = append(probs, pr)
		}
	}
	probs = append(probs,
		problem{false, true, 100, 90, 600, -1, 0, 0, 5, 0},         // three kc blocks
		problem{true, false, 199, 101, 300, 0.25, 0, 2, 0, 1},      // more rows than mc
		problem{false, true, 64 * 64 / 8, 256, 128, 1, 0, 0, 0, 0}, // a linear layer
		problem{false, false, 9, 7, 0, 1, 0, 0, 0, 2},              // k == 0: C = bias
		problem{true, false, 20, 37, 4200, 0.5, 0, 1, 0, 2},        // k slices
		problem{false, false, 400, 70, 300, 1, 0, 1, 2, 3},         // k-inner, B packed beforehand (two threads)
		problem{true, true, 400, 70, 300, -1, 0, 0, 0, 0},          // ditto, both transposed
	)
	for _, kn := range testKernels() {
		for _, threads := range []int{1, 2} {
			for _, p := range []path{pathBlocked, pathSmall, pathAuto} {
				for _, pr := range probs {
					if strings.HasPrefix(kn.name, "as-") && pr.m*pr.n*pr.k > 4e6 {
						continue // the naive stand-in kernels are slow
					}
					o := makeOperands(pr, rng)
					a, b := to32(o.a), to32(o.b)
					bias := make([]float32, pr.n)
					for j := range bias {
						bias[j] = float32(2*rng.Float64() - 1)
					}
					want := to32(o.c)
					fillRows(pr.m, pr.n, bias, want, o.ldc)
					callGemm(&sState, kn, p, threads, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, 1, want, o.ldc)
					got := to32(o.c) // NaN: beta == 0 in every problem
					switch {
					case p == pathAuto:
						gemm(&sState, kn, threads, "test", pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, 0, bias, got, o.ldc)
					case p == pathSmall || pr.k == 0:
						continue // the small path is gemm's own copy + beta = 1
					default:
						sState.blocked(kn, threads, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, 0, bias, got, o.ldc)
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
							t.Fatalf("%s %v threads=%d %v: C[%d] = %v, want %v (copy + beta = 1)", kn.name, p, threads, pr, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	c := []float32{9, 9, 9, 9}
	SgemmBias(false, false, 2, 2, 3, 2, []float32{1, 2, 3, 4, 5, 6}, 3, []float32{1, 0, 0, 1, 1, 1}, 2, []float32{10, -10}, c, 2)
	// [1 2 3; 4 5 6]·[1 0; 0 1; 1 1] = [4 5; 10 11]; ×2, + bias.
	if want := []float32{18, 0, 30, 12}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("SgemmBias by hand: %v, want %v", c, want)
	}
}

// TestDegenerate checks zero sizes and k == 0 (C = beta*C).
func TestDegenerate(t *testing.T) {
	c := []float32{1, 2, 3, 4}
	Sgemm(false, false, 0, 2, 3, 1, nil, 3, make([]float32, 6), 2, 0, nil, 2)
	Sgemm(false, false, 2, 0, 3, 1, make([]float32, 6), 3, nil, 1, 0, nil, 1)
	Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0.5, c, 2)
	if want := []float32{0.5, 1, 1.5, 2}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("k=0, beta=0.5: C = %v, want %v", c, want)
	}
	c = []float32{nan32(), 1, 2, nan32()}
	Sgemm(true, true, 2, 2, 0, 1, nil, 2, nil, 1, 0, c, 2)
	if want := []float32{0, 0, 0, 0}; fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("k=0, beta=0: C = %v, want %v", c, want)
	}
	d := []float64{1, 2}
	Dgemm(false, false, 1, 2, 0, 1, nil, 1, nil, 2, 1, d, 2)
	if d[0] != 1 || d[1] != 2 {
		t.Errorf("Dgemm k=0, beta=1 changed C: %v", d)
	}
}

func TestPanics(t *testing.T) {
	s := func(n int) []float32 { return make([]float32, n) }
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"negative m", func() { Sgemm(false, false, -1, 2, 2, 1, s(4), 2, s(4), 2, 0, s(4), 2) }, "negative dimension"},
		{"short a", func() { Sgemm(false, false, 2, 2, 3, 1, s(5), 3, s(6), 2, 0, s(4), 2) }, "len(a) = 5, but a 2x3 matrix with lda = 3 needs 6"},
		{"short a^T", func() { Sgemm(true, false, 2, 2, 3, 1, s(5), 2, s(6), 2, 0, s(4), 2) }, "len(a) = 5, but a 3x2 matrix"},
		{"short b", func() { Sgemm(false, false, 2, 2, 3, 1, s(6), 3, s(5), 2, 0, s(4), 2) }, "len(b) = 5"},
		{"short c", func() { Sgemm(false, false, 2, 2, 3, 1, s(6), 3, s(6), 2, 0, s(4), 3) }, "len(c) = 4, but a 2x2 matrix with ldc = 3 needs 5"},
		{"small lda", func() { Sgemm(false, false, 2, 2, 3, 1, s(6), 2, s(6), 2, 0, s(4), 2) }, "lda = 2 is less than the row length 3"},
		{"small ldb^T", func() { Sgemm(false, true, 2, 2, 3, 1, s(6), 3, s(6), 2, 0, s(4), 2) }, "ldb = 2 is less than the row length 3"},
		{"Dgemm short c", func() {
			Dgemm(false, false, 2, 2, 1, 1, make([]float64, 2), 1, make([]float64, 2), 2, 0, make([]float64, 3), 2)
		}, "gemm.Dgemm: len(c) = 3"},
	}
	for _, tc := range tests {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.Contains(msg, tc.want) {
					t.Errorf("%s: panic %v, want a message containing %q", tc.name, r, tc.want)
				}
			}()
			tc.call()
		}()
	}
}

// TestConcurrentCalls runs Sgemm from several goroutines at once: calls that
// find the worker pool busy must fall back to one thread and still be right.
func TestConcurrentCalls(t *testing.T) {
	pr := problem{false, true, 120, 130, 140, 1, 0, 0, 0, 0}
	o := makeOperands(pr, rand.New(rand.NewPCG(15, 16)))
	want, bound := reference(pr, o)
	a, b := to32(o.a), to32(o.b)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				c := make([]float32, len(o.c))
				Sgemm(pr.transA, pr.transB, pr.m, pr.n, pr.k, 1, a, o.lda, b, o.ldb, 0, c, o.ldc)
				check(t, fmt.Sprintf("goroutine %d", g), pr, o, c, want, bound, 1)
			}
		}()
	}
	wg.Wait()
}

func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	const n = 256
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7), float32(i%5)
	}
	Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n) // warm up buffers and pool
	if allocs := testing.AllocsPerRun(5, func() {
		Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		Sgemm(true, true, n, n, n, 1, a, n, b, n, 1, c, n)
	}); allocs != 0 {
		t.Errorf("Sgemm 256^3 allocates %v times per call pair, want 0", allocs)
	}
	d := make([]float64, 100*100)
	Dgemm(false, false, 100, 100, 100, 1, d, 100, d[:], 100, 0, make([]float64, 100*100), 100)
	cd := make([]float64, 100*100)
	if allocs := testing.AllocsPerRun(5, func() {
		Dgemm(false, false, 100, 100, 100, 1, d, 100, d, 100, 0, cd, 100)
	}); allocs != 0 {
		t.Errorf("Dgemm 100^3 allocates %v times per call, want 0", allocs)
	}
}

// TestThreadsBitwise checks that the blocked path gives the same bits
// whatever the number of threads, in each of its orders: tasks per k block,
// the k-inner order and k slices.
func TestThreadsBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	probs := []problem{
		{false, true, 300, 200, 100, 1, 0, 0, 0, 0},    // one k block
		{false, true, 700, 60, 300, 1, 0.5, 0, 1, 0},   // k-inner, B packed beforehand
		{false, false, 515, 200, 400, 1, 0.5, 1, 2, 3}, // ditto: partial strip, edge panel, padding
		{true, true, 400, 70, 300, -1, 0, 0, 0, 0},     // ditto, both transposed
		{false, false, 300, 96, 600, 1, 0, 0, 0, 0},    // k-inner, column groups
		{true, false, 128, 96, 9000, 1, 0, 0, 0, 0},    // k slices
		{true, false, 40, 200, 20000, -1, 1, 2, 0, 1},  // k slices, capped at maxKSlices
		{false, false, 64, 3100, 600, 1, 0, 0, 0, 0},   // several nc blocks
	}
	for _, kn := range testKernels() {
		if strings.HasPrefix(kn.name, "as-") {
			continue // the naive stand-ins are slow; TestSgemmBlocks covers their geometry
		}
		for _, pr := range probs {
			o := makeOperands(pr, rng)
			a, b := to32(o.a), to32(o.b)
			var first []float32
			for _, threads := range []int{1, 2, 3} {
				c := to32(o.c)
				callGemm(&sState, kn, pathBlocked, threads, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), c, o.ldc)
				if first == nil {
					first = c
					continue
				}
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(first[i]) && !(math.IsNaN(float64(c[i])) && math.IsNaN(float64(first[i]))) {
						t.Fatalf("%s %v: C[%d] = %v with %d threads, %v with one", kn.name, pr, i, c[i], threads, first[i])
					}
				}
			}
		}
	}
}

func TestKSlices(t *testing.T) {
	kn := &kernel[float32]{kc: 128}
	tests := []struct {
		m, n, k, want int
	}{
		{128, 512, 16384, 8},   // a weight gradient, batch of 256 sets of 64
		{128, 512, 4096, 2},    // batch of 64
		{128, 512, 2048, 1},    // k < 4·max(m, n)
		{384, 3072, 8192, 1},   // ditto
		{384, 3072, 16384, 4},  // partial products capped at maxPartial
		{1024, 1024, 65536, 5}, // ditto
		{16384, 128, 512, 1},   // a forward product
		{20, 37, 4200, 2},
	}
	for _, tc := range tests {
		if got := kSlices(kn, tc.m, tc.n, tc.k); got != tc.want {
			t.Errorf("kSlices(m=%d, n=%d, k=%d) = %d, want %d", tc.m, tc.n, tc.k, got, tc.want)
		}
	}
}

func TestSplitTasks(t *testing.T) {
	tests := []struct {
		nw, m, n, mr, nr, mc  int
		mcTask, rowChunks, gn int
	}{
		{1, 1000, 1000, 6, 16, 144, 144, 7, 1}, // one worker: whole mc blocks
		{2, 256, 256, 6, 16, 144, 48, 6, 1},    // 3 chunks per worker
		{2, 1024, 1024, 6, 16, 144, 144, 8, 1}, // capped at mc
		{2, 6, 4080, 6, 16, 144, 6, 1, 6},      // one row panel: split columns
		{2, 12, 16, 6, 16, 144, 6, 2, 1},       // one column panel
		{4, 20, 600, 6, 16, 144, 6, 4, 3},
	}
	for _, tc := range tests {
		mcTask, rowChunks, gn := splitTasks(tc.nw, tc.m, tc.n, tc.mr, tc.nr, tc.mc)
		if mcTask != tc.mcTask || rowChunks != tc.rowChunks || gn != tc.gn {
			t.Errorf("splitTasks(%d, %d, %d, %d, %d, %d) = %d, %d, %d; want %d, %d, %d",
				tc.nw, tc.m, tc.n, tc.mr, tc.nr, tc.mc, mcTask, rowChunks, gn, tc.mcTask, tc.rowChunks, tc.gn)
		}
	}
}

// TestSplitTasksPrepack checks the tasks of the k-inner order from a B
// packed beforehand, and which products take that order.
func TestSplitTasksPrepack(t *testing.T) {
	tests := []struct {
		nw, m, n, mr, nr, mc  int
		mcTask, rowChunks, gn int
	}{
		{2, 512, 512, 12, 32, 360, 96, 6, 1},     // 43 strips in chunks of 7 or 8
		{2, 16384, 128, 12, 32, 360, 360, 46, 1}, // capped at mc
		{2, 30, 128, 12, 32, 360, 12, 3, 2},      // three strips: column groups too
		{3, 1000, 64, 6, 16, 144, 114, 9, 1},     // 167 strips in 9 chunks of 18 or 19
		{2, 12, 16, 12, 32, 360, 12, 1, 1},       // one strip, one panel
	}
	for _, tc := range tests {
		mcTask, rowChunks, gn := splitTasksPrepack(tc.nw, tc.m, tc.n, tc.mr, tc.nr, tc.mc)
		if mcTask != tc.mcTask || rowChunks != tc.rowChunks || gn != tc.gn {
			t.Errorf("splitTasksPrepack(%d, %d, %d, %d, %d, %d) = %d, %d, %d; want %d, %d, %d",
				tc.nw, tc.m, tc.n, tc.mr, tc.nr, tc.mc, mcTask, rowChunks, gn, tc.mcTask, tc.rowChunks, tc.gn)
		}
		// The chunks cover the rows, in whole strips, none over mcTask.
		strips, end := ceilDiv(tc.m, tc.mr), 0
		for c := range rowChunks {
			ic, iend := c*strips/rowChunks*tc.mr, min(tc.m, (c+1)*strips/rowChunks*tc.mr)
			if ic != end || iend-ic > mcTask || iend <= ic {
				t.Errorf("%v: chunk %d is rows %d..%d after %d", tc, c, ic, iend, end)
			}
			end = iend
		}
		if end != tc.m {
			t.Errorf("%v: the chunks end at row %d", tc, end)
		}
	}
	kn := sgemmKernelFor("avx512")
	if kn == nil {
		kn = sKern
	}
	for _, tc := range []struct {
		m, n, k int
		want    bool
	}{
		{512, 512, 512, true},
		{16384, 128, 512, true},
		{256, 256, 256, false},    // one chunk of rows: column groups (runKInner)
		{1024, 1024, 1024, false}, // too wide for the k-inner order
		{2048, 64, 64, false},     // one k block
		{64, 64, 2048, false},     // one chunk of rows
		{4096, 512, 8192, false},  // too much B to pack beforehand
	} {
		var j job[float32]
		j.set(kn, 2, false, false, tc.m, tc.n, tc.k, 1, nil, tc.k, nil, tc.n, 0, nil, nil, tc.n)
		if j.prepack != tc.want {
			t.Errorf("%s %dx%dx%d on two threads: prepack = %v, want %v", kn.name, tc.m, tc.n, tc.k, j.prepack, tc.want)
		}
	}
}

// TestPrepackBitwise checks that the k-inner order from a B packed
// beforehand (usePrepack, runPrepacked) gives the bits of runKInner, which
// packs it in every task, with A read in place or packed, transposed
// operands, edge tiles, padding, beta and a bias.
func TestPrepackBitwise(t *testing.T) {
	defer func(p, a bool) { usePrepack, useDirectA = p, a }(usePrepack, useDirectA)
	rng := rand.New(rand.NewPCG(31, 32))
	probs := []problem{
		{false, false, 515, 200, 400, 1, 0.5, 1, 2, 3},
		{false, true, 700, 60, 300, 1, 0, 0, 1, 0},
		{true, false, 400, 96, 260, -0.5, 0, 3, 0, 1},
		{true, true, 1000, 33, 129, 1, 1, 0, 0, 0},
	}
	for _, kn := range testKernels() {
		if strings.HasPrefix(kn.name, "as-") {
			continue
		}
		for _, direct := range []bool{true, false} {
			useDirectA = direct
			for _, pr := range probs {
				compareInPlace(t, kn, pr, rng, "from B packed beforehand", func(in bool) { usePrepack = in })
			}
		}
	}
}

// TestDispatch checks kernel selection: Kernel reports the first kernel the
// CPU supports, LGFLOW_GEMM overrides it, and every kernel is well formed.
func TestDispatch(t *testing.T) {
	ks := sgemmKernels()
	if got := Kernel(); got != ks[0].name && got != pickKernel(ks).name {
		t.Errorf("Kernel() = %q, want %q", got, ks[0].name)
	}
	if ks[len(ks)-1] != sGo {
		t.Errorf("the Go kernel must be the last resort")
	}
	t.Setenv("LGFLOW_GEMM", "go")
	if k := pickKernel(ks); k != sGo {
		t.Errorf("LGFLOW_GEMM=go picked %q", k.name)
	}
	t.Setenv("LGFLOW_GEMM", "nonsense")
	if k := pickKernel(ks); k != ks[0] {
		t.Errorf("LGFLOW_GEMM=nonsense picked %q, want the default %q", k.name, ks[0].name)
	}
	for _, name := range []string{"avx512", "avx2", "go"} {
		k := sgemmKernelFor(name)
		if k == nil {
			if name == "go" || asmBuilt {
				t.Errorf("no kernel named %q", name)
			}
			continue
		}
		if k.mc%k.mr != 0 || k.nc%k.nr != 0 || k.kc <= 0 {
			t.Errorf("kernel %q: blocking mc=%d nc=%d kc=%d does not fit tile %dx%d", name, k.mc, k.nc, k.kc, k.mr, k.nr)
		}
	}
}

// TestDirectABitwise checks that reading op(A) in place with a kernel's
// direct forms (useDirectA; transposed A with the transposed form) gives
// the bits of packing it, on the blocked
// path in each of its orders, with and without a bias, for every kernel
// that has a direct form; and that the direct form is used.
func TestDirectABitwise(t *testing.T) {
	defer func(u bool) { useDirectA = u }(useDirectA)
	rng := rand.New(rand.NewPCG(21, 22))
	probs := []problem{
		{false, true, 300, 200, 100, 1, 0, 0, 0, 0},   // one k block, a partial strip
		{false, true, 367, 75, 300, 0.5, 1, 3, 1, 2},  // several k blocks, padded rows, edge tiles, beta
		{false, false, 725, 64, 129, -1, 0, 5, 0, 0},  // more rows than mc
		{false, true, 700, 60, 300, 1, 0.5, 0, 1, 0},  // k-inner with two threads
		{false, false, 20, 37, 4200, 1, 0, 1, 0, 0},   // k slices
		{false, false, 64, 3100, 600, 1, -2, 0, 0, 0}, // several nc blocks
		{false, true, 2048, 384, 128, 1, 0, 0, 0, 0},  // a linear layer's forward
		{false, false, 11, 33, 50, 1, 0, 0, 0, 0},     // fewer rows than a strip
		{true, false, 100, 90, 80, 1, 0, 0, 0, 0},     // transposed A (the transposed direct form)
		{true, false, 367, 75, 300, 0.5, 1, 3, 1, 2},  // transposed, several k blocks, padded, beta
		{true, true, 725, 64, 129, -1, 0, 5, 0, 0},    // transposed both, more rows than mc
		{true, false, 512, 128, 4096, 1, 0, 0, 0, 0},  // a weight gradient (k slices)
		{true, false, 128, 384, 4096, 1, 0, 0, 0, 0},  // another, with a partial last strip
		{true, false, 700, 60, 300, 1, 0.5, 0, 1, 0},  // transposed, k-inner with two threads
		{true, false, 11, 33, 50, 1, 0, 0, 0, 0},      // transposed, fewer rows than a strip
		{false, false, 2048, 128, 512, 1, 0, 0, 0, 0}, // the MLP's second product
		{false, true, 4096 / 64 * 64, 64, 32, 1, 0, 0, 0, 0},
	}
	used := false
	for _, kn := range sgemmKernels() {
		if kn.direct == nil {
			continue
		}
		used = true
		for _, pr := range probs {
			compareInPlace(t, kn, pr, rng, "read in place", func(in bool) { useDirectA = in })
		}
	}
	if !used && sgemmKernels()[0].name != "go" {
		t.Errorf("the %s kernel has no direct form", sgemmKernels()[0].name)
	}
}

// TestDirectBBitwise checks that reading op(B) in place too (useDirectB,
// kernel.directB) gives the bits of packing it, on the small products it
// is for (an attention head's), with partial strips of A, padded strides,
// beta and a bias, on one and two threads; that those products take it;
// and that the ones it is not for do not.
func TestDirectBBitwise(t *testing.T) {
	defer func(a, b bool) { useDirectA, useDirectB = a, b }(useDirectA, useDirectB)
	useDirectA = true
	rng := rand.New(rand.NewPCG(23, 24))
	probs := []problem{
		{false, false, 64, 32, 64, 1, 0, 0, 352, 0},   // P·V of a head (V a column block of QKV)
		{false, false, 64, 64, 32, 0.5, 0, 3, 1, 2},   // another head shape, padded
		{false, false, 70, 32, 64, 1, 1, 0, 0, 5},     // a partial last strip, beta
		{false, false, 12, 96, 100, -1, 0.5, 0, 0, 0}, // one strip, several panels
		{false, false, 12, 32, 600, 1, 0, 1, 3, 0},    // several k blocks
	}
	for _, kn := range sgemmKernels() {
		if kn.directB == nil {
			continue
		}
		for _, pr := range probs {
			if work(pr.m, pr.n, pr.k) > directBMaxWork {
				t.Fatalf("%v: too large for the direct B path", pr)
			}
			compareInPlace(t, kn, pr, rng, "with B in place", func(in bool) {
				useDirectB = in
				var jb job[float32]
				jb.set(kn, 1, pr.transA, pr.transB, pr.m, pr.n, pr.k, 1, nil, 0, nil, 0, 0, nil, nil, 0)
				if jb.directB != in {
					t.Fatalf("%s %v: directB = %v with useDirectB %v", kn.name, pr, jb.directB, in)
				}
			})
		}
		// Not for: transposed operands, a partial panel, fewer rows than a
		// strip, a large product.
		useDirectB = true
		for _, pr := range []problem{
			{true, false, 64, 32, 64, 1, 0, 0, 0, 0},
			{false, true, 64, 32, 64, 1, 0, 0, 0, 0},
			{false, false, 64, 33, 64, 1, 0, 0, 0, 0},
			{false, false, 5, 32, 64, 1, 0, 0, 0, 0},
			{false, false, 128, 64, 64, 1, 0, 0, 0, 0},
		} {
			var jb job[float32]
			jb.set(kn, 1, pr.transA, pr.transB, pr.m, pr.n, pr.k, 1, nil, 0, nil, 0, 0, nil, nil, 0)
			if jb.directB {
				t.Errorf("%s %v: B read in place", kn.name, pr)
			}
		}
	}
}

// compareInPlace runs the product pr on the blocked path with kernel kn,
// on one and two threads, with and without a bias (where beta is 0), once
// after use(false) and once after use(true), and fails the test unless the
// two give C bit for bit; how names the use(true) side in the message.
func compareInPlace(t *testing.T, kn *kernel[float32], pr problem, rng *rand.Rand, how string, use func(bool)) {
	t.Helper()
	for _, threads := range []int{1, 2} {
		for _, withBias := range []bool{false, true} {
			if withBias && pr.beta != 0 {
				continue
			}
			o := makeOperands(pr, rng)
			a, b := to32(o.a), to32(o.b)
			var bias []float32
			if withBias {
				bias = make([]float32, pr.n)
				for j := range bias {
					bias[j] = float32(2*rng.Float64() - 1)
				}
			}
			var res [2][]float32
			for i, in := range []bool{false, true} {
				use(in)
				c := to32(o.c)
				sState.blocked(kn, threads, pr.transA, pr.transB, pr.m, pr.n, pr.k, float32(pr.alpha), a, o.lda, b, o.ldb, float32(pr.beta), bias, c, o.ldc)
				res[i] = c
			}
			for i := range res[0] {
				g, w := res[1][i], res[0][i]
				if math.Float32bits(g) != math.Float32bits(w) && !(math.IsNaN(float64(g)) && math.IsNaN(float64(w))) {
					t.Fatalf("%s threads=%d bias=%v %v: C[%d] = %v %s, %v packed", kn.name, threads, withBias, pr, i, g, how, w)
				}
			}
		}
	}
}
