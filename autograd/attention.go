package autograd

import (
	"fmt"
	"math"

	"lgflow/internal/parallel"
	"lgflow/tensor"
)

// MaskMode says how a (B, N) token mask (1 = real token) restricts attention.
type MaskMode uint8

const (
	// KeyPadding lets query i attend to key j iff mask_j = 1 (padding keys
	// are ignored; padding queries still see the real tokens).
	KeyPadding MaskMode = iota
	// SameGroup lets query i attend to key j iff mask_i = mask_j: real
	// tokens see only real tokens and padding sees only padding, so no row
	// is empty (the DiT rule).
	SameGroup
)

// String returns the mode's name.
func (m MaskMode) String() string {
	switch m {
	case KeyPadding:
		return "KeyPadding"
	case SameGroup:
		return "SameGroup"
	}
	return fmt.Sprintf("MaskMode(%d)", uint8(m))
}

// Attention is fused scaled dot-product attention over heads:
//
//	out = softmax(scale·q·kᵀ + mask)·v
//
// q is (B, H, N, Dh), k and v are (B, H, M, Dh) and out is (B, H, N, Dh).
// mask is nil (everything allowed), a (B, N) token mask (N = M) interpreted
// by mode, or a (B, N, M) matrix (query i may attend to key j iff
// mask[b,i,j] ≠ 0; mode is ignored). A query with no allowed key gets 0.
// Key padding without a full mask uses the tensor package's fused kernels:
// tensor.FlashAttention, which keeps only the row log-sum-exp (B·H·N
// elements) for the backward pass, when N <= tensor.FlashAttentionMaxTokens
// and Dh <= tensor.FlashAttentionMaxHeadDim and it is the faster or the
// only affordable choice (see takeFlash), and tensor.Attention, which keeps
// the probabilities (B·H·N·M elements), otherwise. The other modes run
// here (CPU) on batched GEMMs and keep the probabilities.
func (tp *Tape) Attention(q, k, v *Var, mask *tensor.Tensor, mode MaskMode, scale float64) *Var {
	tp.checkIn("Attention", q)
	tp.checkIn("Attention", k)
	tp.checkIn("Attention", v)
	checkDType("Attention", q.Value, k.Value)
	checkDType("Attention", q.Value, v.Value)
	if q.Rank() != 4 || k.Rank() != 4 || v.Rank() != 4 {
		panic(fmt.Sprintf("autograd.Attention: q %v, k %v, v %v must be (B, H, N, Dh)", q.Shape(), k.Shape(), v.Shape()))
	}
	b, h, nq, dh := q.Dim(0), q.Dim(1), q.Dim(2), q.Dim(3)
	m := k.Dim(2)
	if k.Dim(0) != b || k.Dim(1) != h || k.Dim(3) != dh || !sameShape(k.Shape(), v.Shape()) {
		panic(fmt.Sprintf("autograd.Attention: q %v, k %v, v %v do not match", q.Shape(), k.Shape(), v.Shape()))
	}
	if mask != nil {
		ms := mask.Shape()
		switch {
		case len(ms) == 2 && ms[0] == b && ms[1] == nq && nq == m:
		case len(ms) == 3 && ms[0] == b && ms[1] == nq && ms[2] == m:
		default:
			panic(fmt.Sprintf("autograd.Attention: mask %v for q %v and k %v: want (B, N) or (B, N, M)", ms, q.Shape(), k.Shape()))
		}
	}
	fused := useFusedAttention && nq == m && (mask == nil || (mask.Rank() == 2 && mode == KeyPadding))
	flash := fused && useFlashAttention && tensor.FlashAttentionFits(nq, dh) &&
		takeFlash(onDevice(q.Value), tp.anyGrad(q, k, v), b*h*nq*m*q.Value.DType().Size())
	var qv, kv, vv, y, probs, lse *tensor.Tensor
	switch {
	case flash:
		// As below, with the row log-sum-exp instead of the probabilities.
		qv, kv, vv = q.Value, k.Value, v.Value
		y = tp.alloc(q.Value, b, nq, h, dh).Permute(0, 2, 1, 3)
		if tp.anyGrad(q, k, v) {
			lse = tp.alloc(q.Value, b, h, nq) // for the backward pass
		}
		tensor.FlashAttention(y, lse, qv, kv, vv, mask, scale)
	case fused:
		probs = tp.alloc(q.Value, b, h, nq, m)
		// The fused kernel reads strided heads (such as views into a packed
		// (B, N, 3, H, Dh) projection) without copying them, and writes y
		// in token-major storage (B, N, H, Dh), so that merging the heads
		// back into (B, N, H·Dh) needs no copy either.
		qv, kv, vv = q.Value, k.Value, v.Value
		y = tp.alloc(q.Value, b, nq, h, dh).Permute(0, 2, 1, 3)
		tensor.Attention(y, probs, qv, kv, vv, mask, scale)
	default:
		probs = tp.alloc(q.Value, b, h, nq, m)
		qv, kv, vv = tp.contig(q.Value), tp.contig(k.Value), tp.contig(v.Value)
		y = tp.alloc(q.Value, b, h, nq, dh)
		allowed := attentionAllowed(mask, mode, b, nq, m)
		s3 := probs.Reshape(b*h, nq, m)
		tensor.Gemm(s3, scale, qv.Reshape(b*h, nq, dh), kv.Reshape(b*h, m, dh), false, true, 0)
		if s3.DType() == tensor.Float32 {
			maskedSoftmax(s3.Data32(), allowed, b, h, nq, m)
		} else {
			maskedSoftmax(s3.Data64(), allowed, b, h, nq, m)
		}
		tensor.Gemm(y.Reshape(b*h, nq, dh), 1, s3, vv.Reshape(b*h, m, dh), false, false, 0)
	}
	out, s := record(tp, y, tp.anyGrad(q, k, v), attentionKind)
	if s != nil {
		*s = attentionSaved{
			q: q, k: k, v: v,
			qv: qv, kv: kv, vv: vv,
			probs: probs, lse: lse, y: y, mask: mask,
			batch: b, heads: h, queries: nq, keys: m, headDim: dh,
			scale: scale,
			fused: fused, flash: flash,
		}
	}
	return out
}

