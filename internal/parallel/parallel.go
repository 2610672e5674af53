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
	"sync/atomic"
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

// split is one call of Cols or Rows: blocks claimed with an atomic counter
// by the caller and by helpers (Offer). state holds a generation (the
// struct is pooled and reused) and the count of unclaimed blocks, so a
// helper that took the offer late claims nothing of the call it was
// offered, only blocks of a later use, which it then helps with.
type split struct {
	f     func(lo, hi int)
	state atomic.Uint64 // generation<<32 | blocks not yet claimed
	wg    Count

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
	gen := (s.state.Load() >> 32) + 1
	s.state.Store(gen<<32 | uint64(n))
	t := Offer(s, min(n-1, Helpers()))
	s.Help()
	Withdraw(t)
	s.wg.Wait()
	s.f = nil
	splitPool.Put(s)
}

// Help runs unclaimed blocks until none are left (the last first). The
// fields are read only after a claim, which a stale generation cannot win.
func (s *split) Help() {
	for {
		st := s.state.Load()
		rem := st & 0xffffffff
		if rem == 0 {
			return
		}
		if !s.state.CompareAndSwap(st, st-1) {
			continue
		}
		b := int(rem - 1)
		if s.cols > 0 {
			lo := b * s.block
			s.f(lo, min(lo+s.block, s.cols))
		} else {
			s.f(s.rows*b/s.parts, s.rows*(b+1)/s.parts)
		}
		s.wg.Done()
	}
}
