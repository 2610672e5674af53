package bundle

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// replanAt are the fractions of a training stage's share of the budget
// at which the first run of a budgeted TrainBundle re-plans the stage's
// steps from the rate it measured so far: the stage trains in slices that
// end there, and the last slice runs to the end of the share. The last
// re-plan, late, leaves little time for the rate to change in (on a
// machine shared with other work it does).
var replanAt = []float64{0.1, 0.3, 0.6, 0.85}

// replanMargin is the part of a stage's time left that a re-plan holds
// back, for the steps to come running slower than those so far and for
// the final validation and checkpoint; the last slice of a stage whose
// overrun the next absorbs (stage.grace) may use it, so that its steps
// end the stage's schedule rather than stop a few short.
const replanMargin = 0.03

// replanSteps returns the total steps of a stage that has done done steps
// and has left to go at rate steps per second (stageRate): done plus the
// steps that fit in left, less replanMargin, within [done+1, limit]
// (limit: the preset's steps; when done has reached it, limit). Without a
// rate (no step done, no time spent) it returns 0: keep the plan.
func replanSteps(done int, rate float64, left time.Duration, limit int) int {
	if done <= 0 || !(rate > 0) {
		return 0
	}
	if done >= limit {
		return limit
	}
	more := 0.0
	if left > 0 {
		more = rate * left.Seconds() * (1 - replanMargin)
	}
	n := done + int(min(more, float64(limit))) // min: no overflow
	return min(max(n, done+1), limit)
}

// stageRate returns the steps per second a re-plan plans with: the
// stage's rate so far, done steps in spent (its wall time training:
// steps, validations, checkpoints), or its last slice's, recentSteps in
// recent, when that is slower (the rate is falling: a machine shared
// with other work, slower steps as the model learns), and whether it is
// the last slice's. Without steps or time it returns 0.
func stageRate(done int, spent time.Duration, recentSteps int, recent time.Duration) (float64, bool) {
	if done <= 0 || spent <= 0 {
		return 0, false
	}
	rate := float64(done) / spent.Seconds()
	if recentSteps > 0 && recent > 0 && recent < spent {
		if r := float64(recentSteps) / recent.Seconds(); r < rate {
			return r, true
		}
	}
	return rate, false
}

// sliceEnd returns the end of slice i of a stage that runs from start to
// end: replanAt[i] of the way, and end for the last slice (i >=
// len(replanAt)).
func sliceEnd(start, end time.Time, i int) time.Time {
	if i >= len(replanAt) {
		return end
	}
	return start.Add(time.Duration(replanAt[i] * float64(end.Sub(start))))
}

// measureEstimate is the time the final measurement of n samples takes
// when that of k samples took probe: it grows with the samples (their
// sampling, decoding and statistics), plus a tenth for the kernels'
// comparisons with the validation graphs. It overstates the part that
// does not grow with n (the validation graphs' statistics), so the run
// ends a little early rather than late.
func measureEstimate(probe time.Duration, k, n int) time.Duration {
	if k <= 0 {
		return probe
	}
	return time.Duration(float64(probe) * float64(n) / float64(k) * 1.1)
}

// probeSamples is the number of samples the probe of the final
// measurement (measureEstimate) draws, at most n.
func probeSamples(n int) int { return min(n, 16) }

// stage is one budgeted training of a first run, trained in slices
// (trainSliced): the re-planning of its steps and its training.
type stage struct {
	// name is the model's name in messages ("LG-VAE", "LG-Flow").
	name string
	// start is when the stage's training began; end returns the end of
	// its share of the budget (the flow's moves with the measurement's
	// estimate).
	start time.Time
	end   func() time.Time
	// limit is the preset's steps, the most a re-plan sets.
	limit int
	// grace lets the last slice overrun the share by replanMargin of its
	// time: the LG-VAE's, whose overrun the flow absorbs (the flow's
	// share ends where the run must).
	grace bool
	// steps returns the planned steps; replan sets them, done steps in
	// (and what follows from them, keeping what the steps taken depend
	// on).
	steps  func() int
	replan func(steps, done int)
	// train trains a slice: resuming from the checkpoint, for at most
	// d, then writing a checkpoint.
	train func(ctx context.Context, d time.Duration) error
	// done returns the steps done (the checkpoint's).
	done func() int
	// afterSlice, when not nil, runs after slice i but the last, before
	// the re-plan; its time does not count as the stage's training time.
	afterSlice func(ctx context.Context, i int) error
}

// trainSliced trains s in slices up to sliceEnd(i), re-planning its steps
// after each but the last from the steps done over the time the stage has
// trained (or over the last slice, when slower: stageRate), and saving the
// plan. A stage that reaches the preset's steps, or has no time left,
// ends there.
func (r *bundleRun) trainSliced(ctx context.Context, s stage) error {
	var paused time.Duration // time in afterSlice
	// The steps done and the training time at the last re-plan.
	prevDone, prevSpent := 0, time.Duration(0)
	for i := 0; i <= len(replanAt); i++ {
		last := i == len(replanAt)
		d := time.Until(sliceEnd(s.start, s.end(), i))
		if last && s.grace {
			// The margin the last re-plan held back, for the steps
			// planned to finish rather than stop a few short.
			d += time.Duration(replanMargin * float64(d))
		}
		switch {
		case d <= 0 && !last:
			// A late slice (slow checkpoints, a long probe): re-plan now.
		default:
			if err := s.train(ctx, max(d, time.Millisecond)); err != nil {
				return err
			}
		}
		if last {
			return nil
		}
		done := s.done()
		if done >= s.limit {
			return nil
		}
		if s.afterSlice != nil {
			t0 := time.Now()
			if err := s.afterSlice(ctx, i); err != nil {
				return err
			}
			paused += time.Since(t0)
		}
		spent, left := time.Since(s.start)-paused, time.Until(s.end())
		if left <= 0 {
			return nil // the share is spent (a late probe, slow checkpoints)
		}
		rate, recent := stageRate(done, spent, done-prevDone, spent-prevSpent)
		n := replanSteps(done, rate, left, s.limit)
		if n == 0 {
			continue
		}
		s.replan(n, done)
		msg := fmt.Sprintf("%s: %.1f steps/s measured over %s", s.name, float64(done)/spent.Seconds(), roundTime(spent))
		if recent {
			msg += fmt.Sprintf(" (%.1f over the last %s)", rate, roundTime(spent-prevSpent))
		}
		r.o.Hooks.Say(fmt.Sprintf("%s, %s steps fit in its share", msg, thousands(s.steps())))
		if err := r.save(); err != nil {
			return err
		}
		prevDone, prevSpent = done, spent
	}
	return nil
}

// roundTime rounds d for messages: to the second from 10 s on, else to
// the tenth of a second.
func roundTime(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
