// Package parallel splits CPU kernels over cores: by column blocks (each
// goroutine owns whole columns, so sums over rows keep their order and their
// rounding) or by row ranges. Jobs below MinWork run on the calling
// goroutine.
//
// All of lgflow's CPU kernels (these splits, package tensor's chunked
// kernels and its GEMM) share one set of helper goroutines (see Offer): a
// helper that has just finished a piece of work spins for a short while
// (SpinTime), then polls in short sleeps, before it parks, so that the next
// kernel, usually a few microseconds later, finds it running. Waking a parked goroutine's thread
// takes tens of microseconds, more on a virtual machine whose idle CPU has
// halted, which is as long as a whole kernel of a small model: with parked
// helpers most kernels ran on the calling goroutine alone.
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
	s := getSplit(f)
	s.cols, s.block = cols, block
	s.run((cols + block - 1) / block)
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
	s := getSplit(f)
	s.rows, s.parts = rows, p
	s.run(p)
}

// split is one call of Cols or Rows: blocks claimed by the caller from
// the front and by helpers (Offer) from the back (Blocks). The struct is
// pooled and reused: a helper that took the offer late claims nothing of
// the call it was offered, only blocks of a later use, which it then helps
// with.
type split struct {
	f      func(lo, hi int)
	blocks Blocks
	wg     Count

	cols, block int // Cols: block b is [b*block, min((b+1)*block, cols))
	rows, parts int // Rows (cols == 0): block b is [rows*b/parts, rows*(b+1)/parts)
}

var splitPool = sync.Pool{New: func() any { return new(split) }}

func getSplit(f func(lo, hi int)) *split {
	s := splitPool.Get().(*split)
	s.f = f
	s.cols, s.block, s.rows, s.parts = 0, 0, 0, 0
	return s
}

func (s *split) run(n int) {
	s.wg.Add(n)
	s.blocks.Reset(n)
	t := Offer(s, min(n-1, Helpers()))
	for b, ok := s.blocks.Front(); ok; b, ok = s.blocks.Front() {
		s.block1(b)
	}
	Withdraw(t)
	s.wg.Wait()
	s.f = nil
	splitPool.Put(s)
}

// Help runs unclaimed blocks, the last first, until none are left. The
// fields are read only after a claim, which a stale generation cannot win.
func (s *split) Help() {
	for b, ok := s.blocks.Back(); ok; b, ok = s.blocks.Back() {
		s.block1(b)
	}
}

// block1 runs block b.
func (s *split) block1(b int) {
	if s.cols > 0 {
		lo := b * s.block
		s.f(lo, min(lo+s.block, s.cols))
	} else {
		s.f(s.rows*b/s.parts, s.rows*(b+1)/s.parts)
	}
	s.wg.Done()
}
