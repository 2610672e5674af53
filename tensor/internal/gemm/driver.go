package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// useDirectA lets the blocked path read op(A) in place with the kernels'
// direct forms (kernel.direct, kernel.directT) instead of packing it, and
// useDirectB op(B) as well for small products (kernel.directB); the tests
// turn them off to compare.
var useDirectA, useDirectB = true, true

// usePrepack lets the k-inner order pack all of op(B) once, before the
// tasks (runPrepacked), when its rows span several chunks; the tests turn
// it off to compare with runKInner, which packs it in every task.
var usePrepack = true

// directBMaxWork is the largest product (m*n*k multiply-adds) whose B the
// blocked path reads in place (kernel.directB) rather than packs: an
// attention head's products (64 x 64 x 32 and 64 x 32 x 64 for the DiTs'
// heads), where a packed panel is used by a few strips of A only. Larger
// products reuse a packed panel over many strips, and a panel read in
// place at a row stride that is a multiple of 512 bytes fills few of the
// L1 cache's sets.
const directBMaxWork = 64 * 64 * 64

// minWorkPerThread is the number of multiply-adds below which adding a
// thread costs more in hand-off than it saves.
const minWorkPerThread = 64 * 64 * 64

// typeState holds the per-element-type state of the blocked path: the job
// and buffers of the parallel path (used under pool.mu) and a pool of
// workspaces for single-threaded calls.
type typeState[T scalar] struct {
	par job[T]
	seq sync.Pool // of *workspace[T]
}

var (
	sState typeState[float32]
	dState typeState[float64]
)

// workspace holds packing buffers; they only grow.
type workspace[T scalar] struct {
	b    [2][]T // packed B blocks, double-buffered across k blocks
	bw   [][]T  // packed B panels of each worker (k-inner order, k slices)
	part []T    // partial products of k slices 1.. (k slices)
	bAll []T    // all of op(B) packed, k block after k block (job.prepack)
	a    [][]T  // packed A block of each worker
	tile [][]T  // mr x nr edge tile of each worker
	seq  job[T] // the job of a single-threaded call using this workspace
}

// job is one blocked GEMM, shared by the workers that compute it.
//
// Work is handed out dynamically, so a worker that starts late or is
// descheduled (the machine may be shared) does not hold the others up. For
// each block (jc, pc) of op(B) the workers first take chunks of packB
// micro-panels from packNext, then, once packDone says the whole block is
// packed, take tasks from taskNext: a task is a chunk of mcTask rows of C
// times one of gn groups of the block's columns, for which the worker packs
// the rows of op(A) (unless it already holds them) and runs the
// macro-kernel. Packed B blocks alternate between two buffers, so packing
// block i+2 waits (taskDone) until block i's tasks are done; and tasks of a
// block that accumulates into C (pc > 0) wait until the previous block's
// tasks are done. Packing the next block thus overlaps the tail of the
// current one. The counters only grow during a job; every worker derives
// the same ticket ranges for each block from the dimensions.
type job[T scalar] struct {
	kn             *kernel[T]
	transA, transB bool
	m, n, k        int
	alpha, beta    T
	a, b, c        []T
	bias           []T // nil, or n values added to every row of C (beta == 0)
	lda, ldb, ldc  int
	ws             *workspace[T]

	nw      int  // workers
	directA bool // the kernel reads op(A) in place (direct): no packA
	directB bool // the kernel reads op(B) in place too (kernel.directB): no packB
	// direct is kernel.direct, or kernel.directT when A is transposed.
	direct    func(kc int, a *T, lda int, b, c *T, ldc int, alpha, beta T, bias *T)
	kInner    bool // tasks run every k block themselves (runKInner)
	prepack   bool // kInner, from all of op(B) packed once beforehand (runPrepacked)
	slices    int  // k slices (runKSplit); 1: none
	mcTask    int  // rows of C per task (a multiple of mr, at most kn.mc)
	rowChunks int  // ceil(m / mcTask)
	gn        int  // column groups per packed B block

	packNext, packDone atomic.Int64
	taskNext, taskDone atomic.Int64
}

// packPanels is the number of B micro-panels in one packing chunk.
const packPanels = 4

// blocked runs the packed, cache-blocked algorithm, in parallel when the
// product is large enough and the worker pool is free.
func (st *typeState[T]) blocked(kn *kernel[T], maxWorkers int, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, bias []T, c []T, ldc int) {
	nw := int(min(int64(runtime.GOMAXPROCS(0)), max(1, work(m, n, k)/minWorkPerThread)))
	if maxWorkers > 0 {
		nw = min(nw, maxWorkers)
	}
	if nw > 1 && pool.mu.TryLock() {
		defer pool.mu.Unlock()
		nw = pool.start(nw)
		j := &st.par
		if j.ws == nil {
			j.ws = new(workspace[T])
		}
		j.ws.grow(kn, nw, m, n, k)
		j.set(kn, nw, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc)
		if j.prepack {
			j.ws.bAll = growAligned(j.ws.bAll, prepackSize(kn, n, k))
		}
		pool.run(j, nw)
		j.addSlices()
		j.a, j.b, j.c, j.bias = nil, nil, nil, nil // do not keep the caller's memory alive
		return
	}
	// One thread (small product, or the pool is busy with another call).
	ws, _ := st.seq.Get().(*workspace[T])
	if ws == nil {
		ws = new(workspace[T])
	}
	ws.grow(kn, 1, m, n, k)
	j := &ws.seq
	j.ws = ws
	j.set(kn, 1, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc)
	j.runWorker(0)
	j.addSlices()
	j.a, j.b, j.c, j.bias, j.ws = nil, nil, nil, nil, nil
	st.seq.Put(ws)
}

