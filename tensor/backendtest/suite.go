// Package backendtest is a conformance suite for implementations of
// tensor.Backend. Run exercises every Backend method through the public op
// functions of package tensor on tensors created on the backend under test
// (tensor.NewOn, ToBackend), with awkward shapes (size 1, primes, rank 0,
// broadcasting) and layouts (transposed and sliced views, strided
// destinations, in-place updates), and compares each result with the CPU
// backend's within a tolerance suited to the dtype and the operation.
//
// A GPU backend's test calls it as
//
//	func TestConformance(t *testing.T) {
//		b, err := cuda.Init()
//		if err != nil {
//			t.Skip(err)
//		}
//		backendtest.Run(t, b)
//	}
//
// Running it on tensor.CPU itself checks the suite (every comparison is then
// exact).
package backendtest

import (
	"errors"
	"math"
	"testing"

	"lgflow/tensor"
)

// A test case exercises one Backend method (its name) and compares with the
// CPU backend.
type testCase struct {
	method string
	run    func(t *testing.T, s *suite)
}

// cases lists a subtest per tensor.Backend method, in interface order.
var cases = []testCase{
	{"Name", testName},
	{"Alloc", testAlloc},
	{"AllocUninit", testAllocUninit},
	{"Release", testRelease},
	{"Upload", testUploadDownload},
	{"Download", testUploadDownload},
	{"Fill", testFill},
	{"Copy", testCopy},
	{"Unary", testUnary},
	{"Binary", testBinary},
	{"Where", testWhere},
	{"MaskedFill", testMaskedFill},
	{"Reduce", testReduce},
	{"ReduceAll", testReduceAll},
	{"NonFinite", testNonFinite},
	{"Argmax", testArgmax},
	{"SumTo", testSumTo},
	{"Softmax", testSoftmax},
	{"Gemm", testGemm},
	{"GemmBias", testGemmBias},
	{"IndexSelect", testIndexSelect},
	{"ScatterAdd", testScatterAdd},
	{"SegmentSum", testSegmentSum},
	{"GINEAggregate", testGINEAggregate},
	{"GINEAggregateBackward", testGINEAggregateBackward},
	{"LayerNorm", testLayerNorm},
	{"LayerNormBackward", testLayerNormBackward},
	{"SoftmaxCrossEntropy", testCrossEntropy},
	{"SoftmaxCrossEntropyBackward", testCrossEntropyBackward},
	{"Attention", testAttention},
	{"AttentionBackward", testAttentionBackward},
	{"AdamWStep", testAdamW},
	{"LayerNormModulate", testLayerNormModulate},
	{"LayerNormModulateBackward", testLayerNormModulateBackward},
	{"GateResidual", testGateResidual},
	{"GateResidualBackward", testGateResidualBackward},
	{"BiasGELU", testBiasGELU},
	{"BiasGELUBackward", testBiasGELUBackward},
	{"FlashAttention", testFlashAttention},
	{"FlashAttentionBackward", testFlashAttentionBackward},
	{"DeepSetScores", testDeepSetScores},
	{"DeepSetScoresBackward", testDeepSetScoresBackward},
}

// Methods returns the names of the Backend methods the suite covers, one
// subtest of Run each.
func Methods() []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.method
	}
	return out
}

// suite carries the backend under test.
type suite struct {
	b tensor.Backend
}

// Run runs the conformance suite on b as subtests of t, one per Backend
// method. Inputs are seeded, so a failure reproduces.
func Run(t *testing.T, b tensor.Backend) {
	t.Helper()
	if b == nil {
		t.Fatal("backendtest.Run: nil backend")
	}
	s := &suite{b: b}
	for _, c := range cases {
		t.Run(c.method, func(t *testing.T) { c.run(t, s) })
	}
}