// attentionSaved is Attention's backward state.
type attentionSaved struct {
	q, k, v *Var // the inputs, for their gradients
	// qv, kv, vv are the values the forward read: the inputs' own (possibly
	// strided) values on the fused path, contiguous copies otherwise.
	qv, kv, vv    *tensor.Tensor
	probs         *tensor.Tensor // the attention probabilities P (B, H, N, M); 0 where masked (nil if flash)
	lse, y        *tensor.Tensor // flash: the row log-sum-exp (B, H, N) and the output
	mask          *tensor.Tensor // flash: the key mask (B, N) or nil
	batch, heads  int            // B, H
	queries, keys int            // N, M
	headDim       int            // Dh
	scale         float64        // the scores were scale·q·kᵀ
	fused         bool           // the forward ran tensor.Attention: tensor.AttentionBackward runs the backward
	flash         bool           // the forward ran tensor.FlashAttention: tensor.FlashAttentionBackward runs the backward
}

var attentionKind = newSavedKind[attentionSaved]()

// useFusedAttention routes key-padding attention to tensor.Attention.
var useFusedAttention = true

// useFlashAttention routes fused attention that fits to
// tensor.FlashAttention where takeFlash chooses it.
var useFlashAttention = true

// takeFlash reports whether fused attention that fits the FlashAttention
// kernel takes it, given where it runs, whether gradients are needed and the
// bytes its (B, H, N, M) probabilities would take.
//
// On the CPU: when no gradient is needed (sampling, the self-conditioning
// pass), or when flashCPUTraining is set. The backward's recomputation of
// the probabilities costs more time (about 5% of attention's forward and
// backward at DiT-small size) than reading them back, so training keeps the
// probabilities by default; the results are the same bit for bit either way.
//
// Off the CPU: only when the probabilities would take at least
// flashDeviceMinBytes. On an H100 the probabilities path (cuBLAS batched
// GEMMs and a row kernel) is faster at the DiT presets' sizes
// (cuda.BenchmarkAttentionDiT): DiT-T planar (B 256, N 64, H 6; 25 MB of
// probabilities) 0.22 against 0.37 ms forward, 0.63 against 1.51 ms forward
// and backward; DiT-B MOSES (B 2048, N 38, H 12; 142 MB) 1.70 against 3.25
// and 3.95 against 14.09 ms. The kernel runs one thread per query or key
// row, too little parallelism for a GPU at N <= 128; it stays for memory.
func takeFlash(device, grad bool, probBytes int) bool {
	if device {
		return probBytes >= flashDeviceMinBytes
	}
	return flashCPUTraining || !grad
}

// flashDeviceMinBytes is the size of one attention call's probabilities
// from which the GPU path takes tensor.FlashAttention to save memory.
var flashDeviceMinBytes = 1 << 30

// flashCPUTraining makes CPU attention that needs gradients take the
// FlashAttention path too (less memory: B·H·N instead of B·H·N² per layer).
var flashCPUTraining = false

// attentionAllowed expands the mask into a (B, N, M) table of allowed pairs,
// or nil when everything is allowed.
func attentionAllowed(mask *tensor.Tensor, mode MaskMode, b, nq, m int) []bool {
	if mask == nil {
		return nil
	}
	vals := maskValues(mask)
	allowed := make([]bool, b*nq*m)
	if mask.Rank() == 3 {
		for i, x := range vals {
			allowed[i] = x != 0
		}
		return allowed
	}
	for bi := 0; bi < b; bi++ {
		row := vals[bi*m : (bi+1)*m]
		for i := 0; i < nq; i++ {
			a := allowed[(bi*nq+i)*m : (bi*nq+i+1)*m]
			for j, x := range row {
				if mode == SameGroup {
					a[j] = (x != 0) == (row[i] != 0)
				} else {
					a[j] = x != 0
				}
			}
		}
	}
	return allowed
}

