package trainer

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"lgflow/dist"
	"lgflow/optim"
	"lgflow/tensor"
)

// fakeGPU is a tensor backend whose "device memory" is host memory, with
// the methods of DeviceBackend: enough of a GPU backend to move tensors
// to and from it and hand their addresses to a device communicator. The
// embedded nil Backend panics on any other method.
type fakeGPU struct {
	tensor.Backend
	ordinal int
	mu      sync.Mutex
	ptrs    map[uintptr]ref // the addresses DevicePointer handed out
}

// ref is an element of a fake storage.
type ref struct {
	st  *fakeStorage
	off int
}

type fakeStorage struct {
	b   *fakeGPU
	dt  tensor.DType
	f32 []float32
	f64 []float64
}

func (s *fakeStorage) Backend() tensor.Backend { return s.b }
func (s *fakeStorage) DType() tensor.DType     { return s.dt }
func (s *fakeStorage) Len() int                { return max(len(s.f32), len(s.f64)) }

func (g *fakeGPU) Name() string { return fmt.Sprint("fakegpu", g.ordinal) }

func (g *fakeGPU) Alloc(dt tensor.DType, n int) tensor.Storage {
	if dt == tensor.Float32 {
		return &fakeStorage{b: g, dt: dt, f32: make([]float32, n)}
	}
	return &fakeStorage{b: g, dt: dt, f64: make([]float64, n)}
}

func (g *fakeGPU) AllocUninit(dt tensor.DType, n int) tensor.Storage { return g.Alloc(dt, n) }

// values returns the elements of a contiguous fake tensor (a view of its
// storage).
func values(t *tensor.Tensor) []float64 {
	st := t.Storage().(*fakeStorage)
	out := make([]float64, t.Size())
	for i := range out {
		if st.dt == tensor.Float32 {
			out[i] = float64(st.f32[t.Offset()+i])
		} else {
			out[i] = st.f64[t.Offset()+i]
		}
	}
	return out
}

func setValues(t *tensor.Tensor, v []float64) {
	st := t.Storage().(*fakeStorage)
	for i, x := range v {
		if st.dt == tensor.Float32 {
			st.f32[t.Offset()+i] = float32(x)
		} else {
			st.f64[t.Offset()+i] = x
		}
	}
}

func (g *fakeGPU) Upload(dst, src *tensor.Tensor) { setValues(dst, src.Float64s()) }

func (g *fakeGPU) Download(dst, src *tensor.Tensor) {
	v := values(src)
	if dst.DType() == tensor.Float32 {
		for i, x := range v {
			dst.Data32()[i] = float32(x)
		}
		return
	}
	copy(dst.Data64(), v)
}

func (g *fakeGPU) Copy(dst, src *tensor.Tensor) { setValues(dst, values(src)) }

func (g *fakeGPU) Ordinal() int { return g.ordinal }

func (g *fakeGPU) Do(fn func(stream uintptr) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return fn(0xabc)
}

func (g *fakeGPU) Done() (bool, error) { return true, nil }