// RunOne runs only the subtest of one Backend method (a name of Methods) on
// b, for a backend with a mode that affects that method.
func RunOne(t *testing.T, b tensor.Backend, method string) {
	t.Helper()
	for _, c := range cases {
		if c.method == method {
			c.run(t, &suite{b: b})
			return
		}
	}
	t.Fatalf("backendtest.RunOne: no subtest for method %q", method)
}

var dtypes = []tensor.DType{tensor.Float32, tensor.Float64}

// tol is a tolerance: |got - want| <= atol + rtol·|want|.
type tol struct{ rtol, atol float64 }

// kinds of operations, for tolerances.
const (
	kExact   = iota // same arithmetic on every backend (copies, +, ×, comparisons)
	kElem           // one or two roundings apart (fused multiply-add, division), of operands up to about 2 in magnitude
	kTrans          // transcendental functions of the device's math library
	kReduce         // sums accumulated in float64 in another order
	kSoftmax        // exponentials and float64 sums
	kNorm           // fused kernels (LayerNorm, cross entropy, attention)
)

// tolFor returns the tolerance of an operation kind on dtype dt.
func tolFor(dt tensor.DType, kind int) tol {
	if dt == tensor.Float64 {
		switch kind {
		case kExact:
			return tol{0, 0}
		case kElem:
			// A contracted a + s·b differs by a rounding of s·b, which
			// cancellation can make large next to the result.
			return tol{1e-15, 2e-16}
		case kTrans:
			return tol{1e-13, 1e-15}
		default:
			return tol{1e-11, 1e-12}
		}
	}
	switch kind {
	case kExact:
		return tol{0, 0}
	case kElem:
		return tol{3e-7, 1e-7}
	case kTrans:
		return tol{1e-5, 1e-6}
	case kReduce:
		return tol{2e-6, 1e-6}
	case kSoftmax:
		return tol{1e-5, 1e-6}
	default:
		return tol{1e-4, 1e-5}
	}
}

// gemmTol is the tolerance of a product with inner dimension k.
func gemmTol(dt tensor.DType, k int) tol {
	if dt == tensor.Float64 {
		return tol{1e-12, 1e-13 * float64(k+1)}
	}
	return tol{1e-5, 2e-6 * float64(k+1)}
}

// near reports whether got is within tl of want (NaNs match NaNs, infinities
// match equal infinities).
func near(got, want float64, tl tol) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	if math.IsInf(got, 0) || math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tl.atol+tl.rtol*math.Abs(want)
}

// reporter is the part of *testing.T that the checks use.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// check fails t unless got is a tensor of the backend under test with want's
// shape and dtype, and values within tl of want's.
func (s *suite) check(t reporter, what string, got, want *tensor.Tensor, tl tol) {
	t.Helper()
	if got.Backend() != s.b {
		t.Errorf("%s: result is on backend %q, want %q", what, got.Backend().Name(), s.b.Name())
		return
	}
	s.checkValues(t, what, got, want, tl)
}

// checkValues is check without the backend test (for results copied to the
// host).
func (s *suite) checkValues(t reporter, what string, got, want *tensor.Tensor, tl tol) {
	t.Helper()
	if got.DType() != want.DType() || !equalInts(got.Shape(), want.Shape()) {
		t.Errorf("%s: got %v %v, want %v %v", what, got.DType(), got.Shape(), want.DType(), want.Shape())
		return
	}
	checkSlices(t, what, got.Float64s(), want.Float64s(), got.Shape(), tl)
}

func checkSlices(t reporter, what string, g, w []float64, shape []int, tl tol) {
	t.Helper()
	bad := 0
	for i := range w {
		if !near(g[i], w[i], tl) {
			if bad < 4 {
				t.Errorf("%s: element %d (of shape %v) = %.10g, want %.10g (diff %.3g)", what, i, shape, g[i], w[i], g[i]-w[i])
			}
			bad++
		}
	}
	if bad > 4 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(w))
	}
}

