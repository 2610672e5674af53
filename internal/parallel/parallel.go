// Package parallel splits CPU kernels over cores: by column blocks (each
// goroutine owns whole columns, so sums over rows keep their order and their
// rounding) or by row ranges. Jobs below MinWork run on the calling
// goroutine.
package parallel

import (
	"runtime"
	"sync"
)

// MinWork is the amount of work (elements touched) below which a kernel
// runs on the calling goroutine only.
const MinWork = 1 << 15

// Cols splits the columns [0, cols) into one block per CPU, aligned to 16
// elements (so blocks do not share cache lines), and runs f on each block
// concurrently; small jobs (work < MinWork, fewer than 32 columns, or one
// CPU) run inline as f(0, cols).
func Cols(cols, work int, f func(lo, hi int)) {
	p := runtime.GOMAXPROCS(0)
	if p == 1 || work < MinWork || cols < 32 {
		f(0, cols)
		return
	}
	block := (cols + p - 1) / p
	block = (block + 15) &^ 15
	var wg sync.WaitGroup
	for lo := block; lo < cols; lo += block {
		hi := min(lo+block, cols)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	f(0, min(block, cols))
	wg.Wait()
}

// Rows runs f on contiguous row ranges of [0, rows), one per CPU; small
// jobs (work < MinWork, fewer than 2 rows, or one CPU) run inline as
// f(0, rows).
func Rows(rows, work int, f func(lo, hi int)) {
	p := runtime.GOMAXPROCS(0)
	if p == 1 || work < MinWork || rows < 2 {
		f(0, rows)
		return
	}
	p = min(p, rows)
	var wg sync.WaitGroup
	for w := 1; w < p; w++ {
		lo, hi := rows*w/p, rows*(w+1)/p
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	f(0, rows/p)
	wg.Wait()
}
