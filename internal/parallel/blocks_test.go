package parallel

import (
	"slices"
	"sync"
	"testing"
)

// TestBlocksOrder: Front claims ascending and Back descending blocks until
// the ends meet, each block once, for any interleaving of the two.
func TestBlocksOrder(t *testing.T) {
	for _, c := range []struct {
		n     int
		claim string // F: Front, B: Back, one letter a claim
		front []int  // blocks Front got, in order
		back  []int  // blocks Back got, in order
	}{
		{n: 0, claim: "FB"},
		{n: 1, claim: "FB", front: []int{0}},
		{n: 1, claim: "BF", back: []int{0}},
		{n: 4, claim: "FFFFF", front: []int{0, 1, 2, 3}},
		{n: 4, claim: "BBBBB", back: []int{3, 2, 1, 0}},
		{n: 4, claim: "FBFBFB", front: []int{0, 1}, back: []int{3, 2}},
		{n: 5, claim: "FBBFFF", front: []int{0, 1, 2}, back: []int{4, 3}},
		{n: 64, claim: "BFB", front: []int{0}, back: []int{63, 62}},
	} {
		var b Blocks
		b.Reset(7)
		b.Front() // an earlier call's state, left half claimed
		b.Reset(c.n)
		var front, back []int
		for _, k := range c.claim {
			if k == 'F' {
				if i, ok := b.Front(); ok {
					front = append(front, i)
				}
			} else if i, ok := b.Back(); ok {
				back = append(back, i)
			}
		}
		if !slices.Equal(front, c.front) || !slices.Equal(back, c.back) {
			t.Errorf("n=%d, %s: front %v back %v, want %v and %v", c.n, c.claim, front, back, c.front, c.back)
		}
	}
}

// TestBlocksConcurrent: blocks claimed from both ends by several goroutines
// at once are each claimed exactly once, call after call.
func TestBlocksConcurrent(t *testing.T) {
	var b Blocks
	for _, n := range []int{1, 2, 3, 64, 1000} {
		for range 20 {
			seen := make([]int, n)
			var mu sync.Mutex
			var wg sync.WaitGroup
			b.Reset(n)
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					claim := b.Front
					if g%2 == 1 {
						claim = b.Back
					}
					for i, ok := claim(); ok; i, ok = claim() {
						mu.Lock()
						seen[i]++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			for i, s := range seen {
				if s != 1 {
					t.Fatalf("n=%d: block %d claimed %d times", n, i, s)
				}
			}
		}
	}
}
