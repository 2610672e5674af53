package optim

import (
	"runtime"
	"sync"
)

// parallelGrain is the smallest number of elements worth a goroutine.
const parallelGrain = 1 << 15

// parallelFor calls fn on contiguous ranges covering [0, n), on up to
// GOMAXPROCS goroutines when n is large (one goroutine per range, a few
// per call; nothing is allocated per element), otherwise inline.
func parallelFor(n int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/parallelGrain)
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := chunk; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	fn(0, min(chunk, n))
	wg.Wait()
}
