package cuda

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"lgflow/tensor"
)

// allocator is a caching device allocator. Sizes are rounded up to buckets
// (multiples of 512 bytes below 1 MiB, then 16 buckets per power of two);
// freed blocks go to their bucket's free list and are reused by later
// allocations of the same bucket without calling cuMemFree; a request of
// 1 MiB or more may also get a block of a bucket up to 1/4 larger than its
// own. Reuse is safe without events because every kernel runs on the
// backend's one stream: work queued after the reuse runs after work queued
// before the free.
//
// The cache is bounded: when a request misses it while more than the limit
// (cacheLimit) is cached, cached blocks go back to the driver, largest
// first, so that batches of ever new shapes do not pile up blocks of every
// size they asked for. Reserved memory stays below the peak in use plus
// the limit.
//
// The policy is in get, take and evict; the driver calls are behind devMem
// (the Backend, or a fake in tests), so that it can be tested without a GPU.
type allocator struct {
	mu       sync.Mutex
	free     map[uint64][]uintptr // bucket size -> cached blocks, least recently cached first
	cached   uint64               // bytes in free lists
	inUse    uint64               // bytes handed out
	peak     uint64               // maximum of inUse
	reserved uint64               // bytes obtained from cuMemAlloc and not freed
	limit    uint64               // SetCacheLimit's bound on cached; 0: the default rule
	envLimit uint64               // LGFLOW_CUDA_CACHE_LIMIT_MIB's bound, read when the backend opens; 0: none
	requests uint64               // get calls
	allocs   uint64               // successful cuMemAlloc calls
	releases uint64               // blocks returned to the cache
	frees    uint64               // cached blocks returned to the driver
}

// devMem is the driver side of the allocator.
type devMem interface {
	// memAlloc obtains size bytes of device memory. Its error matches
	// ErrOutOfMemory when the device is full.
	memAlloc(size uint64) (uintptr, error)
	// memFree waits for all queued work (which may still use cached
	// blocks) and then returns ps to the driver. It panics on failure.
	memFree(ps []uintptr)
	// reclaim gives unreachable tensors a chance to return their blocks to
	// the cache (their cleanups run after a garbage collection).
	reclaim()
	// totalMem returns the device's memory in bytes (0 if unknown).
	totalMem() uint64
}

const (
	// minCacheLimit is the least default bound on cached bytes: small
	// workloads never hand blocks back to the driver.
	minCacheLimit = 256 << 20
	// bestFitMin is the least request size that a block of a larger bucket
	// may serve, and bestFitSlack the most it may exceed the request's
	// bucket by, as a fraction (1/bestFitSlack) of it.
	bestFitMin   = 1 << 20
	bestFitSlack = 4
)

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
// calling the driver: Allocs stays put while Requests grows. When batch
// shapes vary from step to step, cached blocks go back to the driver
// (Frees grows) whenever an allocation finds none to reuse while Cached
// exceeds CacheLimit, so Reserved stays below Peak + CacheLimit.
type MemStats struct {
	InUse      uint64 // bytes of live tensors and scratch buffers
	Peak       uint64 // maximum of InUse so far
	Cached     uint64 // bytes of freed blocks kept for reuse
	Reserved   uint64 // bytes obtained from the driver (InUse + Cached)
	CacheLimit uint64 // bound on Cached, enforced when a request misses the cache (SetCacheLimit)
	Requests   uint64 // blocks handed out (from the cache or the driver)
	Allocs     uint64 // blocks obtained from the driver (cuMemAlloc)
	Releases   uint64 // blocks given back to the cache
	Frees      uint64 // cached blocks given back to the driver (cuMemFree)
}

// String formats the figures for a log line, e.g. "reserved 1.21 GiB
// (in use 0.93, peak 1.02) requests 18231 allocs 412 releases 17934 frees 6".
func (s MemStats) String() string {
	const gib = 1 << 30
	return fmt.Sprintf("reserved %.2f GiB (in use %.2f, peak %.2f) requests %d allocs %d releases %d frees %d",
		float64(s.Reserved)/gib, float64(s.InUse)/gib, float64(s.Peak)/gib, s.Requests, s.Allocs, s.Releases, s.Frees)
}

