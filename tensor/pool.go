package tensor

import (
	"sync"
	"unsafe"

	"lgflow/internal/parallel"
)

// The CPU backend parallelises large kernels over the GOMAXPROCS-1 helper
// goroutines of package parallel (shared with the GEMM and the column
// splits; see parallel.Offer); the calling goroutine always takes part. A
// kernel is described by a pooled *job (so a call allocates nothing), split
// into chunks claimed with an atomic counter: the caller claims chunks too
// and waits only for chunks already running, so nested parallel kernels
// cannot deadlock. Chunk boundaries depend only on the problem size, never
// on the number of workers, which keeps reductions bitwise reproducible
// across machines.

const (
	maxChunks = 64 // chunks per job, and per-chunk partial results
	maxDims   = 16 // dimensions of a strided loop after merging
)

// job carries a kernel and its arguments. Fields are set by the caller,
// published by the atomic store of state, and read by whoever claims chunks.
type job struct {
	fn func(j *job, lo, hi int)

	// Arguments; each kernel documents which it uses.
	op   uint8
	t    [8]*Tensor
	f    [8]float64
	n    [6]int
	b    [2]bool
	idx  []int32
	csr  EdgeCSR
	w    []float32
	l    loop
	l2   loop
	part [maxChunks]float64
	s64  []float64 // scratch
	s32  []float32 // scratch

	// Scheduling.
	blocks  parallel.Blocks // the chunks: the caller's from the front, helpers' from the back
	total   int             // range [0,total) split into chunks
	chunk   int
	nchunks int
	wg      parallel.Count
}

var jobPool = sync.Pool{New: func() any { return new(job) }}

// getJob returns a cleared job from the pool.
func getJob(fn func(*job, int, int)) *job {
	j := jobPool.Get().(*job)
	j.fn = fn
	return j
}

// putJob clears the references a job holds and returns it to the pool.
func putJob(j *job) {
	j.fn = nil
	j.t = [8]*Tensor{}
	j.idx, j.w, j.s64, j.s32 = nil, nil, nil, nil
	j.csr = EdgeCSR{}
	jobPool.Put(j)
}

// Help claims and runs chunks from the back until none are left, for the
// helper goroutines of package parallel.
func (j *job) Help() {
	for c, ok := j.blocks.Back(); ok; c, ok = j.blocks.Back() {
		j.chunk1(c)
	}
}

// work claims and runs chunks from the front until none are left, for the
// caller: consecutive kernels over the same rows run them on the same cores
// (parallel.Blocks).
func (j *job) work() {
	for c, ok := j.blocks.Front(); ok; c, ok = j.blocks.Front() {
		j.chunk1(c)
	}
}

// chunk1 runs chunk c.
func (j *job) chunk1(c int) {
	lo := c * j.chunk
	j.fn(j, lo, min(lo+j.chunk, j.total))
	j.wg.Done()
}

// chunking returns the chunk size and count for n items with at least grain
// items per chunk; it depends only on n and grain.
func chunking(n, grain int) (chunk, nchunks int) {
	if grain < 1 {
		grain = 1
	}
	chunk = max(grain, (n+maxChunks-1)/maxChunks)
	return chunk, (n + chunk - 1) / chunk
}

// run executes j.fn over [0,n) in chunks of at least grain items, in
// parallel when there is more than one chunk, and returns the number of
// chunks used (j.part[c] holds chunk c's partial result if the kernel
// writes one). Chunk c covers [c·chunk, min((c+1)·chunk, n)).
func (j *job) run(n, grain int) int {
	chunk, nchunks := chunking(n, grain)
	j.total, j.chunk, j.nchunks = n, chunk, nchunks
	if nchunks <= 1 {
		if n > 0 {
			j.fn(j, 0, n)
		}
		return nchunks
	}
	nw := parallel.Helpers()
	if nw == 0 {
		for c := range nchunks {
			j.fn(j, c*chunk, min((c+1)*chunk, n))
		}
		return nchunks
	}
	j.wg.Add(nchunks)
	j.blocks.Reset(nchunks)
	t := parallel.Offer(j, min(nw, nchunks-1))
	j.work()
	parallel.Withdraw(t)
	j.wg.Wait()
	return nchunks
}

// runRows is run for n rows that each cost about cost elements of work: it
// picks a grain of about parallelGrain elements per chunk.
func (j *job) runRows(n, cost int) int {
	return j.run(n, max(1, parallelGrain/max(cost, 1)))
}

// parallelGrain is the number of elements of cheap work below which a kernel
// runs on the calling goroutine only.
const parallelGrain = 1 << 15

// elementGrain is parallelGrain for the element-wise kernels whose every
// element comes out the same whatever the chunks (copies, fills, Where and
// the arithmetic ops, whose vector kernels give the Go loops' bits): half
// as much, so that a small model's (nodes, latent) tensors of 32K elements
// are split too instead of leaving the other cores idle.
const elementGrain = parallelGrain / 2

// scratchPool holds reusable float64 buffers for kernels that need
// temporary memory (partial sums, per-head score gradients).
var scratchPool sync.Pool // of *[]float64

// getScratch returns a buffer of at least n float64s (contents undefined).
func getScratch(n int) *[]float64 {
	p, _ := scratchPool.Get().(*[]float64)
	if p == nil {
		p = new([]float64)
	}
	if cap(*p) < n {
		*p = make([]float64, n)
	}
	*p = (*p)[:n]
	return p
}

func putScratch(p *[]float64) { scratchPool.Put(p) }

// scratchT returns a buffer of n elements of type T in a pooled float64 buffer.
func scratchT[T float](n int) (*[]float64, []T) {
	p := getScratch(n)
	return p, unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(*p))), n)
}
