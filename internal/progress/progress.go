// Package progress draws one-line progress bars for the lgflow command and
// the examples, and carries a long run's progress (Hooks; Text prints
// it): terminal output, which only programs do.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar returns a callback that reports "label [####....] pct% (done/total)"
// on w, ending with the elapsed time when done reaches total. On a terminal
// it redraws one line in place whenever the percentage changes; anywhere else
// (a log file, a pipe) it writes a whole line at every tenth of the work, so
// logs stay short. The callback is safe for concurrent use.
func Bar(w io.Writer, label string) func(done, total int) {
	return newBar(w, label, isTerminal(w), time.Now)
}

func newBar(w io.Writer, label string, terminal bool, now func() time.Time) func(done, total int) {
	var mu sync.Mutex
	start := now()
	step := 1
	if !terminal {
		step = 10
	}
	last := -step
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		total = max(total, 1)
		done = min(max(done, 0), total)
		pct := 100 * done / total
		if done < total && pct/step <= last/step || done == total && last == 100 {
			return
		}
		last = pct
		const width = 30
		fill := width * done / total
		line := fmt.Sprintf("%-22s [%s%s] %3d%% (%d/%d)", label, strings.Repeat("#", fill), strings.Repeat(".", width-fill), pct, done, total)
		switch {
		case done == total:
			line += fmt.Sprintf(" %.1fs\n", now().Sub(start).Seconds())
		case !terminal:
			line += "\n"
		}
		if terminal {
			line = "\r" + line
		}
		io.WriteString(w, line)
	}
}

// IsTerminal reports whether w is a character device such as a terminal.
func IsTerminal(w io.Writer) bool { return isTerminal(w) }

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
