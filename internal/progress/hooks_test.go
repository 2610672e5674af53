package progress

import (
	"math"
	"strings"
	"testing"

	"lgflow/flow"
	"lgflow/vae"
)

// TestText checks what TextHooks writes to a log (not a terminal):
// messages, a bar line per tenth of a stage and at its end, and training
// lines only when they report something new within logEvery.
func TestText(t *testing.T) {
	var b strings.Builder
	h := Text(&b)
	h.Log("hello")
	for i := 0; i <= 100; i++ {
		h.Progress("stage", i, 100)
	}
	h.Progress("stage", 100, 100) // finished: nothing more
	nan := math.NaN()
	for _, p := range []flow.Progress{
		{Step: 10, Steps: 30, Score: nan},                 // first line: printed
		{Step: 20, Steps: 30, Score: nan},                 // nothing new within 30 s
		{Step: 20, Steps: 30, Score: 0.5, BestScore: 0.5}, // a validation: printed
		{Step: 30, Steps: 30, Score: 0.5, BestScore: 0.5}, // the last step: printed
	} {
		h.Flow(p)
	}
	h.VAE(vae.Progress{Step: 1, Steps: 9})
	h.VAE(vae.Progress{Step: 2, Steps: 9})
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	count := func(prefix string) int {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		prefix string
		want   int
	}{{"hello", 1}, {"stage ", 11}, {"LG-Flow step", 3}, {"LG-Flow step 20/30", 1}, {"LG-VAE step", 1}} {
		if got := count(c.prefix); got != c.want {
			t.Errorf("%d lines starting %q, want %d:\n%s", got, c.prefix, c.want, b.String())
		}
	}
	if strings.Contains(b.String(), "\r") {
		t.Errorf("carriage return in a log:\n%q", b.String())
	}
	if !strings.Contains(b.String(), "val score 0.500 (best 0.500)") {
		t.Errorf("no validation score:\n%s", b.String())
	}
}
