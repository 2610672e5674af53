// Package autograd is a hand-written reverse-mode automatic differentiation
// engine over lgflow/tensor.
//
// A forward pass records its operations on a Tape; Backward walks the tape
// in reverse and applies each operation's vector-Jacobian product. Each
// family of ops lives in one file with its forward and backward side by side
// (binary.go, unary.go, reduce.go, matmul.go, shape.go, index.go, gine.go,
// mask.go, norm.go, attention.go, loss.go). What an op's backward needs is
// saved by name in a small struct of its own (attentionSaved, linearSaved,
// ...), whose backward method is the op's vector-Jacobian product; the
// structs live in slabs on the tape, so recording allocates nothing
// (saved.go).
//
//	w := autograd.NewParam(tensor.RandN(rng, tensor.Float32, 16, 8)) // once
//	for step := range steps {
//		tp := autograd.NewTape()
//		y := tp.Linear(autograd.NewConst(x), w, nil)
//		loss := tp.MSE(y, autograd.NewConst(target), nil)
//		tp.Backward(loss)  // w.Grad += dloss/dw
//		... optimiser step, w.ZeroGrad() ...
//		tp.Release()       // recycle every buffer of this step
//	}
//
// Design points:
//   - No global graph state: a Tape per forward pass, so passes in different
//     goroutines are independent. Parameters (NewParam) are shared leaves;
//     their gradient accumulation is guarded by a mutex.
//   - A no-grad tape (NoGrad) records nothing, for sampling and for
//     self-conditioning passes; its results carry no graph.
//   - Buffers for values and gradients come from a size-classed pool and are
//     returned by Tape.Release, so long training runs do not grow the heap.
//     Vars created by a tape are invalid after its Release.
//   - Gradients are accumulated in place where the kernel allows it (GEMM
//     with beta = 1, ScatterAdd, fused LayerNorm), and passed on without
//     copying where they are unchanged (views, Add).
//   - Message passing on edge lists has a fused kernel (GINEAggregate, a
//     tensor.Backend op on every backend) that never materialises per-edge
//     messages; GINEAggregateIndexed takes the edges as a tensor.EdgeIndex
//     built once per batch, which a GPU backend uploads once for all the
//     layers and the backward pass.
//
// Backends: ops built on tensor kernels run on whatever backend holds their
// inputs. The kernels written here run on the CPU only: BatchNorm, Attention with a SameGroup or (B, N, M) mask, and the backward
// passes of Abs, Clamp, Max, IndexSelect (axis > 0) and SegmentMean.
//
// Every op's backward is checked against central finite differences in
// float64 with CheckGrad, which other packages use for their layers too.
package autograd
