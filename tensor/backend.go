package tensor

import (
	"fmt"
	"sync"
)

// Storage is the memory a tensor views: a flat array of elements of one
// dtype owned by one backend. The CPU backend's storage wraps a []float32 or
// []float64; a GPU backend's storage holds a device pointer. Tensors that are
// views of one another share their Storage.
type Storage interface {
	// Backend returns the backend that owns the memory.
	Backend() Backend
	// DType returns the element type.
	DType() DType
	// Len returns the number of elements.
	Len() int
}

// UnaryOp names an elementwise function of one tensor, with up to two scalar
// parameters p0, p1 (see Backend.Unary).
type UnaryOp uint8

// Unary operations. Where a parameter is used it is named in the comment.
const (
	UnaryNeg     UnaryOp = iota // -x
	UnaryExp                    // e^x
	UnaryLog                    // ln x
	UnarySqrt                   // √x
	UnaryRsqrt                  // 1/√x
	UnarySquare                 // x²
	UnaryAbs                    // |x|
	UnaryTanh                   // tanh x
	UnarySigmoid                // 1/(1+e^-x)
	UnaryReLU                   // max(x, 0)
	UnaryGELU                   // x·Φ(x) with the exact erf
	UnarySiLU                   // x·sigmoid(x)
	UnaryAffine                 // p0·x + p1 (AddScalar, MulScalar)
	UnaryClamp                  // min(max(x, p0), p1)
	UnaryPow                    // x^p0
	numUnaryOps
)

var unaryNames = [...]string{"Neg", "Exp", "Log", "Sqrt", "Rsqrt", "Square", "Abs", "Tanh",
	"Sigmoid", "ReLU", "GELU", "SiLU", "Affine", "Clamp", "Pow"}

// String returns the op's name, e.g. "GELU".
func (op UnaryOp) String() string {
	if int(op) < len(unaryNames) {
		return unaryNames[op]
	}
	return fmt.Sprintf("UnaryOp(%d)", uint8(op))
}

// BinaryOp names an elementwise function of two tensors x (first operand) and
// y (second operand), with one scalar parameter alpha (see Backend.Binary).
type BinaryOp uint8

// Binary operations. The gradient helpers take x (or y = f(x)) first and the
// upstream gradient gy second, and compute gy·f'(x).
const (
	BinaryAdd          BinaryOp = iota // x + y
	BinarySub                          // x - y
	BinaryMul                          // x · y
	BinaryDiv                          // x / y
	BinaryMax                          // max(x, y)
	BinaryMin                          // min(x, y)
	BinaryAddScaled                    // x + alpha·y
	BinaryReLUGrad                     // gy · [x > 0]
	BinaryGELUGrad                     // gy · (Φ(x) + x·φ(x))
	BinarySiLUGrad                     // gy · s(x)·(1 + x·(1-s(x)))
	BinarySigmoidGradY                 // gy · y·(1-y), x = y = sigmoid output
	BinaryTanhGradY                    // gy · (1-y²), x = y = tanh output
	BinaryLerp                         // x + alpha·(y - x)
	numBinaryOps
)

var binaryNames = [...]string{"Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "AddScaled",
	"ReLUGrad", "GELUGrad", "SiLUGrad", "SigmoidGradFromY", "TanhGradFromY", "Lerp"}

// String returns the name of the package function, e.g. "Add".
func (op BinaryOp) String() string {
	if int(op) < len(binaryNames) {
		return binaryNames[op]
	}
	return fmt.Sprintf("BinaryOp(%d)", uint8(op))
}

// ReduceOp names a reduction (see Backend.Reduce and Backend.ReduceAll).
type ReduceOp uint8

// Reductions. ReduceMaxAbs and ReduceSumSquares are only used by ReduceAll.
const (
	ReduceSum        ReduceOp = iota // Σ x
	ReduceMean                       // Σ x / n
	ReduceMax                        // max x
	ReduceLogSumExp                  // log Σ e^x, computed stably
	ReduceMaxAbs                     // max |x|
	ReduceSumSquares                 // Σ x²
	numReduceOps
)

var reduceNames = [...]string{"Sum", "Mean", "Max", "LogSumExp", "MaxAbs", "SumSquares"}

// String returns the reduction's name, e.g. "Sum".
func (op ReduceOp) String() string {
	if int(op) < len(reduceNames) {
		return reduceNames[op]
	}
	return fmt.Sprintf("ReduceOp(%d)", uint8(op))
}