// set describes the product and splits it into tasks for nw workers. No
// worker may be running.
func (j *job[T]) set(kn *kernel[T], nw int, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, bias []T, c []T, ldc int) {
	j.kn = kn
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.alpha, j.beta = alpha, beta
	j.a, j.b, j.c, j.bias = a, b, c, bias
	j.lda, j.ldb, j.ldc = lda, ldb, ldc
	j.nw = nw
	j.direct = kn.direct
	if transA {
		j.direct = kn.directT
	}
	j.directA = useDirectA && j.direct != nil
	// B in place: the row-major direct form, full panels only, and at least
	// a full strip of A (a last partial strip is then read as the full
	// strip ending with it, never packed).
	j.directB = useDirectB && j.directA && !transA && !transB && kn.directB != nil &&
		n%kn.nr == 0 && m >= kn.mr && work(m, n, k) <= directBMaxWork
	j.slices = kSlices(kn, m, n, k)
	j.kInner = j.slices == 1 && nw > 1 && useKInner(kn, n, k)
	j.prepack = false
	j.mcTask, j.rowChunks, j.gn = splitTasks(nw, m, min(n, kn.nc), kn.mr, kn.nr, kn.mc)
	switch {
	case j.kInner && m <= kn.mc && (j.directA || m <= n):
		// One chunk of rows: runKInner's tasks are column groups, and pack
		// each column of op(B) once.
		j.mcTask, j.rowChunks, j.gn = splitTasksKInner(nw, m, n, kn.mr, kn.nr, kn.mc)
	case j.kInner && usePrepack && !j.directB && prepackSize(kn, n, k) <= maxPrepack:
		// Several chunks of rows, each of which would pack all of op(B)
		// in runKInner: pack it once, together (runPrepacked).
		j.prepack = true
		j.mcTask, j.rowChunks, j.gn = splitTasksPrepack(nw, m, n, kn.mr, kn.nr, kn.mc)
	}
	j.packNext.Store(0)
	j.packDone.Store(0)
	j.taskNext.Store(0)
	j.taskDone.Store(0)
}

// splitTasks chooses the tasks of one packed B block (n columns) for nw
// workers: row chunks of mcTask rows (a multiple of mr, at most mc) and gn
// column groups, aiming at three or more tasks per worker so that dynamic
// hand-out balances the load. One worker gets the largest chunks.
func splitTasks(nw, m, n, mr, nr, mc int) (mcTask, rowChunks, gn int) {
	mcTask = mc
	if nw > 1 {
		mcTask = min(mc, max(mr, ceilDiv(ceilDiv(m, 3*nw), mr)*mr))
	}
	rowChunks = ceilDiv(m, mcTask)
	gn = 1
	if want := 3 * nw; nw > 1 && rowChunks < want {
		gn = max(1, min(ceilDiv(want, rowChunks), ceilDiv(n, nr)))
	}
	return mcTask, rowChunks, gn
}

// splitTasksKInner is splitTasks for the k-inner order (runKInner) of a
// product whose rows fit one packed A block (m <= mc), where every task
// packs its own columns of op(B) at every k block: each row chunk more
// packs all of op(B) once more, while each column group more reads op(A)
// once more, in place with directA (else it packs its m rows again, which
// set allows only when m <= n). So the tasks are column groups of whole
// micro-panels, up to three per worker, and the rows are split only when
// there are fewer panels than workers. (A weight gradient of 64 x 64 x 2048
// on two threads: 218 us in six row chunks, 72 us in two column groups;
// one thread takes 146 us.)
func splitTasksKInner(nw, m, n, mr, nr, mc int) (mcTask, rowChunks, gn int) {
	gn = max(1, min(3*nw, ceilDiv(n, nr)))
	rowChunks = max(1, min(ceilDiv(nw, gn), ceilDiv(m, mr)))
	mcTask = min(mc, ceilDiv(ceilDiv(m, rowChunks), mr)*mr)
	return mcTask, ceilDiv(m, mcTask), gn
}

