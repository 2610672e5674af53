package autograd

import (
	"math/bits"
	"sync"

	"lgflow/tensor"
)

// Buffers are pooled per dtype in size classes of four steps per octave
// (at most 25% slack), backed by sync.Pool so that an idle pool is emptied by
// the garbage collector.
const nClasses = 1 + 4*58

var (
	pool32  [nClasses]sync.Pool
	pool64  [nClasses]sync.Pool
	poolI32 [nClasses]sync.Pool // Scratch's int32 buffers
)

// sizeClass returns the class of a buffer holding n elements and its capacity.
func sizeClass(n int) (class, capacity int) {
	if n <= 64 {
		return 0, 64
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k, k >= 7
	base := 1 << (k - 1)
	step := base / 4
	j := (n - base + step - 1) / step // 1..4
	return 1 + (k-7)*4 + (j - 1), base + j*step
}

// poolBuf is a buffer lent to a tape.
type poolBuf struct {
	p32   *[]float32
	p64   *[]float64
	i32   *[]int32
	class int
}

func (b *poolBuf) put() {
	switch {
	case b.p32 != nil:
		pool32[b.class].Put(b.p32)
	case b.p64 != nil:
		pool64[b.class].Put(b.p64)
	case b.i32 != nil:
		poolI32[b.class].Put(b.i32)
	}
}

// Scratch returns an uninitialised contiguous CPU tensor of dtype dt and the
// given shape from the tape's buffer pool, for a host-side input of the
// tape's computation (a mask, a constant assembled on the CPU). Release
// takes it back: it must not be used afterwards (Clone what you keep).
//
// A training step that allocates such inputs with tensor.New takes fresh
// memory every step until the next garbage collection, and the first write
// to every page of it faults into the operating system (about 15 us a page
// on a virtual machine: 2 ms for a 512 KiB mask); a scratch buffer is a
// buffer of an earlier step.
func (tp *Tape) Scratch(dt tensor.DType, shape ...int) *tensor.Tensor {
	return tp.allocDT(dt, tensor.CPU, shape...)
}

// ScratchInt32 returns an uninitialised slice of n int32s (indices,
// targets) from the tape's buffer pool, which Release takes back (see
// Scratch).
func (tp *Tape) ScratchInt32(n int) []int32 {
	class, capacity := sizeClass(n)
	p, _ := poolI32[class].Get().(*[]int32)
	if p == nil {
		s := make([]int32, capacity)
		p = &s
	}
	tp.bufs = append(tp.bufs, poolBuf{i32: p, class: class})
	return (*p)[:n]
}

// alloc returns an uninitialised contiguous tensor of the given shape with the
// dtype and backend of like. CPU buffers come from the pool and are returned
// to it by Release.
func (tp *Tape) alloc(like *tensor.Tensor, shape ...int) *tensor.Tensor {
	return tp.allocDT(like.DType(), like.Backend(), shape...)
}

// allocDT is alloc with an explicit dtype and backend.
func (tp *Tape) allocDT(dt tensor.DType, be tensor.Backend, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if be != tensor.CPU {
		return tp.allocDevice(be, dt, shape)
	}
	class, capacity := sizeClass(n)
	switch dt {
	case tensor.Float32:
		p, _ := pool32[class].Get().(*[]float32)
		if p == nil {
			s := make([]float32, capacity)
			p = &s
		}
		tp.bufs = append(tp.bufs, poolBuf{p32: p, class: class})
		if len(shape) == 0 {
			return tensor.FromStorage(tensor.FromFloat32((*p)[:1]).Storage())
		}
		return tensor.FromFloat32((*p)[:n], shape...)
	case tensor.Float64:
		p, _ := pool64[class].Get().(*[]float64)
		if p == nil {
			s := make([]float64, capacity)
			p = &s
		}
		tp.bufs = append(tp.bufs, poolBuf{p64: p, class: class})
		if len(shape) == 0 {
			return tensor.FromStorage(tensor.FromFloat64((*p)[:1]).Storage())
		}
		return tensor.FromFloat64((*p)[:n], shape...)
	}
	panic("autograd: unsupported dtype " + dt.String())
}

// zeros is alloc followed by zeroing.
func (tp *Tape) zeros(like *tensor.Tensor, shape ...int) *tensor.Tensor {
	t := tp.alloc(like, shape...)
	if like.Backend() == tensor.CPU {
		if t.DType() == tensor.Float32 {
			clear(t.Data32())
		} else {
			clear(t.Data64())
		}
		return t
	}
	return t.Zero()
}

// contig returns t if it is contiguous, else a contiguous copy in a tape
// buffer.
func (tp *Tape) contig(t *tensor.Tensor) *tensor.Tensor {
	if t.IsContiguous() {
		return t
	}
	return tensor.Copy(tp.alloc(t, t.Shape()...), t)
}
