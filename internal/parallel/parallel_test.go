package parallel

import (
	"runtime"
	"sync"
	"testing"
	"time"
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

// TestNestedConcurrent: splits called from several goroutines at once, and
// from inside other splits, each cover their range exactly once (the
// helpers take the offers of all of them).
func TestNestedConcurrent(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const outer, inner = 8, 1000
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := range 50 {
				var seen [outer][inner]int32
				Rows(outer, MinWork, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						Cols(inner, MinWork, func(clo, chi int) {
							for c := clo; c < chi; c++ {
								seen[i][c]++
							}
						})
					}
				})
				for i := range outer {
					for c, s := range seen[i] {
						if s != 1 {
							t.Errorf("goroutine %d, rep %d: (%d, %d) visited %d times", g, rep, i, c, s)
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestCountWait: Wait returns only when every piece is done, also when the
// pieces outlast the spin.
func TestCountWait(t *testing.T) {
	var c Count
	var done [3]bool
	c.Add(3)
	for i := range 3 {
		go func() {
			time.Sleep(time.Duration(i) * SpinTime)
			done[i] = true
			c.Done()
		}()
	}
	c.Wait()
	for i, d := range done {
		if !d {
			t.Errorf("piece %d not done when Wait returned", i)
		}
	}
}