// MemStats returns the allocator's counters.
func (b *Backend) MemStats() MemStats {
	a := &b.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	return MemStats{InUse: a.inUse, Peak: a.peak, Cached: a.cached, Reserved: a.reserved, CacheLimit: a.cacheLimit(b.totalMem()),
		Requests: a.requests, Allocs: a.allocs, Releases: a.releases, Frees: a.frees}
}

// SetCacheLimit bounds the bytes of freed blocks that the allocator keeps
// for reuse. When an allocation finds no cached block to reuse while more
// than bytes are cached, cached blocks go back to the driver, largest
// first, after waiting for queued work, until at most bytes stay cached;
// Reserved thus stays below Peak + bytes. A limit of 0 or less restores the
// default: LGFLOW_CUDA_CACHE_LIMIT_MIB (a whole number of MiB, read when
// the backend opens) if that was set, else twice the peak in use, but at
// most a quarter of the device's memory and at least 256 MiB. The limit
// applies from the next allocation that the cache cannot serve; EmptyCache
// empties the cache at once.
func (b *Backend) SetCacheLimit(bytes int64) {
	a := &b.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	a.limit = uint64(max(bytes, 0))
}

// cacheLimit returns the bound on cached bytes that SetCacheLimit
// describes, on a device of total bytes (0 if unknown). Called with a.mu
// held.
func (a *allocator) cacheLimit(total uint64) uint64 {
	return defaultCacheLimit(a.limit, a.envLimit, a.peak, total)
}

// defaultCacheLimit returns set if it is not 0, else env if that is not 0,
// else 2*peak, at most total/4 (unless total is 0) and at least
// minCacheLimit.
//
// Why twice the peak: with batch shapes in random order, the blocks of one
// step serve the next only in part, and the cache must hold those of
// several shapes. In a simulated training loop (TestAllocVaryingBatches,
// 13 shapes) a bound of 2*peak kept 99.4% of requests served by the cache,
// against 75% for a bound of 1*peak (45 driver allocations a step, and a
// wait for the device in most steps). The quarter of the device keeps
// Reserved (below Peak + the bound) within a small card, and leaves room
// for another process on a large one.
func defaultCacheLimit(set, env, peak, total uint64) uint64 {
	switch {
	case set > 0:
		return set
	case env > 0:
		return env
	}
	limit := 2 * peak
	if total > 0 {
		limit = min(limit, total/4)
	}
	return max(limit, minCacheLimit)
}

// parseCacheLimitMiB converts a number of MiB (LGFLOW_CUDA_CACHE_LIMIT_MIB)
// to bytes: 0 for anything but a positive whole number below 2⁴⁴.
func parseCacheLimitMiB(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n >= 1<<44 {
		return 0
	}
	return n << 20
}

// EmptyCache waits for queued work and returns every cached (freed) block to
// the driver.
func (b *Backend) EmptyCache() {
	b.enter()
	defer b.exit()
	b.emptyCache()
}

func (b *Backend) emptyCache() {
	a := &b.alloc
	a.mu.Lock()
	ps := a.evict(0)
	a.mu.Unlock()
	b.memFree(ps)
}

// getBlock returns a block of at least n > 0 bytes (contents undefined).
// Called with the backend entered.
func (b *Backend) getBlock(n uint64) *block {
	return b.alloc.get(n, b)
}