// Backend executes tensor kernels on the memory it owns. The package-level op
// functions (Add, Sum, MatMul, LayerNorm, ...) check shapes and dtypes, then
// call the backend of their destination (or of their first input when the
// destination is nil); a Backend method may therefore assume that
//
//   - every tensor argument belongs to this backend and all share one dtype
//     (except Copy, which converts);
//   - shapes have been validated as documented on each method;
//   - destination tensors are not nil unless the method says they may be.
//
// Tensors passed to a Backend may be arbitrary strided views (with a non-zero
// offset and zero strides) unless the method says otherwise; a backend that
// cannot handle a layout makes a contiguous copy itself.
//
// The CPU backend is CPU. A GPU backend (package cuda) implements this
// interface and calls Register; package tensor never imports it.
type Backend interface {
	// Name identifies the backend ("cpu", "cuda").
	Name() string

	// Alloc returns zeroed storage for n elements of dtype dt.
	Alloc(dt DType, n int) Storage
	// AllocUninit returns storage for n elements of dtype dt whose contents
	// are undefined, for a result that is about to be overwritten in full
	// (a GPU backend skips the memset; the CPU's memory is zeroed anyway).
	AllocUninit(dt DType, n int) Storage
	// Release hands the memory of t's storage back to the backend at once
	// instead of when the storage becomes unreachable (a GPU backend
	// returns it to its caching allocator). t and every view of its
	// storage must not be used afterwards. The CPU backend does nothing.
	Release(t *Tensor)
	// Upload copies the contiguous CPU tensor src into dst, a contiguous
	// tensor (possibly with an offset) of this backend with src's size and dtype.
	Upload(dst, src *Tensor)
	// Download copies src, a contiguous tensor (possibly with an offset) of
	// this backend, into the contiguous CPU tensor dst of the same size and dtype.
	Download(dst, src *Tensor)

	// Fill sets every element of dst to v.
	Fill(dst *Tensor, v float64)
	// Copy sets dst = src elementwise, src broadcast to dst's shape
	// (numpy rules, already checked); the dtypes may differ (conversion).
	Copy(dst, src *Tensor)
	// Unary sets dst = op(a) elementwise; a has dst's shape.
	Unary(op UnaryOp, dst, a *Tensor, p0, p1 float64)
	// Binary sets dst = op(a, b) elementwise; a and b broadcast to dst's shape.
	// dst may alias a or b.
	Binary(op BinaryOp, dst, a, b *Tensor, alpha float64)
	// Where sets dst = cond != 0 ? a : b; cond, a, b broadcast to dst's shape.
	Where(dst, cond, a, b *Tensor)
	// MaskedFill sets dst = mask != 0 ? v : a; a has dst's shape, mask broadcasts to it.
	MaskedFill(dst, a, mask *Tensor, v float64)

	// Reduce reduces a along axis (0 <= axis < a.Rank()) into dst, whose shape
	// is a's shape with that axis removed or set to 1. op is ReduceSum,
	// ReduceMean, ReduceMax or ReduceLogSumExp.
	Reduce(op ReduceOp, dst, a *Tensor, axis int)
	// ReduceAll reduces every element of a (ReduceSum, ReduceMaxAbs,
	// ReduceSumSquares), accumulating in float64. It returns 0 for an empty
	// tensor.
	ReduceAll(op ReduceOp, a *Tensor) float64
	// NonFinite sets flag, a tensor of one element with a's dtype, to 1
	// if any element of a is NaN or infinite, and leaves it unchanged
	// otherwise. It does not wait for the result, so a training loop can
	// check many tensors over many steps and read flag once.
	NonFinite(flag, a *Tensor)
	// Argmax writes into out (len = a.Size()/a.Dim(axis)) the index of the
	// largest element along axis, first one on ties, row-major over the other axes.
	Argmax(out []int32, a *Tensor, axis int)
	// SumTo sets dst to a summed over the axes along which dst broadcasts to
	// a. dst.Rank() <= a.Rank(); a's shape is dst's shape broadcast.
	SumTo(dst, a *Tensor)
	// Softmax sets dst to softmax (or log-softmax if log) of a along axis;
	// dst and a have the same shape.
	Softmax(dst, a *Tensor, axis int, log bool)

	// Gemm sets dst = alpha·op(a)·op(b) + beta·dst with shapes validated by
	// the package function Gemm: a is (..., m, k) (or (..., k, m) if
	// transA), b likewise; batch dimensions are equal or b has rank 2 and is
	// shared; dst is (..., m, n). When beta == 0, dst's prior contents are
	// ignored (NaNs included).
	Gemm(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, beta float64)
	// GemmBias sets dst = alpha·op(a)·op(b) + bias, with shapes validated by
	// the package function GemmBias (bias has shape (n,) and is added to
	// every row); dst's prior contents are ignored. A backend without a
	// fused form copies bias into dst and calls Gemm with beta = 1.
	GemmBias(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, bias *Tensor)

	// IndexSelect sets dst to the slices of a at indices idx along axis
	// (indices already checked to be in range).
	IndexSelect(dst, a *Tensor, axis int, idx []int32)
	// ScatterAdd adds src[i, ...] into dst[idx[i], ...] (indices checked).
	ScatterAdd(dst, src *Tensor, idx []int32)
	// SegmentSum sets dst[s, ...] to the sum (mean if mean; 0 for an empty
	// segment) of src[i, ...] over i with seg[i] == s (segments checked).
	SegmentSum(dst, src *Tensor, seg []int32, mean bool)
	// GINEAggregate and GINEAggregateBackward implement the package
	// functions of the same name (arguments validated; out, h, e, gout, dh
	// and de contiguous; e, dh, de nil when absent; g's indices in range).
	// GINEAggregate overwrites out.
	GINEAggregate(out, h, e *Tensor, g *EdgeIndex)
	GINEAggregateBackward(dh, de, gout, h, e *Tensor, g *EdgeIndex)

	// LayerNorm, LayerNormBackward, SoftmaxCrossEntropy,
	// SoftmaxCrossEntropyBackward, Attention, AttentionBackward and AdamWStep
	// implement the package functions of the same name (arguments validated,
	// optional tensors nil when absent).
	LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float64)
	LayerNormBackward(dx, dgamma, dbeta, gy, x, mean, rstd, gamma *Tensor)
	SoftmaxCrossEntropy(prob, logits *Tensor, targets []int32, weight []float32) float64
	SoftmaxCrossEntropyBackward(dlogits, prob *Tensor, targets []int32, weight []float32, scale float64)
	Attention(out, probs, q, k, v, keyMask *Tensor, scale float64)
	AttentionBackward(dq, dk, dv, gout, q, k, v, probs *Tensor, scale float64)
	AdamWStep(param, grad, m, v *Tensor, lr, beta1, beta2, eps, weightDecay float64, step int)

	// LayerNormModulate, LayerNormModulateBackward, GateResidual,
	// GateResidualBackward, BiasGELU, BiasGELUBackward, FlashAttention and
	// FlashAttentionBackward implement the package functions of the same
	// name, the diffusion transformer's fused ops (arguments validated,
	// optional tensors nil when absent; see fused_dit.go).
	LayerNormModulate(y, mean, rstd, x, gamma, beta, shift, scale *Tensor, eps float64)
	LayerNormModulateBackward(dx, dgamma, dbeta, dshift, dscale, gy, x, mean, rstd, gamma, beta, scale *Tensor)
	GateResidual(out, x, gate, h *Tensor)
	GateResidualBackward(dh, dgate, gy, h, gate *Tensor)
	BiasGELU(y, x, bias *Tensor)
	BiasGELUBackward(dx, dbias, gy, x, bias *Tensor)
	FlashAttention(out, lse, q, k, v, keyMask *Tensor, scale float64)
	FlashAttentionBackward(dq, dk, dv, gout, q, k, v, out, lse, keyMask *Tensor, scale float64)

	// DeepSetScores and DeepSetScoresBackward implement the package
	// functions of the same name, the LG-VAE decoder's fused row-wise
	// DeepSet (arguments validated, s.Size() > 0, optional tensors nil when
	// absent; see fused_deepset.go).
	DeepSetScores(y, s, ctx, ws, bs, wo, bo *Tensor)
	DeepSetScoresBackward(ds, dctx, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo *Tensor)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Backend{}
)