// splitTasksPrepack is splitTasks for the k-inner order from a B packed
// beforehand (runPrepacked): row chunks of whole strips of mr rows, as
// even as the strips allow (runPrepacked derives the same bounds), at most
// mc rows each, prepackTasks per worker; column groups only when there are
// too few strips. mcTask is the largest chunk.
func splitTasksPrepack(nw, m, n, mr, nr, mc int) (mcTask, rowChunks, gn int) {
	strips := ceilDiv(m, mr)
	want := prepackTasks * nw
	rowChunks = min(strips, max(want, ceilDiv(strips, max(1, mc/mr))))
	gn = 1
	if rowChunks < want {
		gn = max(1, min(ceilDiv(want, rowChunks), ceilDiv(n, nr)))
	}
	return min(m, ceilDiv(strips, rowChunks)*mr), rowChunks, gn
}

// prepackTasks is the number of tasks per worker of runPrepacked: with 2,
// 3, 6 or 8, two threads take 512³ in 750-800 us at best (4: 830 us), 3
// being the steadiest.
const prepackTasks = 3

// grab takes the next ticket of counter below end, if any.
func grab(counter *atomic.Int64, end int64) (int64, bool) {
	for {
		t := counter.Load()
		if t >= end {
			return 0, false
		}
		if counter.CompareAndSwap(t, t+1) {
			return t, true
		}
	}
}

// waitFor blocks until counter reaches target: briefly yielding, then
// sleeping in short steps. The waits are for work other workers are doing
// (a chunk of packing, the last tasks of a block), so they are short.
func waitFor(counter *atomic.Int64, target int64) {
	for i := 0; counter.Load() < target; i++ {
		if i < 200 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// work returns m*n*k, the multiply-adds of a product, without overflowing
// int on 32-bit platforms.
func work(m, n, k int) int64 { return int64(m) * int64(n) * int64(k) }

// grow makes ws large enough for an m x n x k product on nw workers.
func (ws *workspace[T]) grow(kn *kernel[T], nw, m, n, k int) {
	kc := min(k, kn.kc)
	nb := kc * ceilDiv(min(n, kn.nc), kn.nr) * kn.nr
	na := kc * min(kn.mc, ceilDiv(m, kn.mr)*kn.mr)
	for i := range ws.b {
		ws.b[i] = growAligned(ws.b[i], nb)
	}
	for len(ws.a) < nw {
		ws.a = append(ws.a, nil)
		ws.tile = append(ws.tile, nil)
	}
	for i := range nw {
		ws.a[i] = growAligned(ws.a[i], na)
		ws.tile[i] = growAligned(ws.tile[i], kn.mr*kn.nr)
	}
	sl := kSlices(kn, m, n, k)
	if sl > 1 || (nw > 1 && useKInner(kn, n, k)) {
		for len(ws.bw) < nw {
			ws.bw = append(ws.bw, nil)
		}
		for i := range nw {
			ws.bw[i] = growAligned(ws.bw[i], nb)
		}
	}
	if sl > 1 {
		ws.part = growAligned(ws.part, (sl-1)*m*n)
	}
}

// The k slices of a deep product with a small C (see kSlices).
const (
	kSliceBlocks = 16      // least k blocks per slice
	maxKSlices   = 8       // most slices
	maxPartial   = 1 << 22 // most elements of the slices' partial products
)

// kSlices returns the number of slices into which a product is split along
// k (1: none). A deep product with a small C, such as the weight gradient
// of a linear layer (m and n its widths, k the tokens of a batch), gives
// each worker too little of C and a barrier at every k block; split along
// k, each slice runs the blocked algorithm on its own (runKSplit) and the
// partial products are added to C in slice order. The count depends only
// on the shape, never on the number of workers, so the result does not
// either.
func kSlices[T scalar](kn *kernel[T], m, n, k int) int {
	if k < 4*max(m, n) {
		return 1 // C is large next to the depth: the workers split C
	}
	s := min(maxKSlices, ceilDiv(k, kn.kc)/kSliceBlocks)
	for s > 1 && (s-1)*m*n > maxPartial {
		s--
	}
	return max(1, s)
}

// kInnerMaxN bounds the columns of a product run in the k-inner order: each
// task repacks its columns of B at every k block, which costs more than the
// barriers it saves for wide products (two threads: 512³ 132-135 → 157-167
// GFLOP/s in the k-inner order, 1024³ 181-185 → 159-170).
// (These figures predate runPrepacked, which packs B once for products of
// several row chunks.)
const kInnerMaxN = 512

// useKInner reports whether a parallel product of n columns and depth k
// runs in the k-inner order (see runKInner): when it spans several k
// blocks, whose barriers would otherwise stall the workers, and one packed
// B block holds all its columns.
func useKInner[T scalar](kn *kernel[T], n, k int) bool {
	return k > kn.kc && n <= min(kn.nc, kInnerMaxN)
}

// growAligned returns s if it holds n elements, else a new slice of n
// elements starting on a 64-byte boundary.
func growAligned[T scalar](s []T, n int) []T {
	if len(s) >= n {
		return s
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	raw := make([]T, n+64/size)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&raw[0])) % 64); r != 0 {
		off = (64 - r) / size
	}
	return raw[off : off+n : off+n]
}

