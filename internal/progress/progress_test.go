package progress

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func fakeClock() func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func TestBarTerminal(t *testing.T) {
	var b strings.Builder
	f := newBar(&b, "x", true, fakeClock())
	f(0, 4)
	f(0, 4) // same percentage: no redraw
	f(2, 4)
	f(4, 4)
	f(4, 4) // finished: nothing more
	out := b.String()
	if n := strings.Count(out, "\r"); n != 3 {
		t.Fatalf("%d redraws, want 3:\n%q", n, out)
	}
	if n := strings.Count(out, "\n"); n != 1 {
		t.Fatalf("%d line ends, want 1:\n%q", n, out)
	}
	if !strings.Contains(out, " 50% (2/4)") || !strings.HasSuffix(out, "100% (4/4) 1.0s\n") {
		t.Fatalf("unexpected output %q", out)
	}
}

func TestBarLog(t *testing.T) {
	var b strings.Builder
	f := newBar(&b, "x", false, fakeClock())
	for i := 0; i <= 1000; i++ {
		f(i, 1000)
	}
	out := b.String()
	if strings.Contains(out, "\r") {
		t.Fatalf("carriage return in a log:\n%q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 11 { // 0%, 10%, ..., 90%, 100%
		t.Fatalf("%d lines, want 11:\n%s", len(lines), out)
	}
	if !strings.Contains(lines[5], " 50% (500/1000)") || !strings.HasSuffix(lines[10], "100% (1000/1000) 1.0s") {
		t.Fatalf("unexpected output:\n%s", out)
	}
}

func TestBarClampsAndIsConcurrent(t *testing.T) {
	var mu sync.Mutex
	var b strings.Builder
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return b.Write(p)
	})
	f := newBar(w, "x", false, fakeClock())
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i <= 100; i++ {
				f(i, 100)
			}
		}()
	}
	wg.Wait()
	f(200, 100) // past the end: clamped, already finished
	if n := strings.Count(b.String(), "100% (100/100)"); n != 1 {
		t.Fatalf("finished %d times, want once:\n%s", n, b.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
