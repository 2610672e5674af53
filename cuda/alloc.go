package cuda

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"lgflow/tensor"
)

// allocator is a caching device allocator. Sizes are rounded up to buckets
// (multiples of 512 bytes below 1 MiB, then 16 buckets per power of two);
// freed blocks go to their bucket's free list and are reused by later
// allocations of the same bucket without calling cuMemFree. Reuse is safe
// without events because every kernel runs on the backend's one stream:
// work queued after the reuse runs after work queued before the free.
type allocator struct {
	mu       sync.Mutex
	free     map[uint64][]uintptr // bucket size -> cached blocks
	cached   uint64               // bytes in free lists
	inUse    uint64               // bytes handed out
	peak     uint64               // maximum of inUse
	reserved uint64               // bytes obtained from cuMemAlloc and not freed
	requests uint64               // getBlock calls
	allocs   uint64               // successful cuMemAlloc calls
	releases uint64               // blocks returned to the cache
}

// block is one device allocation; ptr is 0 once it went back to the cache.
type block struct {
	ptr  uintptr
	size uint64
}

// bucket returns the allocation size used for a request of n bytes.
func bucket(n uint64) uint64 {
	if n <= 512 {
		return 512
	}
	if n < 1<<20 {
		return (n + 511) &^ 511
	}
	step := uint64(1) << (bits.Len64(n-1) - 5)
	return (n + step - 1) &^ (step - 1)
}

// MemStats reports the device memory held by a Backend's allocator and
// how it was obtained. A training loop that returns its buffers (an
// autograd tape's Release) settles at a constant Reserved and stops
// calling the driver: Allocs stays put while Requests grows.
type MemStats struct {
	InUse    uint64 // bytes of live tensors and scratch buffers
	Peak     uint64 // maximum of InUse so far
	Cached   uint64 // bytes of freed blocks kept for reuse
	Reserved uint64 // bytes obtained from the driver (InUse + Cached)
	Requests uint64 // blocks handed out (from the cache or the driver)
	Allocs   uint64 // blocks obtained from the driver (cuMemAlloc)
	Releases uint64 // blocks given back to the cache
}

// String formats the figures for a log line, e.g. "reserved 1.21 GiB
// (in use 0.93, peak 1.02) requests 18231 allocs 412 releases 17934".
func (s MemStats) String() string {
	const gib = 1 << 30
	return fmt.Sprintf("reserved %.2f GiB (in use %.2f, peak %.2f) requests %d allocs %d releases %d",
		float64(s.Reserved)/gib, float64(s.InUse)/gib, float64(s.Peak)/gib, s.Requests, s.Allocs, s.Releases)
}

// MemStats returns the allocator's counters.
func (b *Backend) MemStats() MemStats {
	a := &b.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	return MemStats{InUse: a.inUse, Peak: a.peak, Cached: a.cached, Reserved: a.reserved,
		Requests: a.requests, Allocs: a.allocs, Releases: a.releases}
}

// EmptyCache waits for queued work and returns every cached (freed) block to
// the driver.
func (b *Backend) EmptyCache() {
	b.enter()
	defer b.exit()
	b.emptyCache()
}

func (b *Backend) emptyCache() {
	must(b.sync())
	a := &b.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	for size, list := range a.free {
		for _, p := range list {
			must(b.drv.check("cuMemFree_v2", call(b.drv.cuMemFree, p)))
			a.reserved -= size
			a.cached -= size
		}
		delete(a.free, size)
	}
}

// getBlock returns a block of at least n > 0 bytes (contents undefined).
// Called with the backend entered.
func (b *Backend) getBlock(n uint64) *block {
	size := bucket(n)
	a := &b.alloc
	a.mu.Lock()
	a.requests++
	if list := a.free[size]; len(list) > 0 {
		p := list[len(list)-1]
		a.free[size] = list[:len(list)-1]
		a.cached -= size
		a.inUse += size
		a.peak = max(a.peak, a.inUse)
		a.mu.Unlock()
		return &block{ptr: p, size: size}
	}
	a.mu.Unlock()
	var p uintptr
	code := call(b.drv.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size))
	for attempt := 0; code == 2 && attempt < 2; attempt++ { // CUDA_ERROR_OUT_OF_MEMORY
		if attempt == 1 {
			// Let unreachable tensors' cleanups return their blocks first.
			runtime.GC()
			time.Sleep(20 * time.Millisecond)
		}
		b.emptyCache()
		code = call(b.drv.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size))
	}
	if err := b.drv.check("cuMemAlloc_v2", code); err != nil {
		st := b.MemStats()
		panic(fmt.Errorf("%w (allocating %d bytes; %d in use, %d cached)", err, size, st.InUse, st.Cached))
	}
	a.mu.Lock()
	a.allocs++
	a.reserved += size
	a.inUse += size
	a.peak = max(a.peak, a.inUse)
	a.mu.Unlock()
	return &block{ptr: p, size: size}
}