// runWorker runs worker w: it goes through the blocks of op(B) in order,
// packing and computing whatever chunks and tasks are left (see job).
func (j *job[T]) runWorker(w int) {
	if j.slices > 1 {
		j.runKSplit(w)
		return
	}
	if j.prepack {
		j.runPrepacked(w)
		return
	}
	if j.kInner {
		j.runKInner(w)
		return
	}
	kn := j.kn
	ws := j.ws
	ap, tile := ws.a[w], ws.tile[w]
	var packBase, taskBase int64
	var bufFreeAt [2]int64 // taskDone value at which each B buffer is free again
	heldA := int64(-1)     // the task ticket of the row chunk held packed in ap
	iter := 0
	for jc := 0; jc < j.n; jc += kn.nc {
		ncur := min(kn.nc, j.n-jc)
		np := ceilDiv(ncur, kn.nr)
		chunks := int64(ceilDiv(np, packPanels))
		tasks := int64(j.rowChunks * j.gn)
		for pc := 0; pc < j.k; pc += kn.kc {
			kcur := min(kn.kc, j.k-pc)
			buf := iter & 1
			bp := ws.b[buf]
			iter++
			waitFor(&j.taskDone, bufFreeAt[buf])
			for {
				t, ok := grab(&j.packNext, packBase+chunks)
				if !ok {
					break
				}
				q0 := int(t-packBase) * packPanels
				j.packB(bp, jc, ncur, pc, kcur, q0, min(np, q0+packPanels))
				j.packDone.Add(1)
			}
			packBase += chunks
			waitFor(&j.packDone, packBase)

			beta, bias := j.beta, j.bias
			if pc > 0 {
				bias = nil
				// Tasks accumulate into C: the previous k block's must be done.
				beta = 1
				waitFor(&j.taskDone, taskBase)
			} else if jc > 0 {
				// A new column block does not read the last one's C, but
				// taskDone counts the tasks of every block: had this block's
				// tasks finished while a task of the last block was still
				// running, the wait for the next B buffer (bufFreeAt) would
				// pass early and repack that task's panels under it (a
				// wrong result, seen once in TestThreadsBitwise under load).
				// So the last block's tasks must be done here too.
				waitFor(&j.taskDone, taskBase)
			}
			for {
				t, ok := grab(&j.taskNext, taskBase+tasks)
				if !ok {
					break
				}
				local := int(t - taskBase)
				chunk, g := local/j.gn, local%j.gn
				ic := chunk * j.mcTask
				mcur := min(j.mcTask, j.m-ic)
				if first := t - int64(g); first != heldA && !j.directA {
					j.packA(ap, ic, mcur, pc, kcur)
					heldA = first
				}
				j.macro(j.c, j.ldc, ap, bp, tile, ic, mcur, jc, ncur, g*np/j.gn, (g+1)*np/j.gn, pc, kcur, beta, bias)
				j.taskDone.Add(1)
			}
			taskBase += tasks
			bufFreeAt[buf] = taskBase
		}
	}
}

// runKInner runs worker w of a product whose columns fit one packed B
// block, in the k-inner order: each task (a chunk of rows of C times a group
// of its columns) goes through every k block itself, packing its own rows
// of op(A) and columns of op(B), so the workers never wait for each other.
// Each tile of C accumulates the k blocks in the same order, with the same
// kernel calls, as in runWorker's order, so the result is the same bit for
// bit. The cost is that the columns of op(B) are packed once per row chunk
// instead of once.
func (j *job[T]) runKInner(w int) {
	kn := j.kn
	ap, bp, tile := j.ws.a[w], j.ws.bw[w], j.ws.tile[w]
	np := ceilDiv(j.n, kn.nr)
	tasks := int64(j.rowChunks * j.gn)
	for {
		t, ok := grab(&j.taskNext, tasks)
		if !ok {
			return
		}
		chunk, g := int(t)/j.gn, int(t)%j.gn
		ic := chunk * j.mcTask
		mcur := min(j.mcTask, j.m-ic)
		q0, q1 := g*np/j.gn, (g+1)*np/j.gn
		for pc := 0; pc < j.k; pc += kn.kc {
			kcur := min(kn.kc, j.k-pc)
			beta, bias := j.beta, j.bias
			if pc > 0 {
				beta, bias = 1, nil
			}
			if !j.directA {
				j.packA(ap, ic, mcur, pc, kcur)
			}
			j.packB(bp, 0, j.n, pc, kcur, q0, q1)
			j.macro(j.c, j.ldc, ap, bp, tile, ic, mcur, 0, j.n, q0, q1, pc, kcur, beta, bias)
		}
	}
}

// maxPrepack bounds the elements of op(B) packed beforehand for the k-inner
// order (runPrepacked): 8 MiB of float32. A larger B streams from memory
// anyway, and runKInner repacks it at no more cost.
const maxPrepack = 1 << 21

// prepackSize returns the elements of all of op(B) (n columns, depth k)
// packed for runPrepacked: its k blocks one after the other, each of
// ceil(n/nr) micro-panels at the full depth kc (the last block uses the
// start of its share).
func prepackSize[T scalar](kn *kernel[T], n, k int) int {
	return ceilDiv(k, kn.kc) * ceilDiv(n, kn.nr) * kn.nr * kn.kc
}