// checkScalar fails t unless got is within tl of want.
func checkScalar(t reporter, what string, got, want float64, tl tol) {
	t.Helper()
	if !near(got, want, tl) {
		t.Errorf("%s = %.12g, want %.12g (diff %.3g)", what, got, want, got-want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rand returns a CPU tensor with values uniform in [lo, hi).
func rand(r *tensor.RNG, dt tensor.DType, lo, hi float64, shape ...int) *tensor.Tensor {
	return tensor.FillUniform(tensor.New(dt, shape...), r, lo, hi)
}

// signs returns a CPU tensor of random ±1.
func signs(r *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
	x := tensor.New(dt, shape...)
	v := x.Float64s()
	for i := range v {
		v[i] = 1
		if r.Uniform() < 0.5 {
			v[i] = -1
		}
	}
	return tensor.Copy(x, tensor.FromFloat64(v).Reshape(shape...))
}

// mask01 returns a CPU tensor of random 0 and 1, 1 with probability p.
func mask01(r *tensor.RNG, dt tensor.DType, p float64, shape ...int) *tensor.Tensor {
	x := tensor.New(dt, shape...)
	v := x.Float64s()
	for i := range v {
		v[i] = 0
		if r.Uniform() < p {
			v[i] = 1
		}
	}
	return tensor.Copy(x, tensor.FromFloat64(v).Reshape(shape...))
}

// randInts returns a CPU tensor of random integers in [0, n).
func randInts(r *tensor.RNG, dt tensor.DType, n int, shape ...int) *tensor.Tensor {
	x := tensor.New(dt, shape...)
	v := x.Float64s()
	for i := range v {
		v[i] = float64(r.Intn(n))
	}
	return tensor.Copy(x, tensor.FromFloat64(v).Reshape(shape...))
}

// on returns a contiguous copy of the CPU tensor x on the backend under test.
func (s *suite) on(x *tensor.Tensor) *tensor.Tensor { return x.ToBackend(s.b) }

// A layout turns a CPU tensor into a tensor of the backend under test with
// the same shape and values but a particular memory layout; it returns nil
// when the layout does not apply to the rank.
type layout struct {
	name string
	make func(s *suite, x *tensor.Tensor) *tensor.Tensor
}

var layouts = []layout{
	{"contiguous", func(s *suite, x *tensor.Tensor) *tensor.Tensor { return s.on(x) }},
	{"transposed", func(s *suite, x *tensor.Tensor) *tensor.Tensor {
		if x.Rank() < 2 {
			return nil
		}
		return s.on(x.T()).T()
	}},
	{"sliced", func(s *suite, x *tensor.Tensor) *tensor.Tensor {
		if x.Rank() < 1 {
			return nil
		}
		shape := append([]int(nil), x.Shape()...)
		last := shape[len(shape)-1]
		shape[len(shape)-1] = last + 3
		w := tensor.NewOn(s.b, x.DType(), shape...).Fill(99)
		v := w.Slice(-1, 2, 2+last)
		tensor.Copy(v, x)
		return v
	}},
}

// stridedDst returns a non-contiguous zero tensor of the backend with the
// given shape: a slice of a wider tensor filled with 77 outside the view.
func (s *suite) stridedDst(dt tensor.DType, shape ...int) *tensor.Tensor {
	if len(shape) == 0 {
		return tensor.NewOn(s.b, dt)
	}
	wide := append([]int(nil), shape...)
	wide[len(wide)-1] += 2
	w := tensor.NewOn(s.b, dt, wide...).Fill(77)
	return w.Slice(-1, 1, 1+shape[len(shape)-1]).Zero()
}

// mustPanicBackend reports whether f panics with an error wrapping
// tensor.ErrBackend.
func mustPanicBackend(f func()) (ok bool) {
	defer func() {
		r := recover()
		err, isErr := r.(error)
		ok = isErr && errors.Is(err, tensor.ErrBackend)
	}()
	f()
	return false
}
