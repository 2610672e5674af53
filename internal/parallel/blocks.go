package parallel

import "sync/atomic"

// Blocks hands out the numbered blocks [0, n) of a job: the job's owner
// claims them from the front (Front) and helpers from the back (Back),
// until the two ends meet. With work split the same way, consecutive
// kernels over the same rows then run each block on the core that ran it
// last and find its data in that core's cache: on two cores the owner
// keeps the low half of the rows and the helper the high half, where
// blocks claimed from one end by both alternated between the cores.
//
// A Blocks is reused across calls: every Reset starts a new generation, so
// that a claim of a stale helper, which reads the state of an earlier call,
// cannot succeed. The zero value holds no blocks.
type Blocks struct {
	state atomic.Uint64 // generation<<32 | front<<16 | end
}

// MaxBlocks is the most blocks a Blocks hands out.
const MaxBlocks = 1<<16 - 1

// Reset makes blocks [0, n) claimable; n must be at most MaxBlocks. It
// publishes whatever the caller wrote before (the job's arguments) to the
// goroutines that claim a block.
func (b *Blocks) Reset(n int) {
	if n < 0 || n > MaxBlocks {
		panic("parallel: Blocks.Reset: block count out of range")
	}
	gen := b.state.Load()>>32 + 1
	b.state.Store(gen<<32 | uint64(n))
}

// Front claims the lowest unclaimed block and reports whether there was
// one.
func (b *Blocks) Front() (int, bool) { return b.claim(true) }

// Back claims the highest unclaimed block and reports whether there was
// one.
func (b *Blocks) Back() (int, bool) { return b.claim(false) }

// claim claims the block at the front or the back of the unclaimed ones.
func (b *Blocks) claim(front bool) (int, bool) {
	for {
		s := b.state.Load()
		lo, end := s>>16&0xffff, s&0xffff
		if lo >= end {
			return 0, false
		}
		next, block := s+1<<16, lo // the front moves up
		if !front {
			next, block = s-1, end-1 // the end moves down
		}
		if b.state.CompareAndSwap(s, next) {
			return int(block), true
		}
	}
}