// runPrepacked runs worker w of a product in the k-inner order whose rows
// span several chunks (prepack): runKInner's tasks would each pack all of
// op(B) again. Instead the workers first pack all of op(B) together, every
// k block of it, in chunks of packPanels micro-panels (one wait, for the
// last chunk), then take the tasks, a chunk of rows times a group of
// micro-panels, each of which goes through every k block from the shared
// packed B. Each tile of C accumulates the k blocks in order with the same
// kernel calls as in runWorker's and runKInner's orders, so the result is
// the same bit for bit.
func (j *job[T]) runPrepacked(w int) {
	kn := j.kn
	kc, mr, nr := kn.kc, kn.mr, kn.nr
	ap, tile, all := j.ws.a[w], j.ws.tile[w], j.ws.bAll
	np := ceilDiv(j.n, nr)
	blockSize := np * nr * kc
	chunks := ceilDiv(np, packPanels)
	packs := int64(ceilDiv(j.k, kc) * chunks)
	for {
		t, ok := grab(&j.packNext, packs)
		if !ok {
			break
		}
		blk, q0 := int(t)/chunks, int(t)%chunks*packPanels
		pc := blk * kc
		j.packB(all[blk*blockSize:], 0, j.n, pc, min(kc, j.k-pc), q0, min(np, q0+packPanels))
		j.packDone.Add(1)
	}
	waitFor(&j.packDone, packs)
	strips := ceilDiv(j.m, mr)
	tasks := int64(j.rowChunks * j.gn)
	for {
		t, ok := grab(&j.taskNext, tasks)
		if !ok {
			return
		}
		chunk, g := int(t)/j.gn, int(t)%j.gn
		ic := chunk * strips / j.rowChunks * mr
		mcur := min(j.m, (chunk+1)*strips/j.rowChunks*mr) - ic
		q0, q1 := g*np/j.gn, (g+1)*np/j.gn
		for blk, pc := 0, 0; pc < j.k; blk, pc = blk+1, pc+kc {
			kcur := min(kc, j.k-pc)
			beta, bias := j.beta, j.bias
			if pc > 0 {
				beta, bias = 1, nil
			}
			if !j.directA {
				j.packA(ap, ic, mcur, pc, kcur)
			}
			j.macro(j.c, j.ldc, ap, all[blk*blockSize:], tile, ic, mcur, 0, j.n, q0, q1, pc, kcur, beta, bias)
		}
	}
}

// runKSplit runs worker w of a product split into k slices (see kSlices):
// it takes whole slices and computes each on its own, slice 0 into C (with
// beta and the bias) and slice s > 0 into the s-th partial product, which
// addSlices then adds to C.
func (j *job[T]) runKSplit(w int) {
	kc := j.kn.kc
	ap, bp, tile := j.ws.a[w], j.ws.bw[w], j.ws.tile[w]
	nb, mn := ceilDiv(j.k, kc), j.m*j.n
	for {
		t, ok := grab(&j.taskNext, int64(j.slices))
		if !ok {
			return
		}
		s := int(t)
		k0, k1 := s*nb/j.slices*kc, min(j.k, (s+1)*nb/j.slices*kc)
		if s == 0 {
			j.serial(j.c, j.ldc, ap, bp, tile, k0, k1, j.beta, j.bias)
			continue
		}
		j.serial(j.ws.part[(s-1)*mn:s*mn], j.n, ap, bp, tile, k0, k1, 0, nil)
	}
}

// addSlices adds the partial products of k slices 1.. to C, in slice order.
func (j *job[T]) addSlices() {
	if j.slices <= 1 {
		return
	}
	mn := j.m * j.n
	for s := 1; s < j.slices; s++ {
		p := j.ws.part[(s-1)*mn : s*mn]
		for i := range j.m {
			crow := j.c[i*j.ldc : i*j.ldc+j.n]
			for jj, v := range p[i*j.n : (i+1)*j.n] {
				crow[jj] += v
			}
		}
	}
}

// serial computes alpha*op(A)[:, k0:k1]*op(B)[k0:k1, :] + beta*c (+ bias)
// into c (m x n, row stride ldc) on one thread with the packing buffers ap
// and bp. k0 is a multiple of kc.
func (j *job[T]) serial(c []T, ldc int, ap, bp, tile []T, k0, k1 int, beta T, bias []T) {
	kn := j.kn
	for jc := 0; jc < j.n; jc += kn.nc {
		ncur := min(kn.nc, j.n-jc)
		np := ceilDiv(ncur, kn.nr)
		for pc := k0; pc < k1; pc += kn.kc {
			kcur := min(kn.kc, k1-pc)
			b, bi := beta, bias
			if pc > k0 {
				b, bi = 1, nil
			}
			j.packB(bp, jc, ncur, pc, kcur, 0, np)
			for ic := 0; ic < j.m; ic += kn.mc {
				mcur := min(kn.mc, j.m-ic)
				if !j.directA {
					j.packA(ap, ic, mcur, pc, kcur)
				}
				j.macro(c, ldc, ap, bp, tile, ic, mcur, jc, ncur, 0, np, pc, kcur, b, bi)
			}
		}
	}
}

