package dist

// Device-side collectives. A GPU engine (package lgflow/dist/nccl) sums and
// broadcasts buffers that live in device memory, on the stream that orders
// the compute backend's work, with no copy through the host. Package dist
// knows neither tensors nor CUDA: the compute backend offers its device
// as a Device (package cuda's *Backend implements it), and the trainer
// hands the engine DeviceBuffers, the device addresses of its flat
// gradient and parameter buffers.

// Device is the device side of a compute backend, as a device engine needs
// it: the GPU, the stream on which the backend queues its work in order,
// and a way to run code with the backend's context current. Package
// cuda's *Backend implements it.
type Device interface {
	// Ordinal returns the CUDA device ordinal of the GPU (within the
	// devices the process sees).
	Ordinal() int
	// Do runs fn on the calling goroutine, locked to its OS thread, with
	// the device's context current and the backend's other calls held off
	// until fn returns. stream is the handle (a CUstream, the same as a
	// cudaStream_t) of the stream on which the backend queues its work: an
	// operation fn queues there runs after the backend's earlier work and
	// before its later work. Do returns fn's error.
	Do(fn func(stream uintptr) error) error
	// Done reports, without waiting, whether all the work queued on the
	// stream so far has completed (cuStreamQuery); err reports a device
	// failure.
	Done() (done bool, err error)
}

// DeviceBuffer is a contiguous buffer of floats in device memory.
type DeviceBuffer struct {
	// Ptr is the device address of the first element.
	Ptr uintptr
	// Len is the number of elements.
	Len int
	// Float64 tells the element type: float64 when true, else float32.
	Float64 bool
}

// DeviceComm is a communicator whose all-reduce and broadcast also work on
// device memory: the buffers are reduced in place on Device's stream,
// after the work the backend queued before the call. Its other methods
// (the Comm ones, on host slices) still serve small host data: losses,
// configurations, checksums. Every rank must make the same device and host
// collective calls in the same order. A call returns once the operation
// has completed on the device (or failed, or timed out: see
// Comm.SetTimeout), so a rank that dies or hangs is reported by the
// watchdog rather than by a later wait of the backend that never ends.
type DeviceComm interface {
	Comm
	// Device returns the device whose memory and stream the device
	// collectives use: buffers must be that device's memory.
	Device() Device
	// AllReduceSumDevice replaces every buffer, on every rank, by the
	// elementwise sum of the ranks' buffers (one fused group of
	// operations).
	AllReduceSumDevice(bufs []DeviceBuffer) error
	// BroadcastDevice copies every buffer of rank root into the buffer of
	// every other rank.
	BroadcastDevice(bufs []DeviceBuffer, root int) error
}
