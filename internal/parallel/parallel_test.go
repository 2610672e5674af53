package parallel

import (
	"runtime"
	"sync"
	"testing"
)

// TestCover: every column and row is visited exactly once, in blocks that
// tile the range, whatever the size and the number of CPUs.
func TestCover(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, c := range []struct{ n, work int }{{0, 0}, {1, MinWork}, {31, MinWork}, {32, MinWork}, {100, MinWork}, {1000, 1}, {1000, MinWork}, {4099, 1 << 20}} {
			for name, split := range map[string]func(int, int, func(int, int)){"Cols": Cols, "Rows": Rows} {
				seen := make([]int, c.n)
				var mu sync.Mutex
				split(c.n, c.work, func(lo, hi int) {
					if lo > hi || lo < 0 || hi > c.n {
						t.Errorf("%s(%d): block [%d, %d)", name, c.n, lo, hi)
						return
					}
					mu.Lock()
					for i := lo; i < hi; i++ {
						seen[i]++
					}
					mu.Unlock()
				})
				for i, s := range seen {
					if s != 1 {
						t.Fatalf("%s(n=%d, work=%d, procs=%d): index %d visited %d times", name, c.n, c.work, procs, i, s)
					}
				}
			}
		}
	}
}

// TestColsAligned: with several CPUs and enough work, column blocks start
// on multiples of 16.
func TestColsAligned(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var mu sync.Mutex
	var starts []int
	Cols(1000, MinWork, func(lo, hi int) {
		mu.Lock()
		starts = append(starts, lo)
		mu.Unlock()
	})
	if len(starts) != 2 {
		t.Fatalf("%d blocks on 2 CPUs, want 2", len(starts))
	}
	for _, s := range starts {
		if s%16 != 0 {
			t.Errorf("block starts at %d, not a multiple of 16", s)
		}
	}
}