// macroDirectB is macro's loop over the strips of A for one panel of
// op(B), columns col..col+nr, with both operands read in place
// (j.directB): the full strips, then a last partial one as the full strip
// ending with it (j.directB needs m >= mr), merged from the tile.
func (j *job[T]) macroDirectB(c []T, ldc int, tile []T, ic, mcur, col, pc, kcur int, beta T, bias []T) {
	kn := j.kn
	mr, nr := kn.mr, kn.nr
	bq := &j.b[pc*j.ldb+col]
	for ir := 0; ir < mcur; ir += mr {
		mrc := min(mr, mcur-ir)
		row := ic + ir
		if mrc == mr {
			if bias != nil {
				kn.directB(kcur, j.aAt(row, pc), j.lda, bq, j.ldb, &c[row*ldc+col], ldc, j.alpha, 0, &bias[col])
				continue
			}
			kn.directB(kcur, j.aAt(row, pc), j.lda, bq, j.ldb, &c[row*ldc+col], ldc, j.alpha, beta, nil)
			continue
		}
		kn.directB(kcur, j.aAt(ic+mcur-mr, pc), j.lda, bq, j.ldb, &tile[0], nr, 1, 0, nil)
		j.mergeTile(c, ldc, tile[(mr-mrc)*nr:], row, col, mrc, nr, beta, bias)
	}
}

// aAt returns the address of element (i, p) of op(A).
func (j *job[T]) aAt(i, p int) *T {
	if j.transA {
		return &j.a[p*j.lda+i]
	}
	return &j.a[i*j.lda+p]
}

// macro multiplies the packed A block (rows ic..ic+mcur, columns
// pc..pc+kcur of op(A)) by B micro-panels
// q0..q1 of the packed block starting at column jc, into c (C itself, or a
// k slice's partial product; row stride ldc). A non-nil bias
// (then beta == 0) is added by the kernel to each full tile of C (C is not
// read) and by mergeTile to edge tiles.
//
// With j.directA, A is not packed: the kernel reads the full strips of mr
// rows in place (columns pc..pc+kcur), and macro packs a last, partial
// strip into ap itself.
func (j *job[T]) macro(c []T, ldc int, ap, bp, tile []T, ic, mcur, jc, ncur, q0, q1, pc, kcur int, beta T, bias []T) {
	kn := j.kn
	mr, nr := kn.mr, kn.nr
	alpha := j.alpha
	full := mcur // rows in full strips read in place (directA)
	// back: with directA, the last, partial strip is computed as the full
	// strip of the mr rows of A ending with it (rows it shares with the
	// strip before are computed twice, with the same bits, and only its
	// own rows are merged), when A has that many rows; else it is packed.
	back := false
	if j.directA {
		full = mcur / mr * mr
		back = full < mcur && ic+mcur >= mr
		if full < mcur && !back {
			j.packA(ap[:mr*kcur], ic+full, mcur-full, pc, kcur)
		}
	}
	for q := q0; q < q1; q++ {
		col := jc + q*nr
		nrc := min(nr, jc+ncur-col)
		bq := bp[q*nr*kcur : (q+1)*nr*kcur]
		if j.directB {
			j.macroDirectB(c, ldc, tile, ic, mcur, col, pc, kcur, beta, bias)
			continue
		}
		for ir := 0; ir < mcur; ir += mr {
			mrc := min(mr, mcur-ir)
			row := ic + ir
			if j.directA && ir < full {
				ar := j.aAt(row, pc)
				if nrc == nr {
					if bias != nil {
						j.direct(kcur, ar, j.lda, &bq[0], &c[row*ldc+col], ldc, alpha, 0, &bias[col])
						continue
					}
					j.direct(kcur, ar, j.lda, &bq[0], &c[row*ldc+col], ldc, alpha, beta, nil)
					continue
				}
				j.direct(kcur, ar, j.lda, &bq[0], &tile[0], nr, 1, 0, nil)
				j.mergeTile(c, ldc, tile, row, col, mrc, nrc, beta, bias)
				continue
			}
			if back {
				// The strip of rows ic+mcur-mr ..< ic+mcur; this one's
				// mrc rows are its last.
				start := ic + mcur - mr
				j.direct(kcur, j.aAt(start, pc), j.lda, &bq[0], &tile[0], nr, 1, 0, nil)
				j.mergeTile(c, ldc, tile[(mr-mrc)*nr:], row, col, mrc, nrc, beta, bias)
				continue
			}
			var aq []T
			if j.directA {
				aq = ap[:mr*kcur] // the partial strip, packed above
			} else {
				aq = ap[ir*kcur : ir*kcur+mr*kcur]
			}
			if mrc == mr && nrc == nr {
				// The whole tile lies inside C (checked by checkArgs).
				if bias != nil {
					kn.fn(kcur, &aq[0], &bq[0], &c[row*ldc+col], ldc, alpha, 0, &bias[col])
					continue
				}
				kn.fn(kcur, &aq[0], &bq[0], &c[row*ldc+col], ldc, alpha, beta, nil)
				continue
			}
			kn.fn(kcur, &aq[0], &bq[0], &tile[0], nr, 1, 0, nil)
			j.mergeTile(c, ldc, tile, row, col, mrc, nrc, beta, bias)
		}
	}
}

