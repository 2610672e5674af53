package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"lgflow/tensor"
)

// Backend is the CUDA implementation of tensor.Backend on one GPU. Its
// tensors live in device memory; every kernel is queued on one stream of the
// device's primary context, so operations run in program order and a host
// read (Download, At, Float64s, ReduceAll, Argmax, SoftmaxCrossEntropy)
// waits for the work queued before it.
//
// A Backend is safe for concurrent use: methods are serialised by a mutex
// (the GPU still overlaps their execution with the caller, since launches
// are asynchronous). Methods panic with an *Error on a CUDA failure, e.g.
// device memory exhausted (errors.Is(err, ErrOutOfMemory)) even after
// releasing the allocator's cache; Backend methods have no error results.
type Backend struct {
	mu sync.Mutex

	drv  *driver
	blas *cublas
	rtc  *nvrtc
	dev  *device
	prog *program

	ctx, stream, handle, module uintptr
	fns                         [numKernels][4]uintptr

	args    kargs      // launch arguments, reused under mu
	scal    [2]float64 // cuBLAS alpha, beta (host pointer mode), heap-resident
	scal32  [2]float32
	alloc   allocator
	hostI32 []int32 // host scratch for index uploads, reused under mu

	maxGrid       int  // blocks of grid-stride kernels
	syncEach      bool // LGFLOW_CUDA_SYNC=1: synchronise and check after every launch
	deterministic bool // ScatterAdd/SegmentSum by sorted order rather than atomics
	tf32          bool
}

var (
	initOnce   sync.Once
	theBackend *Backend
	initErr    error

	probeOnce   sync.Once
	probeReason string
	probeInfo   string
)

// Init initialises the CUDA backend on device 0 on first use (loading
// libcuda, cuBLAS and NVRTC, creating a stream and compiling the kernels,
// which takes a few seconds), registers it with tensor.Register under the
// name "cuda", and returns it. Later calls return the same backend, or the
// same error: a machine without a GPU or without the libraries gets an error
// naming what is missing.
func Init() (tensor.Backend, error) {
	b, err := Default()
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Default is Init returning the concrete *Backend, for the methods that are
// not part of tensor.Backend (MemStats, SetTF32, Release, ...).
func Default() (*Backend, error) {
	initialise(0)
	return theBackend, initErr
}

// initialise opens the process's backend on device ordinal, once: later
// calls, whatever their ordinal, leave it as the first one opened it.
func initialise(ordinal int) {
	initOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				theBackend, initErr = nil, fmt.Errorf("cuda: initialisation panicked: %v", r)
			}
		}()
		if reason := disabledReason(); reason != "" {
			initErr = errors.New(reason)
			return
		}
		theBackend, initErr = open(defaultLibs, ordinal)
		if initErr == nil {
			tensor.Register(theBackend)
		}
	})
}

// Available reports whether the CUDA libraries load and a GPU is present,
// without compiling kernels. When it is false the string says why (e.g.
// "cuda: cannot load libcuda (tried libcuda.so.1, libcuda.so): ..." or
// "cuda: cuInit: CUDA_ERROR_NO_DEVICE ..."); when true it describes the
// device and libraries. It never panics and caches its answer.
func Available() (bool, string) {
	probeOnce.Do(func() {
		if reason := disabledReason(); reason != "" {
			probeReason = reason
			return
		}
		probeInfo, probeReason = probe(defaultLibs)
	})
	if probeReason != "" {
		return false, probeReason
	}
	return true, probeInfo
}

func disabledReason() string {
	if os.Getenv("LGFLOW_CUDA_DISABLE") == "1" {
		return "cuda: disabled by LGFLOW_CUDA_DISABLE=1"
	}
	return ""
}

