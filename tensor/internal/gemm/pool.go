package gemm

import "sync"

// runner is a job whose workers 0..nw-1 run concurrently.
type runner interface{ runWorker(w int) }

// workerPool is a fixed set of helper goroutines that run workers 1..nw-1
// of a parallel GEMM while the calling goroutine runs worker 0. Holding mu
// gives exclusive use of the pool and of the typeState.par jobs; a call
// that finds it held runs single-threaded instead of waiting.
type workerPool struct {
	mu   sync.Mutex
	work []chan runner // one per helper goroutine; helpers never exit
	done sync.WaitGroup
}

var pool workerPool

// maxHelpers bounds the helper goroutines (and so the threads of one call).
const maxHelpers = 255

// start makes sure at least nw-1 helpers exist and returns nw, capped by
// maxHelpers+1. The caller holds p.mu.
func (p *workerPool) start(nw int) int {
	nw = min(nw, maxHelpers+1)
	for len(p.work) < nw-1 {
		ch := make(chan runner)
		p.work = append(p.work, ch)
		w := len(p.work) // worker index this helper runs
		go p.helper(ch, w)
	}
	return nw
}

// helper runs worker w of each job sent on ch.
func (p *workerPool) helper(ch chan runner, w int) {
	for r := range ch {
		r.runWorker(w)
		p.done.Done()
	}
}

// run runs workers 0..nw-1 of r, worker 0 in the calling goroutine, and
// returns when all have finished. The caller holds p.mu.
func (p *workerPool) run(r runner, nw int) {
	p.done.Add(nw - 1)
	for i := range nw - 1 {
		p.work[i] <- r
	}
	r.runWorker(0)
	p.done.Wait()
}
