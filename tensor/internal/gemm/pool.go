package gemm

import (
	"sync"
	"sync/atomic"

	"lgflow/internal/parallel"
)

// runner is a job whose workers 0..nw-1 run concurrently.
type runner interface{ runWorker(w int) }

// workerPool runs workers 1..nw-1 of a parallel GEMM on the helper
// goroutines of package parallel (shared with the tensor kernels) while
// the calling goroutine runs worker 0. Holding mu gives exclusive use of
// the pool and of the typeState.par jobs; a call that finds it held runs
// single-threaded instead of waiting.
//
// Helpers join by claiming the next worker number; when worker 0 is done,
// the caller closes the call to further helpers and waits for those that
// joined. A job never waits for a worker to start (its work is handed out
// dynamically, see job), so it completes with whoever joined.
type workerPool struct {
	mu    sync.Mutex
	r     runner
	state atomic.Uint64 // generation<<32 | workers<<16 | next worker number
	done  parallel.Count
}

var pool workerPool

// maxWorkers bounds the threads of one call.
const maxWorkers = 256

// start returns the number of workers a call of nw may use: nw capped by
// the helpers available plus the calling goroutine. The caller holds p.mu.
func (p *workerPool) start(nw int) int {
	return max(1, min(nw, maxWorkers, parallel.Helpers()+1))
}

// run runs workers 0..nw-1 of r, worker 0 in the calling goroutine, and
// returns when all that started have finished. The caller holds p.mu.
func (p *workerPool) run(r runner, nw int) {
	p.r = r
	p.done.Add(nw - 1)
	head := ((p.state.Load()>>32)+1)<<32 | uint64(nw)<<16
	p.state.Store(head | 1) // worker 0 is the caller's
	t := parallel.Offer(p, nw-1)
	r.runWorker(0)
	parallel.Withdraw(t)
	// Close: workers not yet claimed will not run.
	for {
		s := p.state.Load()
		next := int(s & 0xffff)
		if p.state.CompareAndSwap(s, head|uint64(nw)) {
			p.done.Add(-(nw - next))
			break
		}
	}
	p.done.Wait()
	p.r = nil
}

// Help claims the next worker number of the current call, if any, and runs
// it. The fields are read only after a claim, which a helper of an earlier
// generation cannot win.
func (p *workerPool) Help() {
	for {
		s := p.state.Load()
		w, nw := int(s&0xffff), int(s>>16&0xffff)
		if w >= nw {
			return
		}
		if p.state.CompareAndSwap(s, s+1) {
			p.r.runWorker(w)
			p.done.Done()
			return
		}
	}
}