func (g *fakeGPU) DevicePointer(t *tensor.Tensor) (uintptr, error) {
	st, ok := t.Storage().(*fakeStorage)
	if !ok || st.b != g {
		return 0, fmt.Errorf("tensor on %s", t.Backend().Name())
	}
	var p uintptr
	if st.dt == tensor.Float32 {
		p = uintptr(unsafe.Pointer(&st.f32[t.Offset()]))
	} else {
		p = uintptr(unsafe.Pointer(&st.f64[t.Offset()]))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ptrs == nil {
		g.ptrs = map[uintptr]ref{}
	}
	g.ptrs[p] = ref{st, t.Offset()}
	return p, nil
}

// fakeComm is a communicator of 2 ranks whose peer holds the same buffers
// as this rank: a sum doubles every buffer, a broadcast leaves it. With
// dev set it is a dist.DeviceComm on dev (deviceComm); it records which
// path each call took.
type fakeComm struct {
	dev        dist.Device
	hostCalls  []string
	devCalls   []string
	devBuffers [][]dist.DeviceBuffer
}

type deviceComm struct{ *fakeComm }

func (c *fakeComm) Rank() int { return 0 }
func (c *fakeComm) Size() int { return 2 }
func (c *fakeComm) AllReduceSum32(buf []float32) error {
	c.hostCalls = append(c.hostCalls, fmt.Sprint("sum32 ", len(buf)))
	for i := range buf {
		buf[i] *= 2
	}
	return nil
}
func (c *fakeComm) AllReduceSum64(buf []float64) error {
	c.hostCalls = append(c.hostCalls, fmt.Sprint("sum64 ", len(buf)))
	for i := range buf {
		buf[i] *= 2
	}
	return nil
}
func (c *fakeComm) Broadcast32(buf []float32, root int) error {
	c.hostCalls = append(c.hostCalls, fmt.Sprint("bcast32 ", len(buf)))
	return nil
}
func (c *fakeComm) Broadcast64(buf []float64, root int) error {
	c.hostCalls = append(c.hostCalls, fmt.Sprint("bcast64 ", len(buf)))
	return nil
}
func (c *fakeComm) BroadcastBytes(buf []byte, root int) error { return nil }
func (c *fakeComm) Barrier() error                            { return nil }
func (c *fakeComm) SetTimeout(d time.Duration)                {}
func (c *fakeComm) Close() error                              { return nil }

func (c deviceComm) Device() dist.Device { return c.dev }

func (c deviceComm) AllReduceSumDevice(bufs []dist.DeviceBuffer) error {
	c.devCalls = append(c.devCalls, fmt.Sprint("sum ", len(bufs)))
	c.devBuffers = append(c.devBuffers, bufs)
	g := c.dev.(*fakeGPU)
	for _, b := range bufs {
		r, ok := g.ptrs[b.Ptr]
		if !ok {
			return fmt.Errorf("%#x is not a device address", b.Ptr)
		}
		for i := range b.Len {
			if b.Float64 {
				r.st.f64[r.off+i] *= 2
			} else {
				r.st.f32[r.off+i] *= 2
			}
		}
	}
	return nil
}

func (c deviceComm) BroadcastDevice(bufs []dist.DeviceBuffer, root int) error {
	c.devCalls = append(c.devCalls, fmt.Sprint("bcast ", len(bufs)))
	c.devBuffers = append(c.devBuffers, bufs)
	return nil
}

var _ dist.DeviceComm = deviceComm{}
var _ DeviceBackend = (*fakeGPU)(nil)

// TestDevicePath checks that AllReduceTensor and BroadcastTensor hand a
// tensor to the device communicator when it lives on the communicator's
// device, and take the host path otherwise (a CPU tensor, a host-only
// communicator, another device), with the same sums either way.
func TestDevicePath(t *testing.T) {
	gpu0, gpu1 := &fakeGPU{ordinal: 0}, &fakeGPU{ordinal: 1}
	for _, tc := range []struct {
		name    string
		backend tensor.Backend
		dt      tensor.DType
		comm    func(*fakeComm) dist.Comm
		device  bool // whether the device path must be taken
	}{
		{"GPU tensor, device comm, float32", gpu0, tensor.Float32, func(c *fakeComm) dist.Comm { c.dev = gpu0; return deviceComm{c} }, true},
		{"GPU tensor, device comm, float64", gpu0, tensor.Float64, func(c *fakeComm) dist.Comm { c.dev = gpu0; return deviceComm{c} }, true},
		{"CPU tensor, device comm", tensor.CPU, tensor.Float32, func(c *fakeComm) dist.Comm { c.dev = gpu0; return deviceComm{c} }, false},
		{"GPU tensor, host comm", gpu0, tensor.Float32, func(c *fakeComm) dist.Comm { return c }, false},
		{"GPU tensor, comm on another GPU", gpu0, tensor.Float64, func(c *fakeComm) dist.Comm { c.dev = gpu1; return deviceComm{c} }, false},
		{"GPU tensor, device comm without device", gpu0, tensor.Float32, func(c *fakeComm) dist.Comm { return deviceComm{c} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeComm{}
			c := tc.comm(fc)
			x := tensor.FromFloat64([]float64{1, 2, 3, 4, 5, 6}, 2, 3).To(tc.dt).ToBackend(tc.backend)
			if err := AllReduceTensor(c, x); err != nil {
				t.Fatal(err)
			}
			if got := x.ToBackend(tensor.CPU).Float64s(); !slices.Equal(got, []float64{2, 4, 6, 8, 10, 12}) {
				t.Errorf("sum = %v", got)
			}
			if err := BroadcastTensor(c, x, 0); err != nil {
				t.Fatal(err)
			}
			wantDev, wantHost := 0, 2
			if tc.device {
				wantDev, wantHost = 2, 0
			}
			if len(fc.devCalls) != wantDev || len(fc.hostCalls) != wantHost {
				t.Errorf("device calls %q, host calls %q; want %d and %d", fc.devCalls, fc.hostCalls, wantDev, wantHost)
			}
			if tc.device {
				p, _ := gpu0.DevicePointer(x)
				b := fc.devBuffers[0][0]
				if b.Ptr != p || b.Len != 6 || b.Float64 != (tc.dt == tensor.Float64) {
					t.Errorf("device buffer %+v, want the tensor's (%#x, 6, %v)", b, p, tc.dt)
				}
			}
		})
	}
}

// TestAllReduceGradsDevicePath checks that the flat gradient buffer of
// parameters on the communicator's device is summed in one device call
// (its whole length, from its first element), and that CPU gradients
// still take the host path.
func TestAllReduceGradsDevicePath(t *testing.T) {
	gpu := &fakeGPU{}
	st := gpu.Alloc(tensor.Float32, 10)
	flat := tensor.FromStorage(st, 10)
	setValues(flat, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	params := []optim.Param{
		{Name: "w", Value: tensor.New(tensor.Float32, 2, 3), Grad: tensor.NewView(st, 0, []int{2, 3}, []int{3, 1})},
		{Name: "b", Value: tensor.New(tensor.Float32, 4), Grad: tensor.NewView(st, 6, []int{4}, []int{1})},
	}
	fc := &fakeComm{dev: gpu}
	if err := AllReduceGrads(deviceComm{fc}, params); err != nil {
		t.Fatal(err)
	}
	if len(fc.devCalls) != 1 || len(fc.hostCalls) != 0 || len(fc.devBuffers[0]) != 1 {
		t.Fatalf("device calls %q (%v), host calls %q: want one device call of one buffer", fc.devCalls, fc.devBuffers, fc.hostCalls)
	}
	if b := fc.devBuffers[0][0]; b.Len != 10 || b.Float64 {
		t.Errorf("device buffer %+v, want the 10 float32 of the flat buffer", b)
	}
	if p, _ := gpu.DevicePointer(flat); fc.devBuffers[0][0].Ptr != p {
		t.Errorf("device buffer at %#x, the flat buffer at %#x", fc.devBuffers[0][0].Ptr, p)
	}
	if got := values(flat); !slices.Equal(got, []float64{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}) {
		t.Errorf("summed gradients %v", got)
	}

	// CPU gradients with the same communicator: the host path.
	cpu := []optim.Param{{Name: "w", Value: tensor.New(tensor.Float64, 3), Grad: tensor.FromFloat64([]float64{1, 2, 3}, 3)}}
	fc = &fakeComm{dev: gpu}
	if err := AllReduceGrads(deviceComm{fc}, cpu); err != nil {
		t.Fatal(err)
	}
	if len(fc.devCalls) != 0 || len(fc.hostCalls) != 1 || !slices.Equal(cpu[0].Grad.Float64s(), []float64{2, 4, 6}) {
		t.Errorf("CPU gradients: device calls %q, host calls %q, sums %v", fc.devCalls, fc.hostCalls, cpu[0].Grad.Float64s())
	}
}

// TestBroadcastTensorsGroups checks that broadcastTensors sends the device
// tensors in one device call, in order, and the others through the host.
func TestBroadcastTensorsGroups(t *testing.T) {
	gpu := &fakeGPU{}
	a := tensor.FromFloat64([]float64{1, 2}, 2).ToBackend(gpu)
	b := tensor.FromFloat64([]float64{3}, 1)
	c := tensor.FromFloat64([]float64{4, 5, 6}, 3).To(tensor.Float32).ToBackend(gpu)
	empty := tensor.New(tensor.Float64, 0).ToBackend(gpu)
	fc := &fakeComm{dev: gpu}
	if err := broadcastTensors(deviceComm{fc}, []*tensor.Tensor{a, b, empty, c}, 0); err != nil {
		t.Fatal(err)
	}
	if len(fc.devCalls) != 1 || len(fc.devBuffers[0]) != 2 || len(fc.hostCalls) != 1 {
		t.Fatalf("device calls %q %v, host calls %q", fc.devCalls, fc.devBuffers, fc.hostCalls)
	}
	pa, _ := gpu.DevicePointer(a)
	pc, _ := gpu.DevicePointer(c)
	if got := fc.devBuffers[0]; got[0] != (dist.DeviceBuffer{Ptr: pa, Len: 2, Float64: true}) || got[1] != (dist.DeviceBuffer{Ptr: pc, Len: 3}) {
		t.Errorf("device buffers %+v", got)
	}
}
