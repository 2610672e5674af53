// Package progress draws one-line progress bars for the lgflow command and
// the examples.
package progress

import (
	"fmt"
	"io"
	"strings"
)

// Bar returns a callback that redraws "label [####....] pct% (done/total)"
// on w whenever the percentage changes, ending the line when done reaches
// total.
func Bar(w io.Writer, label string) func(done, total int) {
	last := -1
	return func(done, total int) {
		total = max(total, 1)
		pct := 100 * done / total
		if pct == last {
			return
		}
		last = pct
		const width = 30
		fill := min(width*done/total, width)
		fmt.Fprintf(w, "\r%-22s [%s%s] %3d%% (%d/%d)", label, strings.Repeat("#", fill), strings.Repeat(".", width-fill), pct, done, total)
		if done >= total {
			fmt.Fprintln(w)
		}
	}
}