// get returns a block of at least n > 0 bytes (contents undefined): a cached
// one if take finds one; else a new one from dev, after handing cached
// blocks back to dev (evict) if more than the limit is cached. When the
// device is full it empties the cache and tries again, the second time
// after dev.reclaim; then it panics with an error matching ErrOutOfMemory.
// The caller serialises get calls (the Backend is entered); putBlock may
// run at the same time.
func (a *allocator) get(n uint64, dev devMem) *block {
	size := bucket(n)
	a.mu.Lock()
	a.requests++
	if blk := a.take(size); blk != nil {
		a.mu.Unlock()
		return blk
	}
	ps := a.evict(a.cacheLimit(dev.totalMem()))
	a.mu.Unlock()
	if len(ps) > 0 {
		dev.memFree(ps)
	}
	p, err := dev.memAlloc(size)
	for attempt := 0; errors.Is(err, ErrOutOfMemory) && attempt < 2; attempt++ {
		if attempt == 1 {
			// Let unreachable tensors' cleanups return their blocks first.
			dev.reclaim()
		}
		a.mu.Lock()
		ps = a.evict(0)
		a.mu.Unlock()
		dev.memFree(ps)
		p, err = dev.memAlloc(size)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		panic(fmt.Errorf("%w (allocating %d bytes; %d in use, %d cached)", err, size, a.inUse, a.cached))
	}
	a.allocs++
	a.reserved += size
	a.inUse += size
	a.peak = max(a.peak, a.inUse)
	return &block{ptr: p, size: size}
}

// take hands out a cached block for a request of bucket size, or returns
// nil: the most recently cached block of that bucket, else, from
// bestFitMin up, one of the smallest non-empty bucket at most
// size/bestFitSlack larger. Called with a.mu held.
func (a *allocator) take(size uint64) *block {
	for s := size; ; {
		if list := a.free[s]; len(list) > 0 {
			p := list[len(list)-1]
			a.free[s] = list[:len(list)-1]
			a.cached -= s
			a.inUse += s
			a.peak = max(a.peak, a.inUse)
			return &block{ptr: p, size: s}
		}
		if size < bestFitMin {
			return nil
		}
		if s = bucket(s + 1); s > size+size/bestFitSlack {
			return nil
		}
	}
}

// evict removes cached blocks until at most target bytes stay cached and
// returns them, for the caller to hand to devMem.memFree; Reserved no
// longer counts them. Called with a.mu held.
//
// The largest blocks go first (the least recently cached first among
// blocks of one size). Size-bucketed batches come in random order
// (trainer.BatchesBySize), so when a block was last used says little about
// when it is next asked for; evicting by size keeps the most blocks, hence
// serves the most requests, for the bytes allowed, and a large block that
// stays also serves somewhat smaller requests (take). In simulations of a
// DiT's requests over batches of 13 shapes in random order, with the bound
// at the peak in use, it made 40-60% fewer driver calls than evicting the
// least recently cached blocks first.
func (a *allocator) evict(target uint64) []uintptr {
	if a.cached <= target {
		return nil
	}
	sizes := slices.Sorted(maps.Keys(a.free))
	var out []uintptr
	for i := len(sizes) - 1; i >= 0 && a.cached > target; i-- {
		size := sizes[i]
		list := a.free[size]
		k := 0
		for ; k < len(list) && a.cached > target; k++ {
			out = append(out, list[k])
			a.cached -= size
			a.reserved -= size
			a.frees++
		}
		if k == len(list) {
			delete(a.free, size)
		} else {
			a.free[size] = slices.Delete(list, 0, k)
		}
	}
	return out
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

// memAlloc implements devMem with cuMemAlloc. Called with the backend
// entered.
func (b *Backend) memAlloc(size uint64) (uintptr, error) {
	var p uintptr
	err := b.drv.check("cuMemAlloc_v2", call(b.drv.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size)))
	return p, err
}

// memFree implements devMem: it synchronises the stream, then frees ps
// with cuMemFree. Called with the backend entered.
func (b *Backend) memFree(ps []uintptr) {
	must(b.sync())
	for _, p := range ps {
		must(b.drv.check("cuMemFree_v2", call(b.drv.cuMemFree, p)))
	}
}

// reclaim implements devMem: a garbage collection, then a moment for the
// cleanups of unreachable storages to return their blocks.
func (b *Backend) reclaim() {
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
}

// totalMem implements devMem.
func (b *Backend) totalMem() uint64 {
	if b.dev == nil {
		return 0
	}
	return b.dev.totalMem
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
