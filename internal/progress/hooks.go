package progress

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"lgflow/flow"
	"lgflow/vae"
)

// Hooks receive the progress of a long run (the dataset pipeline, bundle
// training, tuning). Nil fields are skipped; the
// functions may be called from several goroutines, one call at a time per
// stage.
type Hooks struct {
	// Log receives one-line messages: what is being done, notes, results.
	Log func(msg string)
	// Progress receives the progress of a long stage ("planar train",
	// "eigenpairs (train)", "sampling", "evaluating: statistics", ...):
	// units done and the total.
	Progress func(stage string, done, total int)
	// VAE and Flow receive the training progress of the two models.
	VAE  func(vae.Progress)
	Flow func(flow.Progress)
}

// Say sends msg to the Log hook, if any.
func (h Hooks) Say(msg string) {
	if h.Log != nil {
		h.Log(msg)
	}
}

// Stage returns a done/total callback for one stage, or nil without a
// Progress hook.
func (h Hooks) Stage(stage string) func(done, total int) {
	if h.Progress == nil {
		return nil
	}
	return func(done, total int) { h.Progress(stage, done, total) }
}

// Text returns Hooks that print to w: messages as lines, stage
// progress as one bar per stage (redrawn in place on a terminal, a line
// per tenth of the work elsewhere), and a training line every logged step.
func Text(w io.Writer) Hooks {
	tty := isTerminal(w)
	var mu sync.Mutex
	bars := map[string]*textBar{}
	// ends a training line before anything else prints
	pending := false
	var vaeLine, flowLine trainLog
	lastScore := math.NaN()
	var lastVal *vae.Accuracy // the latest LG-VAE validation reported
	endLine := func() {
		if pending {
			io.WriteString(w, "\n")
			pending = false
		}
	}
	return Hooks{
		Log: func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			endLine()
			fmt.Fprintln(w, msg)
		},
		Progress: func(stage string, done, total int) {
			mu.Lock()
			defer mu.Unlock()
			b, ok := bars[stage]
			if !ok {
				b = &textBar{label: stage, start: time.Now(), last: -1, tty: tty}
				bars[stage] = b
			}
			if s := b.update(done, total); s != "" {
				endLine()
				io.WriteString(w, s)
			}
		},
		VAE: func(p vae.Progress) {
			mu.Lock()
			defer mu.Unlock()
			line := fmt.Sprintf("LG-VAE step %d/%d loss %.4f best val sample acc %.3f, %.1f steps/s, eta %s",
				p.Step, p.Steps, p.Loss, max(p.BestSample, 0), p.StepsPerSecond, p.ETA.Round(time.Second))
			vaeLine.print(w, line, tty, &pending, p.Val != lastVal || p.Step == p.Steps)
			lastVal = p.Val
		},
		Flow: func(p flow.Progress) {
			mu.Lock()
			defer mu.Unlock()
			line := fmt.Sprintf("LG-Flow step %d/%d loss %.4f, %.1f steps/s, eta %s", p.Step, p.Steps, p.Loss, p.StepsPerSecond, p.ETA.Round(time.Second))
			if p.Score == p.Score { // not NaN
				line += fmt.Sprintf(", val score %.3f (best %.3f)", p.Score, p.BestScore)
			}
			newScore := p.Score != lastScore && !(math.IsNaN(p.Score) && math.IsNaN(lastScore))
			flowLine.print(w, line, tty, &pending, newScore || p.Step == p.Steps)
			lastScore = p.Score
		},
	}
}

// trainLog prints training progress lines: redrawn in place on a
// terminal; elsewhere (a log file) one line every logEvery, and whenever
// the line reports something new.
type trainLog struct{ last time.Time }

// logEvery is the interval between training lines in a log file.
const logEvery = 30 * time.Second

func (l *trainLog) print(w io.Writer, line string, tty bool, pending *bool, news bool) {
	if tty {
		io.WriteString(w, "\r"+line+"   ")
		*pending = true
		return
	}
	if !news && time.Since(l.last) < logEvery {
		return
	}
	l.last = time.Now()
	io.WriteString(w, line+"\n")
}

// textBar is one stage's progress bar.
type textBar struct {
	label string
	start time.Time
	last  int
	tty   bool
}

// update returns what to print for done/total, or "": on a terminal at
// every new percent, elsewhere at every new tenth, and once at the end.
func (b *textBar) update(done, total int) string {
	total = max(total, 1)
	done = min(max(done, 0), total)
	pct := 100 * done / total
	step := 1
	if !b.tty {
		step = 10
	}
	if b.last == 100 || (done < total && b.last >= 0 && pct/step <= b.last/step) {
		return ""
	}
	b.last = pct
	const width = 30
	fill := width * done / total
	s := fmt.Sprintf("%-22s [%s%s] %3d%% (%d/%d)", b.label, strings.Repeat("#", fill), strings.Repeat(".", width-fill), pct, done, total)
	if done == total {
		s += fmt.Sprintf(" %.1fs\n", time.Since(b.start).Seconds())
	} else if !b.tty {
		s += "\n"
	}
	if b.tty {
		s = "\r" + s
	}
	return s
}
