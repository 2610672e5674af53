package progress

import (
	"strings"
	"testing"
)

func TestBar(t *testing.T) {
	var b strings.Builder
	f := Bar(&b, "x")
	f(0, 4)
	f(0, 4) // same percentage: no redraw
	f(2, 4)
	f(4, 4)
	out := b.String()
	if n := strings.Count(out, "\r"); n != 3 {
		t.Fatalf("%d redraws, want 3:\n%q", n, out)
	}
	if !strings.Contains(out, " 50% (2/4)") || !strings.HasSuffix(out, "100% (4/4)\n") {
		t.Fatalf("unexpected output %q", out)
	}
}