// mergeTile merges the mrc x nrc corner of an edge tile computed with
// alpha 1 and beta 0 into C at (row, col): alpha times it, plus the bias or
// beta times C, each product rounded before the sum (as the kernels round
// alpha times the tile before adding the bias) in every build: the
// conversions keep a compiler from fusing them (GOAMD64=v3).
func (j *job[T]) mergeTile(c []T, ldc int, tile []T, row, col, mrc, nrc int, beta T, bias []T) {
	nr, alpha := j.kn.nr, j.alpha
	for i := range mrc {
		crow := c[(row+i)*ldc+col : (row+i)*ldc+col+nrc]
		trow := tile[i*nr : i*nr+nrc]
		switch {
		case bias != nil:
			bt := bias[col : col+nrc]
			for jj, t := range trow {
				crow[jj] = T(alpha*t) + bt[jj]
			}
		case beta == 0:
			for jj, t := range trow {
				crow[jj] = alpha * t
			}
		default:
			for jj, t := range trow {
				crow[jj] = T(alpha*t) + T(beta*crow[jj])
			}
		}
	}
}

// packA packs rows ic..ic+mcur, columns pc..pc+kcur of op(A) into
// micro-panels of mr rows: element (i, p) of panel r goes to
// dst[r*mr*kcur + p*mr + i]. Rows past the end are zero. A kernel with
// pairs (the bf16 one) gets its own panels instead (packAPairs).
func (j *job[T]) packA(dst []T, ic, mcur, pc, kcur int) {
	if j.kn.pairs != nil {
		j.packAPairs(dst, ic, mcur, pc, kcur)
		return
	}
	j.packAValues(dst, ic, mcur, pc, kcur)
}

// packAValues is packA for a kernel without pairs: float32 panels.
func (j *job[T]) packAValues(dst []T, ic, mcur, pc, kcur int) {
	mr := j.kn.mr
	a, lda := j.a, j.lda
	if j.transA {
		// op(A)[i][p] = a[p*lda+i]: row p of a holds the block's mcur
		// values of column p contiguously. Reading a row at a time streams
		// through memory (a run of mr per row and panel strides through
		// lda-sized rows, which the prefetchers follow poorly); the runs go
		// to the panels, all of which stay in cache.
		panels := ceilDiv(mcur, mr)
		full := mcur / mr
		// The AVX-512 tile: copies of a fixed size, which compile to
		// vector moves where the generic copy calls memmove.
		d32, fast := any(dst).([]float32)
		a32, _ := any(a).([]float32)
		fast = fast && mr == 12
		for p := range kcur {
			src := a[(pc+p)*lda+ic : (pc+p)*lda+ic+mcur]
			if fast {
				copyRuns12(d32, mr*kcur, p*mr, a32[(pc+p)*lda+ic:], full)
			} else {
				for r := range full {
					copy(dst[r*mr*kcur+p*mr:r*mr*kcur+p*mr+mr], src[r*mr:r*mr+mr])
				}
			}
			if full < panels {
				h := mcur - full*mr
				dp := dst[full*mr*kcur+p*mr : full*mr*kcur+p*mr+mr]
				copy(dp, src[full*mr:])
				clear(dp[h:])
			}
		}
		return
	}
	for ir := 0; ir < mcur; ir += mr {
		h := min(mr, mcur-ir)
		d := dst[ir*kcur : ir*kcur+mr*kcur]
		i0 := ic + ir
		// op(A)[i][p] = a[i*lda+p]: each row i is a contiguous run of kcur.
		row := func(i int) []T { return a[(i0+i)*lda+pc : (i0+i)*lda+pc+kcur] }
		if h == mr {
			// The AVX2 transposes pack the first p0 columns of the rows
			// that come in fours; Go loops pack the rest.
			r4 := mr &^ 3
			p0 := packRows(d, mr, a[i0*lda+pc:], lda, r4, kcur)
			for i := r4; i < mr; i++ {
				for p, v := range row(i)[:p0] {
					d[p*mr+i] = v
				}
			}
			if p0 == kcur {
				continue
			}
			dp, kr := d[p0*mr:], kcur-p0
			rest := func(i int) []T { return row(i)[p0:] }
			if mr%6 == 0 {
				for i := 0; i < mr; i += 6 {
					interleave6(dp[i:], mr, kr, rest(i), rest(i+1), rest(i+2), rest(i+3), rest(i+4), rest(i+5))
				}
				continue
			}
			if mr%4 == 0 {
				for i := 0; i < mr; i += 4 {
					interleave4(dp[i:], mr, kr, rest(i), rest(i+1), rest(i+2), rest(i+3))
				}
				continue
			}
		}
		for i := range h {
			for p, v := range row(i) {
				d[p*mr+i] = v
			}
		}
		if h < mr {
			for p := range kcur {
				clear(d[p*mr+h : p*mr+mr])
			}
		}
	}
}