// probe loads the libraries named by libs and looks for a device. It returns
// a description of the device, or a non-empty reason why CUDA is unusable.
func probe(libs libNames) (info, reason string) {
	defer func() {
		if r := recover(); r != nil {
			info, reason = "", fmt.Sprintf("cuda: probing panicked: %v", r)
		}
	}()
	drv, err := loadDriver(libs.cuda)
	if err != nil {
		return "", err.Error()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev, err := drv.openDevice(0)
	if err != nil {
		return "", err.Error()
	}
	blas, err := loadCublas(libs.cublas)
	if err != nil {
		return "", err.Error()
	}
	rtc, err := loadNVRTC(libs.nvrtc)
	if err != nil {
		return "", err.Error()
	}
	return fmt.Sprintf("%s (sm_%d%d, %d SMs, %.1f GiB), driver %d, %s, %s (NVRTC %s)",
		dev.name, dev.major, dev.minor, dev.sms, float64(dev.totalMem)/(1<<30), dev.driverVer,
		blas.file, rtc.file, rtc.versionString()), ""
}

func loadDriver(names []string) (*driver, error) {
	h, file, err := openLib("the CUDA driver (libcuda)", names)
	if err != nil {
		return nil, err
	}
	d := &driver{file: file}
	if err := bind(h, file, d.table()); err != nil {
		return nil, err
	}
	return d, nil
}

// open creates a backend on device ordinal with the given libraries.
func open(libs libNames, ordinal int) (*Backend, error) {
	drv, err := loadDriver(libs.cuda)
	if err != nil {
		return nil, err
	}
	blas, err := loadCublas(libs.cublas)
	if err != nil {
		return nil, err
	}
	rtc, err := loadNVRTC(libs.nvrtc)
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev, err := drv.openDevice(ordinal)
	if err != nil {
		return nil, err
	}
	if dev.major < 6 {
		return nil, fmt.Errorf("cuda: %s has compute capability %d.%d; lgflow's kernels need 6.0 or newer", dev.name, dev.major, dev.minor)
	}
	b := &Backend{drv: drv, blas: blas, rtc: rtc, dev: dev, deterministic: true}
	b.alloc.free = map[uint64][]uintptr{}
	b.alloc.envLimit = parseCacheLimitMiB(os.Getenv("LGFLOW_CUDA_CACHE_LIMIT_MIB"))
	b.syncEach = os.Getenv("LGFLOW_CUDA_SYNC") == "1"
	b.maxGrid = max(dev.sms, 1) * 32
	if err := drv.check("cuDevicePrimaryCtxRetain", call(drv.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&b.ctx)), uintptr(dev.handle))); err != nil {
		return nil, err
	}
	if err := drv.check("cuCtxSetCurrent", call(drv.cuCtxSetCurrent, b.ctx)); err != nil {
		return nil, err
	}
	if err := drv.check("cuStreamCreate", call(drv.cuStreamCreate, uintptr(unsafe.Pointer(&b.stream)), streamNonBlocking)); err != nil {
		return nil, err
	}
	if err := blas.check("cublasCreate_v2", call(blas.create, uintptr(unsafe.Pointer(&b.handle)))); err != nil {
		return nil, err
	}
	if err := blas.check("cublasSetStream_v2", call(blas.setStream, b.handle, b.stream)); err != nil {
		return nil, err
	}
	b.tf32 = os.Getenv("LGFLOW_CUDA_TF32") == "1"
	if err := b.applyMathMode(); err != nil {
		return nil, err
	}
	if err := b.loadKernels(); err != nil {
		return nil, err
	}
	return b, nil
}

// loadKernels compiles the embedded kernel source for the device, loads the
// module and resolves every kernel instantiation.
func (b *Backend) loadKernels() error {
	src, err := kernelSource()
	if err != nil {
		return err
	}
	exprs := allKernelExprs()
	cc := b.dev.major*10 + b.dev.minor
	arch, cubin := chooseArch(cc, b.rtc.supportedArchs(), b.rtc.cubin != 0)
	prog, err := b.rtc.compileProgram(src, "lgflow_kernels.cu", exprs, arch, cubin, nil)
	if err != nil {
		return err
	}
	code := call(b.drv.cuModuleLoadData, uintptr(unsafe.Pointer(&b.module)), uintptr(unsafe.Pointer(&prog.image[0])))
	runtime.KeepAlive(prog)
	if code != 0 && cubin {
		// The CUBIN does not suit the driver: fall back to PTX, which the
		// driver compiles itself.
		arch = fmt.Sprintf("compute_%d", cc)
		if prog, err = b.rtc.compileProgram(src, "lgflow_kernels.cu", exprs, arch, false, nil); err != nil {
			return err
		}
		code = call(b.drv.cuModuleLoadData, uintptr(unsafe.Pointer(&b.module)), uintptr(unsafe.Pointer(&prog.image[0])))
		runtime.KeepAlive(prog)
	}
	if err := b.drv.check("cuModuleLoadData", code); err != nil {
		return fmt.Errorf("%w (kernels compiled for %s by %s)", err, arch, b.rtc.file)
	}
	b.prog = prog
	for k := range numKernels {
		for v := range variants(k) {
			e := kernelExpr(k, v)
			name := cstr(prog.names[e])
			if err := b.drv.check("cuModuleGetFunction", call(b.drv.cuModuleGetFunction, uintptr(unsafe.Pointer(&b.fns[k][v])), b.module, uintptr(unsafe.Pointer(&name[0])))); err != nil {
				return fmt.Errorf("%w (kernel %s, lowered %q)", err, e, prog.names[e])
			}
		}
	}
	return nil
}

func (b *Backend) applyMathMode() error {
	mode := cublasDefaultMath
	if b.tf32 {
		mode = cublasTF32TensorMath
	}
	return b.blas.check("cublasSetMathMode", call(b.blas.setMathMode, b.handle, uintptr(mode)))
}

// enter locks the backend and makes its context current on this goroutine's
// OS thread (pinned until exit).
func (b *Backend) enter() {
	b.mu.Lock()
	runtime.LockOSThread()
	if err := b.drv.check("cuCtxSetCurrent", call(b.drv.cuCtxSetCurrent, b.ctx)); err != nil {
		runtime.UnlockOSThread()
		b.mu.Unlock()
		panic(err)
	}
}

func (b *Backend) exit() {
	runtime.UnlockOSThread()
	b.mu.Unlock()
}