// maskValues returns the elements of a mask tensor as float64 (row-major).
func maskValues(t *tensor.Tensor) []float64 {
	c := t.Contiguous()
	if c.Backend() != tensor.CPU {
		c = c.ToBackend(tensor.CPU)
	}
	if c.DType() == tensor.Float64 {
		return c.Data64()
	}
	d := c.Data32()
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(v)
	}
	return out
}

// maskedSoftmax replaces each row of scores s (B·H rows of N×M) by its
// softmax over the allowed entries; disallowed entries become 0, and a row
// with none allowed becomes all 0.
func maskedSoftmax[T float](s []T, allowed []bool, b, h, nq, m int) {
	rows := b * h * nq
	s32, is32 := any(s).([]float32)
	parallel.Rows(rows, rows*m, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := s[r*m : (r+1)*m]
			var al []bool
			if allowed != nil {
				bi, i := r/(h*nq), r%nq
				al = allowed[(bi*nq+i)*m : (bi*nq+i+1)*m]
			}
			mx := T(0)
			found := false
			for j, x := range row {
				if (al == nil || al[j]) && (!found || x > mx) {
					mx, found = x, true
				}
			}
			if !found {
				clear(row)
				continue
			}
			var sum float64
			var f32 []float32
			if is32 {
				f32 = s32[r*m : (r+1)*m]
			}
			for j, x := range row {
				if al == nil || al[j] {
					var e T
					if is32 {
						e = T(expf(f32[j] - float32(mx)))
					} else {
						e = T(math.Exp(float64(x - mx)))
					}
					row[j] = e
					sum += float64(e)
				} else {
					row[j] = 0
				}
			}
			inv := T(1 / sum)
			for j := range row {
				row[j] *= inv
			}
		}
	})
}

// backward, with P the probabilities and G the output gradient:
//
//	dV = Pᵀ·G,  dP = G·Vᵀ,  dS = P ⊙ (dP − rowsum(dP ⊙ P)),
//	dQ = scale·dS·K,  dK = scale·dSᵀ·Q.
func (s *attentionSaved) backward(tp *Tape, out *Var) {
	q, k, v := s.q, s.k, s.v
	nq, m, dh := s.queries, s.keys, s.headDim
	if s.flash {
		dq := tp.alloc(q.Value, q.Shape()...)
		dk := tp.alloc(k.Value, k.Shape()...)
		dv := tp.alloc(v.Value, v.Shape()...)
		tensor.FlashAttentionBackward(dq, dk, dv, out.Grad, s.qv, s.kv, s.vv, s.y, s.lse, s.mask, s.scale)
		tp.addGrad(q, dq, true)
		tp.addGrad(k, dk, true)
		tp.addGrad(v, dv, true)
		return
	}
	if s.fused {
		dq := tp.alloc(q.Value, q.Shape()...)
		dk := tp.alloc(k.Value, k.Shape()...)
		dv := tp.alloc(v.Value, v.Shape()...)
		tensor.AttentionBackward(dq, dk, dv, out.Grad, s.qv, s.kv, s.vv, s.probs, s.scale)
		tp.addGrad(q, dq, true)
		tp.addGrad(k, dk, true)
		tp.addGrad(v, dv, true)
		return
	}
	gout := tp.contig(out.Grad)
	bh := s.batch * s.heads
	p3 := s.probs.Reshape(bh, nq, m)
	g3 := gout.Reshape(bh, nq, dh)
	if v.requiresGrad {
		dst, beta := tp.gradDst(v)
		tensor.Gemm(dst.Reshape(bh, m, dh), 1, p3, g3, true, false, beta)
		tp.doneGrad(v)
	}
	if !q.requiresGrad && !k.requiresGrad {
		return
	}
	ds := tp.alloc(s.probs, bh, nq, m)
	tensor.Gemm(ds, 1, g3, s.vv.Reshape(bh, m, dh), false, true, 0)
	if ds.DType() == tensor.Float32 {
		softmaxGradRows(ds.Data32(), p3.Data32(), bh*nq, m)
	} else {
		softmaxGradRows(ds.Data64(), p3.Data64(), bh*nq, m)
	}
	if q.requiresGrad {
		dst, beta := tp.gradDst(q)
		tensor.Gemm(dst.Reshape(bh, nq, dh), s.scale, ds, s.kv.Reshape(bh, m, dh), false, false, beta)
		tp.doneGrad(q)
	}
	if k.requiresGrad {
		dst, beta := tp.gradDst(k)
		tensor.Gemm(dst.Reshape(bh, m, dh), s.scale, ds, s.qv.Reshape(bh, nq, dh), true, false, beta)
		tp.doneGrad(k)
	}
}

// softmaxGradRows turns dP into dS = P ⊙ (dP − rowsum(dP ⊙ P)) in place.
func softmaxGradRows[T float](d, p []T, rows, m int) {
	parallel.Rows(rows, rows*m, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			dr, pr := d[r*m:(r+1)*m], p[r*m:(r+1)*m]
			var s float64
			for j, x := range dr {
				s += float64(x) * float64(pr[j])
			}
			st := T(s)
			for j, x := range dr {
				dr[j] = pr[j] * (x - st)
			}
		}
	})
}