// putBlock returns blk to the cache (a no-op if it already was). It does not
// touch the GPU, so it may run on any goroutine (cleanups do).
func (a *allocator) putBlock(blk *block) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if blk.ptr == 0 {
		return
	}
	a.free[blk.size] = append(a.free[blk.size], blk.ptr)
	a.releases++
	a.cached += blk.size
	a.inUse -= blk.size
	blk.ptr = 0
}

// storage is device memory of n elements of dtype dt; it implements
// tensor.Storage. The block returns to the allocator's cache when the
// storage becomes unreachable (runtime.AddCleanup) or on Release.
type storage struct {
	b       *Backend
	dt      tensor.DType
	n       int
	blk     *block // nil when n == 0
	cleanup runtime.Cleanup
}

func (s *storage) Backend() tensor.Backend { return s.b }
func (s *storage) DType() tensor.DType     { return s.dt }
func (s *storage) Len() int                { return s.n }

// newStorage allocates storage for n elements, zeroed if zero is set.
// Called with the backend entered.
func (b *Backend) newStorage(dt tensor.DType, n int, zero bool) *storage {
	if n < 0 {
		panic(fmt.Sprintf("cuda: negative allocation of %d elements", n))
	}
	st := &storage{b: b, dt: dt, n: n}
	if n == 0 {
		return st
	}
	bytes := uint64(n) * uint64(dt.Size())
	st.blk = b.getBlock(bytes)
	if zero {
		must(b.drv.check("cuMemsetD8Async", call(b.drv.cuMemsetD8Async, st.blk.ptr, 0, uintptr(bytes), b.stream)))
	}
	a := &b.alloc
	st.cleanup = runtime.AddCleanup(st, func(blk *block) { a.putBlock(blk) }, st.blk)
	return st
}

// Alloc returns zeroed device storage for n elements of dtype dt.
func (b *Backend) Alloc(dt tensor.DType, n int) tensor.Storage {
	b.enter()
	defer b.exit()
	return b.newStorage(dt, n, true)
}

// AllocUninit returns device storage for n elements of dtype dt with
// undefined contents (a cached block as its last user left it): no memset
// is queued.
func (b *Backend) AllocUninit(dt tensor.DType, n int) tensor.Storage {
	b.enter()
	defer b.exit()
	return b.newStorage(dt, n, false)
}

// Release returns the device memory of t's storage to the allocator's cache
// at once, instead of when the storage becomes unreachable. t and every view
// sharing its storage must not be used afterwards (a kernel given one
// panics). Releasing twice is harmless; tensors of other backends are
// ignored. Work already queued that uses the memory is not disturbed: later
// users of the block are queued after it on the same stream.
func (b *Backend) Release(t *tensor.Tensor) {
	st, ok := t.Storage().(*storage)
	if !ok || st.b != b || st.blk == nil {
		return
	}
	st.cleanup.Stop()
	b.alloc.putBlock(st.blk)
}

// Pointer returns the device address of t's first element, for handing a
// tensor to other CUDA code (which must use the backend's stream order, e.g.
// after Synchronize). It panics if t is not on b.
func (b *Backend) Pointer(t *tensor.Tensor) uintptr {
	if st, ok := t.Storage().(*storage); !ok || st.b != b {
		panic(fmt.Sprintf("cuda.Pointer: tensor is on backend %q", t.Backend().Name()))
	}
	return b.dptr(t)
}

// dptr returns the device address of t's element at its offset.
func (b *Backend) dptr(t *tensor.Tensor) uintptr {
	st := t.Storage().(*storage)
	if st.blk == nil {
		return 0
	}
	if st.blk.ptr == 0 {
		panic(fmt.Sprintf("cuda: tensor of shape %v uses released storage", t.Shape()))
	}
	return st.blk.ptr + uintptr(t.Offset()*t.DType().Size())
}

// optPtr is dptr for an optional tensor (0 for nil).
func (b *Backend) optPtr(t *tensor.Tensor) uintptr {
	if t == nil {
		return 0
	}
	return b.dptr(t)
}