// copyRuns12 copies n runs of 12 values, run r from src[12r:] to
// dst[r*stride+off:].
func copyRuns12(dst []float32, stride, off int, src []float32, n int) {
	for r := range n {
		v := *(*[12]float32)(src[12*r:]) // through a local: no overlap to check, so no memmove
		*(*[12]float32)(dst[r*stride+off:]) = v
	}
}

// copyRows32 copies n rows of 32 values, row p from src[p*ld:] to
// dst[32p:] (through a local array: vector moves, where a copy between
// slices that may overlap calls memmove).
func copyRows32(dst, src []float32, ld, n int) {
	for p := range n {
		v := *(*[32]float32)(src[p*ld:])
		*(*[32]float32)(dst[32*p:]) = v
	}
}

// interleave6 sets d[p*stride+i] = si[p] for i < 6 and p < kc.
func interleave6[T scalar](d []T, stride, kc int, s0, s1, s2, s3, s4, s5 []T) {
	s0, s1, s2, s3, s4, s5 = s0[:kc], s1[:kc], s2[:kc], s3[:kc], s4[:kc], s5[:kc]
	for p := range kc {
		o := d[p*stride : p*stride+6 : p*stride+6]
		o[0], o[1], o[2], o[3], o[4], o[5] = s0[p], s1[p], s2[p], s3[p], s4[p], s5[p]
	}
}

// interleave4 sets d[p*stride+i] = si[p] for i < 4 and p < kc.
func interleave4[T scalar](d []T, stride, kc int, s0, s1, s2, s3 []T) {
	s0, s1, s2, s3 = s0[:kc], s1[:kc], s2[:kc], s3[:kc]
	for p := range kc {
		o := d[p*stride : p*stride+4 : p*stride+4]
		o[0], o[1], o[2], o[3] = s0[p], s1[p], s2[p], s3[p]
	}
}

// packB packs micro-panels q0..q1 of the block of op(B) with rows
// pc..pc+kcur and columns jc..jc+ncur: element (p, j) of panel q goes to
// dst[q*nr*kcur + p*nr + j]. Columns past the end are zero. A kernel with
// pairs (the bf16 one) gets its own panels instead (packBPairs).
func (j *job[T]) packB(dst []T, jc, ncur, pc, kcur, q0, q1 int) {
	if j.directB {
		return // the kernel reads op(B) in place
	}
	if j.kn.pairs != nil {
		j.packBPairs(dst, jc, ncur, pc, kcur, q0, q1)
		return
	}
	j.packBValues(dst, jc, ncur, pc, kcur, q0, q1)
}

// packBValues is packB for a kernel without pairs: float32 panels.
func (j *job[T]) packBValues(dst []T, jc, ncur, pc, kcur, q0, q1 int) {
	nr := j.kn.nr
	b, ldb := j.b, j.ldb
	for q := q0; q < q1; q++ {
		col := jc + q*nr
		w := min(nr, jc+ncur-col)
		d := dst[q*nr*kcur : (q+1)*nr*kcur]
		if !j.transB {
			// op(B)[p][j] = b[p*ldb+j]: each p is a contiguous run of w.
			if d32, ok := any(d).([]float32); ok && nr == 32 && w == nr {
				// The AVX-512 tile's full panels: vector moves, not a
				// memmove call per row.
				copyRows32(d32, any(b).([]float32)[pc*ldb+col:], ldb, kcur)
				continue
			}
			for p := range kcur {
				src := b[(pc+p)*ldb+col : (pc+p)*ldb+col+w]
				dp := d[p*nr : p*nr+nr]
				copy(dp, src)
				clear(dp[w:])
			}
			continue
		}
		// op(B)[p][j] = b[j*ldb+p]: each column j is a contiguous run of kcur.
		colj := func(jj int) []T { return b[(col+jj)*ldb+pc : (col+jj)*ldb+pc+kcur] }
		if w == nr && nr%4 == 0 {
			p0 := packRows(d, nr, b[col*ldb+pc:], ldb, nr, kcur)
			if p0 < kcur {
				rest := func(jj int) []T { return colj(jj)[p0:] }
				for jj := 0; jj < nr; jj += 4 {
					interleave4(d[p0*nr+jj:], nr, kcur-p0, rest(jj), rest(jj+1), rest(jj+2), rest(jj+3))
				}
			}
			continue
		}
		for jj := range w {
			for p, v := range colj(jj) {
				d[p*nr+jj] = v
			}
		}
		if w < nr {
			for p := range kcur {
				clear(d[p*nr+w : p*nr+nr])
			}
		}
	}
}