// Register makes a backend available by name through BackendByName and
// Backends. A GPU backend calls it from its package's init. Registering a
// second backend under a name replaces the first.
func Register(b Backend) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[b.Name()] = b
}

// BackendByName returns the registered backend with the given name ("cpu"
// is always present), or nil.
func BackendByName(name string) Backend {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return registry[name]
}

// Backends returns the registered backends, CPU first.
func Backends() []Backend {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := []Backend{CPU}
	for name, b := range registry {
		if name != CPU.Name() {
			out = append(out, b)
		}
	}
	return out
}

// On returns t itself when it lives on backend b, and t.ToBackend(b)
// otherwise: the way to bring an operand to where a computation runs
// without copying it when it is already there.
func (t *Tensor) On(b Backend) *Tensor {
	if t.backend() == b {
		return t
	}
	return t.ToBackend(b)
}

// ToBackend returns a contiguous copy of t in memory of backend b (host to
// device, device to host, or a plain copy if t is already on b).
func (t *Tensor) ToBackend(b Backend) *Tensor {
	src := t.backend()
	if src == b {
		return t.Clone()
	}
	c := t.Contiguous()
	if src != CPU {
		host := New(t.dtype, t.shape...)
		src.Download(host, c)
		if b == CPU {
			return host
		}
		c = host
	}
	dst := EmptyOn(b, t.dtype, t.shape...)
	b.Upload(dst, c)
	return dst
}
