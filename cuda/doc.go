// Package cuda is lgflow's GPU backend: a tensor.Backend whose tensors live
// in NVIDIA GPU memory.
//
// It uses no cgo. The NVIDIA libraries are loaded at run time with purego:
// the driver API (libcuda.so.1), cuBLAS (libcublas.so.13, .12 or .11) for
// matrix products, and NVRTC (libnvrtc.so.13, .12 or .11.2) to compile the
// package's CUDA C++ kernels (embedded .cu files, function templates
// instantiated for float and double) for the device's architecture once per
// process. Importing the package has no side effects; a build or test run
// never needs CUDA.
//
// Use:
//
//	if ok, why := cuda.Available(); !ok {
//		log.Printf("no GPU: %s", why)
//	}
//	gpu, err := cuda.Init() // loads, compiles, and calls tensor.Register
//	if err != nil { ... }
//	x := xHost.ToBackend(gpu)  // host -> device copy
//	y := tensor.MatMul(nil, x, w, false, true)
//	yHost := y.ToBackend(tensor.CPU) // device -> host copy
//
// Every op of package tensor works on GPU tensors: the op functions
// dispatch to the Backend methods, which accept strided views (transposes,
// slices, broadcasts) directly. Data32/Data64 of a GPU tensor panic (as for
// any non-CPU tensor); At, Set, Item, Float64s and String copy to the host.
// Copies between host and device happen only through ToBackend (or these
// accessors).
//
// Memory: tensors' device memory comes from a caching allocator and returns
// to its cache when a tensor's storage becomes unreachable (a
// runtime.AddCleanup) or at once with Release (tensor.Release); an
// autograd tape releases every buffer it allocated when the tape is
// released, so a training loop reuses the same blocks step after step
// (MemStats: Allocs stops growing). Results that an op overwrites in full
// are allocated without a memset (AllocUninit). The cache is bounded
// (SetCacheLimit): when a request misses it while more than the limit is
// cached, the largest cached blocks go back to the driver, so batches of
// varying shapes do not pile up blocks of every size. EmptyCache hands the
// whole cache back to the driver. All work is queued on one CUDA stream, so results
// are ready in program order; host reads wait for them, and a training
// loop avoids them (tensor.FlagNonFinite checks values on the device).
//
// Errors: Backend methods panic with an *Error on a CUDA failure; it
// matches tensor.ErrDevice (and ErrOutOfMemory when memory is exhausted),
// which vae.Train and flow.Train recover (tensor.CatchDeviceError) and
// return as errors.
//
// Numerics: float32 elementwise functions use CUDA's single-precision math
// (within a few ulp of the CPU backend's float64-then-rounded values);
// reductions, norms and softmax statistics accumulate in float64 like the
// CPU backend; matrix products are cuBLAS SGEMM/DGEMM, with TensorFloat-32
// only when enabled (SetTF32; lgflow's training commands enable it where
// SupportsTF32 unless -tf32=false). ScatterAdd and SegmentSum are bit-identical
// to the CPU backend by default (SetDeterministic). GINEAggregate and the dh
// of its backward are bit-identical to the CPU in either mode (segment sums
// over the tensor.EdgeIndex's groupings, which are uploaded once per index);
// the per-class de sums tiles of edges, then the tiles, without atomics.
//
// Libraries are looked up by soname through dlopen (LD_LIBRARY_PATH, the
// ld.so cache), in the directories of LGFLOW_CUDA_PATH (colon-separated,
// searched first; e.g. the lib folders of the nvidia-cublas and
// nvidia-cuda-nvrtc Python wheels), and in $CUDA_HOME/lib64 and
// /usr/local/cuda/lib64.
//
// Environment: LGFLOW_CUDA_DISABLE=1 makes the package report no GPU;
// LGFLOW_CUDA_SYNC=1 synchronises after every kernel so that an
// asynchronous error names its kernel; LGFLOW_CUDA_TF32=1 enables TF32.
package cuda