// newTensor returns a contiguous device tensor with undefined contents.
func (b *Backend) newTensor(dt tensor.DType, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return tensor.FromStorage(b.newStorage(dt, n, false), shape...)
}

// free returns the storage of a temporary tensor made by newTensor to the
// cache at once (nil is ignored).
func (b *Backend) free(t *tensor.Tensor) {
	if t == nil {
		return
	}
	if st := t.Storage().(*storage); st.blk != nil {
		st.cleanup.Stop()
		b.alloc.putBlock(st.blk)
	}
}

// contig returns t if it is contiguous, else a contiguous copy (which the
// caller frees); tmp reports which.
func (b *Backend) contig(t *tensor.Tensor) (c *tensor.Tensor, tmp bool) {
	if t.IsContiguous() {
		return t, false
	}
	c = b.newTensor(t.DType(), t.Shape()...)
	b.copy(c, t)
	return c, true
}

// contigDst returns dst if it is contiguous, else a contiguous temporary
// (holding dst's values if keep); finishDst copies it back and frees it.
func (b *Backend) contigDst(dst *tensor.Tensor, keep bool) *tensor.Tensor {
	if dst.IsContiguous() {
		return dst
	}
	t := b.newTensor(dst.DType(), dst.Shape()...)
	if keep {
		b.copy(t, dst)
	}
	return t
}

func (b *Backend) finishDst(dst, t *tensor.Tensor) {
	if t != dst {
		b.copy(dst, t)
		b.free(t)
	}
}

// hostPtr returns the address of the first element of the contiguous CPU
// tensor t (which must not be empty).
func hostPtr(t *tensor.Tensor) unsafe.Pointer {
	if t.DType() == tensor.Float32 {
		return unsafe.Pointer(unsafe.SliceData(t.Data32()))
	}
	return unsafe.Pointer(unsafe.SliceData(t.Data64()))
}

// Upload copies the contiguous CPU tensor src into the contiguous device
// tensor dst. The copy is queued on the stream; src may be modified as soon
// as Upload returns (the driver stages pageable memory before returning).
func (b *Backend) Upload(dst, src *tensor.Tensor) {
	n := src.Size()
	if n == 0 {
		return
	}
	b.enter()
	defer b.exit()
	hp := hostPtr(src)
	bytes := uintptr(n * src.DType().Size())
	must(b.drv.check("cuMemcpyHtoDAsync_v2", call(b.drv.cuMemcpyHtoDAsync, b.dptr(dst), uintptr(hp), bytes, b.stream)))
	runtime.KeepAlive(src)
}

// Download copies the contiguous device tensor src into the contiguous CPU
// tensor dst, waiting for queued work and for the copy.
func (b *Backend) Download(dst, src *tensor.Tensor) {
	n := src.Size()
	if n == 0 {
		return
	}
	b.enter()
	defer b.exit()
	hp := hostPtr(dst)
	bytes := uintptr(n * src.DType().Size())
	must(b.drv.check("cuMemcpyDtoHAsync_v2", call(b.drv.cuMemcpyDtoHAsync, uintptr(hp), b.dptr(src), bytes, b.stream)))
	must(b.sync())
	runtime.KeepAlive(dst)
}

// uploadI32 copies host int32 data into a scratch device block (freed by
// the caller with putBlock after queuing its kernels).
func (b *Backend) uploadI32(data []int32) *block {
	blk := b.getBlock(uint64(max(len(data), 1)) * 4)
	if len(data) > 0 {
		must(b.drv.check("cuMemcpyHtoDAsync_v2", call(b.drv.cuMemcpyHtoDAsync, blk.ptr, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)*4), b.stream)))
	}
	return blk
}

// downloadF64 copies n doubles from device memory at p into dst (after
// queued work).
func (b *Backend) downloadF64(dst []float64, p uintptr) {
	if len(dst) == 0 {
		return
	}
	must(b.drv.check("cuMemcpyDtoHAsync_v2", call(b.drv.cuMemcpyDtoHAsync, uintptr(unsafe.Pointer(&dst[0])), p, uintptr(len(dst)*8), b.stream)))
	must(b.sync())
}

// int32Scratch returns the backend's host int32 scratch of length n.
func (b *Backend) int32Scratch(n int) []int32 {
	if cap(b.hostI32) < n {
		b.hostI32 = make([]int32, n)
	}
	return b.hostI32[:n]
}
