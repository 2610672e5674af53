package cuda

// The device side of data-parallel training: what a device communicator
// (package lgflow/dist/nccl) needs from the backend to sum and broadcast
// tensors in device memory on the backend's stream. *Backend has the
// methods of dist.Device (Ordinal, Do, Done) and of trainer.DeviceBackend
// (DevicePointer) without importing either package: trainer recognises
// the backend by those interfaces, and package cuda stays below dist and
// trainer.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/ebitengine/purego"

	"lgflow/tensor"
)

// cudaErrorNotReady is CUDA_ERROR_NOT_READY: cuStreamQuery's "work still
// queued".
const cudaErrorNotReady = 600

// streamQuery holds cuStreamQuery, bound on first use from the driver
// library the backend loaded (driver.go's table predates it). Zero with
// err nil: the library lacks it (the test emulator), and Done waits with
// cuStreamSynchronize instead.
var streamQuery struct {
	once sync.Once
	fn   uintptr
	err  error
}

// queryFn returns cuStreamQuery of b's driver library (0 if it lacks it).
func (b *Backend) queryFn() (uintptr, error) {
	streamQuery.once.Do(func() {
		h, err := purego.Dlopen(b.drv.file, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			streamQuery.err = fmt.Errorf("cuda: reopening %s for cuStreamQuery: %v", b.drv.file, err)
			return
		}
		if p, err := purego.Dlsym(h, "cuStreamQuery"); err == nil {
			streamQuery.fn = p
		}
	})
	return streamQuery.fn, streamQuery.err
}

// Ordinal returns the CUDA device ordinal of the backend's GPU (among
// the devices CUDA_VISIBLE_DEVICES leaves visible).
func (b *Backend) Ordinal() int { return b.dev.ordinal }

// Do runs fn with the backend locked (its other methods wait), the
// calling goroutine locked to its OS thread and the backend's context
// current on it, and passes the handle of the backend's stream (a
// CUstream, the same as a cudaStream_t): work that fn queues on it runs
// after every kernel queued before Do and before those queued after. It
// implements dist.Device for device communicators (dist/nccl), whose
// libraries use the CUDA runtime, which adopts the current context. A
// CUDA failure or a panic in fn is returned as an error.
func (b *Backend) Do(fn func(stream uintptr) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("cuda: Do: %w", e)
			} else {
				err = fmt.Errorf("cuda: Do: %v", r)
			}
		}
	}()
	b.enter()
	defer b.exit()
	return fn(b.stream)
}

// Done reports, without waiting, whether all the work queued on the
// backend's stream so far has completed (cuStreamQuery), and the error of
// a failed kernel or copy. A driver without cuStreamQuery (the test
// emulator) makes it wait for the stream instead and report true.
func (b *Backend) Done() (done bool, err error) {
	fn, err := b.queryFn()
	if err != nil {
		return false, err
	}
	b.enter()
	defer b.exit()
	if fn == 0 {
		if err := b.sync(); err != nil {
			return false, err
		}
		return true, nil
	}
	code := call(fn, b.stream)
	if code == cudaErrorNotReady {
		return false, nil
	}
	if err := b.drv.check("cuStreamQuery", code); err != nil {
		return false, err
	}
	return true, nil
}

// DevicePointer returns the device address of t's first element (its
// storage's block plus its offset), for handing t to a device
// communicator on the backend's stream. It returns 0 for an empty tensor,
// and an error for a tensor of another backend or whose storage was
// released.
func (b *Backend) DevicePointer(t *tensor.Tensor) (uintptr, error) {
	st, ok := t.Storage().(*storage)
	if !ok || st.b != b {
		return 0, fmt.Errorf("cuda: DevicePointer: tensor of shape %v is on backend %q, not this CUDA backend", t.Shape(), t.Backend().Name())
	}
	if st.blk == nil {
		return 0, nil
	}
	if st.blk.ptr == 0 {
		return 0, fmt.Errorf("cuda: DevicePointer: tensor of shape %v uses released storage", t.Shape())
	}
	return st.blk.ptr + uintptr(t.Offset()*t.DType().Size()), nil
}

// InitDevice is Init on device ordinal: the first call opens the backend
// there (the GPU of a data-parallel process is its local rank, see
// DeviceForLocalRank) and registers it as "cuda"; later calls, and Init,
// Default and Select, return that backend. It fails when the backend was
// already opened on another device: call it before anything else opens
// the backend.
func InitDevice(ordinal int) (*Backend, error) {
	if ordinal < 0 {
		return nil, fmt.Errorf("cuda: InitDevice: device %d is negative", ordinal)
	}
	initialise(ordinal)
	if initErr != nil {
		return nil, initErr
	}
	if got := theBackend.dev.ordinal; got != ordinal {
		return nil, fmt.Errorf("cuda: InitDevice(%d): the backend was already opened on device %d (call InitDevice before Init, Default or Select)", ordinal, got)
	}
	return theBackend, nil
}

// DeviceForLocalRank returns the device ordinal of the process of local
// rank localRank (one process per GPU): localRank itself, or 0 when
// CUDA_VISIBLE_DEVICES shows this process a single GPU (launchers that
// give each process its own GPU, such as srun --gpus-per-task=1, or a
// Kubernetes pod with one GPU).
func DeviceForLocalRank(localRank int) int {
	return deviceForLocalRank(localRank, os.Getenv("CUDA_VISIBLE_DEVICES"))
}

func deviceForLocalRank(localRank int, visible string) int {
	if v := strings.TrimSpace(visible); v != "" && !strings.Contains(v, ",") {
		if _, err := strconv.Atoi(v); err == nil || strings.HasPrefix(v, "GPU-") || strings.HasPrefix(v, "MIG-") {
			return 0
		}
	}
	return localRank
}