// must panics with err if it is not nil.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Name returns "cuda".
func (b *Backend) Name() string { return "cuda" }

// DeviceInfo describes the GPU and libraries of a Backend.
type DeviceInfo struct {
	Name              string // e.g. "NVIDIA H100 80GB HBM3"
	ComputeCapability [2]int // major, minor
	Multiprocessors   int
	TotalMemory       uint64 // bytes
	DriverVersion     int    // e.g. 12040 for 12.4
	Arch              string // what the kernels were compiled for, e.g. "sm_90"
	CUBLAS, NVRTC     string // library files loaded
	NVRTCVersion      string
}

// Device describes the backend's GPU.
func (b *Backend) Device() DeviceInfo {
	return DeviceInfo{
		Name: b.dev.name, ComputeCapability: [2]int{b.dev.major, b.dev.minor}, Multiprocessors: b.dev.sms,
		TotalMemory: b.dev.totalMem, DriverVersion: b.dev.driverVer, Arch: b.prog.arch,
		CUBLAS: b.blas.file, NVRTC: b.rtc.file, NVRTCVersion: b.rtc.versionString(),
	}
}

// SetTF32 enables (or disables) TensorFloat-32 tensor-core math for float32
// matrix products (cublasSetMathMode with CUBLAS_TF32_TENSOR_OP_MATH): about
// 10 bits of mantissa in the products, several times the throughput (8x
// on an H100). It is off by default (or on with LGFLOW_CUDA_TF32=1), so
// that library results match the CPU's; lgflow's training commands turn
// it on where SupportsTF32 (their -tf32 flag).
func (b *Backend) SetTF32(on bool) {
	b.enter()
	defer b.exit()
	b.tf32 = on
	must(b.applyMathMode())
}

// TF32 reports whether float32 matrix products use TensorFloat-32.
func (b *Backend) TF32() bool {
	b.enter()
	defer b.exit()
	return b.tf32
}

// SupportsTF32 reports whether the GPU has TensorFloat-32 tensor cores
// (compute capability 8.0, Ampere, or newer). On older GPUs SetTF32(true)
// is accepted by cuBLAS but changes nothing.
func (b *Backend) SupportsTF32() bool { return b.dev.major >= 8 }

// SetDeterministic chooses how ScatterAdd and SegmentSum sum rows that share
// a destination. With on (the default) the host sorts the indices and every
// destination row is summed in increasing source order, giving the CPU
// backend's exact results; with off the GPU adds with atomics, which is
// faster for large scatters but makes float sums vary in their last bits
// from run to run.
func (b *Backend) SetDeterministic(on bool) {
	b.enter()
	defer b.exit()
	b.deterministic = on
}

// Synchronize waits for all queued work and reports the first asynchronous
// error, if any.
func (b *Backend) Synchronize() error {
	b.enter()
	defer b.exit()
	return b.sync()
}

func (b *Backend) sync() error {
	return b.drv.check("cuStreamSynchronize", call(b.drv.cuStreamSynchronize, b.stream))
}

// launch runs kernel k (variant v) with the packed b.args on a grid of
// gx×gy blocks of bx threads.
func (b *Backend) launch(k kid, v int, gx, gy, bx int) {
	if gx <= 0 || gy <= 0 {
		return
	}
	fn := b.fns[k][v]
	code := call(b.drv.cuLaunchKernel, fn, uintptr(gx), uintptr(gy), 1, uintptr(bx), 1, 1, 0, b.stream, b.args.params(), 0)
	runtime.KeepAlive(&b.args)
	if err := b.drv.check("cuLaunchKernel", code); err != nil {
		panic(fmt.Errorf("%w (kernel %s, grid %d×%d, block %d)", err, kernelExpr(k, v), gx, gy, bx))
	}
	if b.syncEach {
		if err := b.sync(); err != nil {
			panic(fmt.Errorf("%w (after kernel %s)", err, kernelExpr(k, v)))
		}
	}
}

const threads = 256

// grid1 returns the number of blocks of a grid-stride kernel over n items.
func (b *Backend) grid1(n int) int {
	return max(1, min((n+threads-1)/threads, b.maxGrid))
}

// dtv returns the kernel variant of dtype dt.
func dtv(dt tensor.DType) int {
	if dt == tensor.Float32 {
		return 0
	}
	return 1
}

// rowThreads returns a block size for one block per row of k elements: a
// multiple of 32 between 32 and limit.
func rowThreads(k, limit int) int {
	t := 32
	for t < k && t < limit {
		t *= 2
	}
	return t
}

// Select returns the tensor backend a -device flag names: tensor.CPU for
// "cpu", and for "cuda" (or "gpu") the GPU backend, loaded by Init on first
// use. Anything else is an error.
func Select(device string) (tensor.Backend, error) {
	switch device {
	case "cpu", "":
		return tensor.CPU, nil
	case "cuda", "gpu":
		b, err := Init()
		if err != nil {
			return nil, fmt.Errorf("-device %s: %w", device, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown device %q (want cpu or cuda)", device)
}
