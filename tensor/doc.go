// Package tensor provides n-dimensional float32/float64 arrays and the
// numerical kernels of lgflow's models: elementwise math with numpy
// broadcasting, reductions, batched matrix products, message-passing
// indexing (gather, scatter-add, segment sums), and fused LayerNorm,
// softmax cross entropy, masked multi-head attention and AdamW, each with
// its backward pass.
//
// # Tensors and views
//
// A *Tensor is a strided view on a Storage: element (i0, ..., in-1) lives at
// storage index Offset() + Σ ik·Strides()[k]. Reshape (of a contiguous
// tensor), Transpose, T, Permute, Slice, Expand, Unsqueeze, Squeeze and
// Split return views that share their source's storage: writing through a
// view is visible in the source. Expand broadcasts with stride 0. Clone,
// Contiguous (of a non-contiguous tensor), To and ToBackend copy.
// FromFloat32/FromFloat64 wrap a caller's slice without copying, and
// Data32/Data64 expose a contiguous CPU tensor's elements.
//
// # The op convention
//
// Every operation is a package function whose first argument is the
// destination:
//
//	Add(dst, a, b)              // dst = a + b
//	MatMul(dst, a, b, false, true)
//	Sum(dst, a, axis, keepdim)
//
// If dst is nil a new contiguous result is allocated and returned;
// otherwise dst must already have the result's shape and dtype, is
// overwritten, and is returned. With a preallocated dst the CPU kernels
// allocate nothing, so training loops can run garbage-free. Elementwise ops
// accept dst aliasing an input (in-place updates such as Add(x, x, y)).
// Inputs of one op share a dtype and a backend. The few ops that accumulate
// say so (ScatterAdd, GINEAggregateBackward, and the dgamma/dbeta of
// LayerNormBackward).
//
// # Broadcasting
//
// Binary elementwise ops, Where and Copy follow numpy: shapes are aligned at
// their last dimension, and a dimension of size 1 (or a missing leading one)
// is repeated to match the other operand. SumTo is the reverse: it sums a
// broadcast result back down to an operand's shape, which is how gradients
// of broadcast operands are formed.
//
// # Errors
//
// Operations panic on programmer errors — shapes that do not fit, an index
// or axis out of range, mixed dtypes or backends — with an error value that
// names the operation and the shapes and wraps ErrShape, ErrIndex, ErrDType,
// ErrBackend or ErrLayout (test with errors.Is after recover). Nothing in
// this package depends on data or I/O, so nothing else fails.
//
// # Speed
//
// The CPU kernels are written once for float32 and float64 with generics.
// Strided loops merge dimensions that are contiguous for every operand and
// take fast paths for the common layouts (same-shape contiguous operands, a
// row vector broadcast over a matrix, a per-row scalar); other layouts are
// gathered in blocks. Tensors above about 32K elements (16K for copies and
// element-wise arithmetic) are split over the calling goroutine and
// GOMAXPROCS-1 helper goroutines, shared with the GEMM (internal/parallel;
// no goroutine per call), the caller taking the chunks from the front and
// the helpers from the back, so that consecutive kernels run the same rows
// on the same cores.
// Chunk boundaries depend only on tensor sizes, so reductions give the same
// bits whatever the number of cores. Float32 matrix products run on the
// assembly micro-kernels of internal/gemm (see GEMMKernel; LGFLOW_GEMM=go
// forces the portable kernel); SetBF16MatMul (or LGFLOW_GEMM_BF16=1) makes
// the large ones round their operands to bf16 and accumulate in float32
// where the CPU has AVX512_BF16 (off by default). Float32 exp, tanh, sigmoid, SiLU and GELU
// use AVX2+FMA assembly where the CPU has it (LGFLOW_MATHF=go forces the
// portable Go kernels) and portable approximations elsewhere, both accurate
// to about 1e-7; the two paths may differ in the last bit, so results are
// bit-identical across machines only when they use the same kernels.
// Float32 sums accumulate in float64. The AVX2 kernels of the elementwise
// arithmetic, the LayerNorm rows and the gated residual (also switched off
// by LGFLOW_MATHF=go) give exactly the Go loops' bits.
//
// # Backends
//
// Storage belongs to a Backend. CPU is the default of every constructor. A
// GPU backend (package cuda) implements Backend and calls Register; this
// package never imports it. An op runs on the backend of its dst (or of its
// first input when dst is nil); ToBackend copies a tensor between host and
// device, and Copy accepts operands on different backends.
//
// # Randomness
//
// RNG is a seeded generator (PCG from math/rand/v2 plus fixed algorithms
// for floats, bounded integers and normals) whose output is identical on
// every machine: the same seed always gives the same parameters.
package tensor
