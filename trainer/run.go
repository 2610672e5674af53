package trainer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"lgflow/dist"
	"lgflow/tensor"
)

// Score rates one validation: a higher Value is better, and between equal
// Values a higher TieBreak (for example edge accuracy when sample accuracy
// ties at 0 early in training).
type Score struct {
	Value    float64 `json:"value"`
	TieBreak float64 `json:"tie_break,omitempty"`
}

// better reports whether s beats best; with tiesToLater an equal score
// counts as better, so the later (longer-trained) model is kept.
func (s Score) better(best Score, tiesToLater bool) bool {
	if s.Value != best.Value {
		return s.Value > best.Value
	}
	if s.TieBreak != best.TieBreak {
		return s.TieBreak > best.TieBreak
	}
	return tiesToLater
}

// RunState is the part of a training run that Run owns and a checkpoint
// carries besides weights and optimiser state: the number of steps taken
// and the best validation score so far (nil before the first validation).
// It is stored typed, as JSON under MetaRun.
type RunState struct {
	Step int    `json:"step"`
	Best *Score `json:"best,omitempty"`
}

// ForgetLostBest clears st's best score when path, the file the run kept
// its best model in, is gone (deleted, or not carried to this machine with
// the training state). Resumed, such a run would otherwise keep comparing
// against a model it no longer has and, unless a later validation beat
// it, end with no model file; without the score, its next validated model
// is kept. Only which model is saved changes, never the training.
func ForgetLostBest(st *RunState, path string) {
	if st.Best == nil {
		return
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		st.Best = nil
	}
}

// MetaRun is the metadata key of a checkpoint's RunState.
const MetaRun = "run"

// Meta returns meta (a new map when nil) with st stored under MetaRun and
// its step under MetaStep, ready for SaveState.
func (st RunState) Meta(meta map[string]string) map[string]string {
	if meta == nil {
		meta = map[string]string{}
	}
	meta[MetaRun] = MarshalMeta(st)
	meta[MetaStep] = strconv.Itoa(st.Step)
	return meta
}

// Run returns the RunState a checkpoint loaded by LoadState was saved with.
// Checkpoints written before MetaRun existed kept the best score as a
// number under a model-specific key: legacy names those keys (the score's
// Value and TieBreak, "" for none), where a negative or infinite value
// meant "no validation yet". Malformed values are an error.
func (s *State) Run(legacy ...string) (RunState, error) {
	if _, ok := s.Meta[MetaRun]; ok {
		var st RunState
		if err := UnmarshalMeta(s.Meta, MetaRun, &st); err != nil {
			return RunState{}, err
		}
		if st.Step != s.Step {
			return RunState{}, fmt.Errorf("%q metadata says step %d, %q says %d", MetaRun, st.Step, MetaStep, s.Step)
		}
		if st.Best != nil && (!finite(st.Best.Value) || !finite(st.Best.TieBreak)) {
			return RunState{}, fmt.Errorf("bad %q metadata: best score %+v", MetaRun, *st.Best)
		}
		return st, nil
	}
	st := RunState{Step: s.Step}
	var parts [2]float64
	found := false
	for i, key := range legacy[:min(len(legacy), 2)] {
		v, ok := s.Meta[key]
		if key == "" || !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return RunState{}, fmt.Errorf("bad %q metadata %q", key, v)
		}
		if i == 0 {
			found = f >= 0 && !math.IsInf(f, 0)
		}
		parts[i] = f
	}
	if found {
		st.Best = &Score{Value: parts[0], TieBreak: max(parts[1], 0)}
	}
	return st, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// StepRNG returns the generator of one training step: a pure function of
// (seed, step), so a resumed run draws the same numbers as an uninterrupted
// one.
func StepRNG(seed uint64, step int) *tensor.RNG {
	return tensor.NewRNG(seed ^ (uint64(step)+1)*0x9e3779b97f4a7c15)
}

// BatchOrder returns the indices (into a training set of n items) of a
// step's batch: items are visited epoch by epoch, each epoch in a seeded
// random order, a pure function of (seed, step). Models pass their own
// salted seed so their orders differ.
func BatchOrder(seed uint64, n, batch, step int) []int {
	per := max(n/batch, 1)
	epoch, pos := step/per, step%per
	perm := tensor.NewRNG(seed ^ uint64(epoch)*0x2545f4914f6cdd1d).Perm(n)
	idx := make([]int, batch)
	for i := range idx {
		idx[i] = perm[(pos*batch+i)%n]
	}
	return idx
}

// SizeWindow is the number of batches whose items BatchesBySize sorts by
// size together: large enough that a batch's items are close in size,
// small enough that each epoch still mixes sizes across the run.
const SizeWindow = 32

// BatchesBySize returns one epoch's batches (each of batch indices into a
// training set whose item i has size sizes[i]) for size-bucketed training:
// the epoch's random order (as BatchOrder's) is cut into windows of
// SizeWindow batches, each window is sorted by size and cut into batches,
// and the batches are visited in a seeded random order. Every item is
// visited once per epoch as with BatchOrder (the last batch wraps around
// to the epoch's first items), but a batch holds items of similar size,
// so padded batches waste little. It is a pure function of (seed, epoch).
func BatchesBySize(seed uint64, sizes []int, batch, epoch int) [][]int {
	n := len(sizes)
	perm := tensor.NewRNG(seed ^ uint64(epoch)*0x2545f4914f6cdd1d).Perm(n)
	per := max(n/batch, 1)
	items := make([]int, per*batch)
	for i := range items {
		items[i] = perm[i%n]
	}
	window := SizeWindow * batch
	for lo := 0; lo < len(items); lo += window {
		w := items[lo:min(lo+window, len(items))]
		slices.SortStableFunc(w, func(a, b int) int { return cmp.Compare(sizes[a], sizes[b]) })
	}
	order := tensor.NewRNG(seed ^ uint64(epoch)*0x2545f4914f6cdd1d ^ 0xb0c4e7).Perm(per)
	out := make([][]int, per)
	for k, b := range order {
		out[k] = items[b*batch : (b+1)*batch]
	}
	return out
}

// Status is what Run reports through Loop.Progress.
type Status struct {
	Step, Steps int
	// Validated is true when this step ended with a validation.
	Validated bool
	// Score is the latest validation's score and Best the best so far
	// (nil before the first).
	Score, Best    *Score
	Elapsed, ETA   time.Duration
	StepsPerSecond float64
}

// Loop is what a model supplies to Run: its training step, validation and
// checkpoint writers, and the cadence. Run owns everything else: the step
// RNG and batch order, the best score and its ties, the clock, time limits,
// cancellation and resumption.
type Loop struct {
	// Seed seeds the step RNGs (StepRNG) and BatchSeed the batch order
	// (BatchOrder) over a training set of N items in batches of BatchSize.
	Seed, BatchSeed uint64
	N, BatchSize    int
	// Sizes, when not nil, holds the N items' sizes (node counts), and
	// batches group items of similar size (BatchesBySize) instead of
	// BatchOrder's random ones: less padding, the same epochs.
	Sizes []int
	// Steps is the step count to train to.
	Steps int
	// ValEvery, CheckpointEvery and LogEvery are the steps between
	// validations, checkpoints and Progress calls (0: no validation, only
	// the final checkpoint, LogEvery 50). Validation also runs after the
	// last step.
	ValEvery, CheckpointEvery, LogEvery int
	// MaxDuration stops the run (after a checkpoint) once exceeded; 0 is no
	// limit.
	MaxDuration time.Duration
	// Comm, when it has more than one rank, runs the loop data parallel:
	// every rank runs it on every step's global batch (Step splits it,
	// Share), and the ranks agree at every step whether to stop (a
	// cancelled context or MaxDuration on any rank stops all of them at
	// the same step). The loop's functions run on every rank; they leave
	// validation and writing to rank 0 (OnRoot).
	Comm dist.Comm
	// TiesToLater makes a validation score equal to the best one the new
	// best (the later model); otherwise the earlier one stays.
	TiesToLater bool

	// Step takes training step step (counted from 0) on the given batch,
	// drawing its randomness from r. An error stops the run without a
	// checkpoint: the weights may be spoilt.
	Step func(step int, batch []int, r *tensor.RNG) error
	// Prepare, used instead of Step when not nil, splits a step in two: it
	// does the part that needs only the batch and r (assembling the batch
	// on the host, drawing its noise) and returns the rest of the step,
	// which Run calls on its own goroutine, in step order, with the same
	// r. Run prepares step s+1 on another goroutine while the rest of
	// step s, its validation and its checkpoint run, so host-side batch
	// work overlaps the step (on a GPU, the device's work). Prepare must
	// not touch what the rest of a step changes (weights, optimiser); the
	// results are those of running both halves back to back.
	Prepare func(step int, batch []int, r *tensor.RNG) func() error
	// Validate, if not nil, scores the model after a step.
	Validate func(ctx context.Context, step int) (Score, error)
	// SaveBest, if not nil, is called when a validation beats the best.
	SaveBest func(step int, s Score) error
	// Checkpoint, if not nil, writes a resumable checkpoint holding st
	// (RunState.Meta gives its metadata): every CheckpointEvery steps, when
	// the run ends, stops for MaxDuration or is cancelled.
	Checkpoint func(st RunState) error
	// Progress, if not nil, is called every LogEvery steps, after each
	// validation and after the last step.
	Progress func(Status)
}

// agreeStop returns, on every rank of c, whether any rank was cancelled
// or ran out of time.
func agreeStop(c dist.Comm, cancelled, overtime bool) (bool, bool, error) {
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	buf := []float64{flag(cancelled), flag(overtime)}
	if err := c.AllReduceSum64(buf); err != nil {
		return false, false, fmt.Errorf("trainer: agreeing on the next step with %d ranks: %w", c.Size(), err)
	}
	return buf[0] > 0, buf[1] > 0, nil
}

// batcher gives the batches of a Loop by step: BatchOrder's, or with
// Loop.Sizes BatchesBySize's, whose epoch it keeps.
type batcher struct {
	l       *Loop
	epoch   int
	batches [][]int
}

// at returns the batch of step.
func (b *batcher) at(step int) []int {
	l := b.l
	if l.Sizes == nil {
		return BatchOrder(l.BatchSeed, l.N, l.BatchSize, step)
	}
	per := max(l.N/l.BatchSize, 1)
	if e := step / per; e != b.epoch {
		b.batches, b.epoch = BatchesBySize(l.BatchSeed, l.Sizes, l.BatchSize, e), e
	}
	return b.batches[step%per]
}

// validate runs l.Validate after step st.Step when the cadence (ValEvery,
// and the last step) says so, keeps the best score in st and saves it
// (SaveBest), and returns the score (nil when it did not run). A
// validation cut short by cancellation writes a checkpoint.
func validate(ctx context.Context, l *Loop, st *RunState, checkpoint func() error) (*Score, error) {
	if l.Validate == nil || l.ValEvery <= 0 || st.Step%l.ValEvery != 0 && st.Step != l.Steps {
		return nil, nil
	}
	s, err := l.Validate(ctx, st.Step)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errors.Join(err, checkpoint())
		}
		return nil, fmt.Errorf("validation at step %d: %w", st.Step, err)
	}
	if st.Best == nil || s.better(*st.Best, l.TiesToLater) {
		best := s
		st.Best = &best
		if l.SaveBest != nil {
			if err := l.SaveBest(st.Step, s); err != nil {
				return nil, err
			}
		}
	}
	return &s, nil
}

// Run trains from st (the zero RunState for a new run, or the one a
// checkpoint gives back through State.Run) until l.Steps, and returns the
// final state. When ctx is cancelled it writes a checkpoint and returns
// ctx.Err() (joined with the checkpoint's error, if any), so the run can
// resume from it. An error of Step or Validate is returned with the step
// it happened at.
func Run(ctx context.Context, st RunState, l Loop) (RunState, error) {
	switch {
	case l.Step == nil && l.Prepare == nil:
		return st, errors.New("trainer: Loop.Step and Loop.Prepare are nil")
	case l.N <= 0 || l.BatchSize <= 0:
		return st, fmt.Errorf("trainer: training set of %d items in batches of %d", l.N, l.BatchSize)
	case st.Step < 0:
		return st, fmt.Errorf("trainer: negative step %d", st.Step)
	case l.Sizes != nil && len(l.Sizes) != l.N:
		return st, fmt.Errorf("trainer: %d sizes for %d items", len(l.Sizes), l.N)
	}
	batchAt := (&batcher{l: &l, epoch: -1}).at
	logEvery := l.LogEvery
	if logEvery <= 0 {
		logEvery = 50
	}
	checkpoint := func() error {
		if l.Checkpoint == nil {
			return nil
		}
		return l.Checkpoint(st)
	}
	// ahead holds the step prepared one step ahead (with Prepare): its
	// step number and the channel its rest arrives on.
	type prepared struct {
		step int
		rest chan func() error
	}
	var ahead *prepared
	prepare := func(step int) *prepared {
		p := &prepared{step: step, rest: make(chan func() error, 1)}
		batch, r := batchAt(step), StepRNG(l.Seed, step)
		go func() { p.rest <- l.Prepare(step, batch, r) }()
		return p
	}
	// An early return waits for the step prepared ahead, so that no
	// Prepare outlives Run.
	defer func() {
		if ahead != nil {
			<-ahead.rest
		}
	}()
	clock := NewClock(st.Step)
	var last *Score
	for st.Step < l.Steps {
		cancelled, overtime := ctx.Err() != nil, l.MaxDuration > 0 && clock.Elapsed() > l.MaxDuration
		if Distributed(l.Comm) {
			var err error
			if cancelled, overtime, err = agreeStop(l.Comm, cancelled, overtime); err != nil {
				return st, err
			}
		}
		if cancelled {
			err := ctx.Err()
			if err == nil {
				err = errors.New("trainer: another rank was cancelled")
			}
			return st, errors.Join(err, checkpoint())
		}
		if overtime {
			break
		}
		var err error
		if l.Prepare == nil {
			err = l.Step(st.Step, batchAt(st.Step), StepRNG(l.Seed, st.Step))
		} else {
			if ahead == nil || ahead.step != st.Step {
				ahead = prepare(st.Step)
			}
			rest := <-ahead.rest
			ahead = nil
			if st.Step+1 < l.Steps {
				ahead = prepare(st.Step + 1)
			}
			err = rest()
		}
		if err != nil {
			return st, fmt.Errorf("step %d: %w", st.Step, err)
		}
		st.Step++

		s, err := validate(ctx, &l, &st, checkpoint)
		if err != nil {
			return st, err
		}
		validated := s != nil
		if validated {
			last = s
		}
		if l.CheckpointEvery > 0 && st.Step%l.CheckpointEvery == 0 {
			if err := checkpoint(); err != nil {
				return st, err
			}
		}
		if l.Progress != nil && (st.Step%logEvery == 0 || validated || st.Step == l.Steps) {
			l.Progress(Status{Step: st.Step, Steps: l.Steps, Validated: validated, Score: last, Best: st.Best,
				Elapsed: clock.Elapsed(), ETA: clock.ETA(st.Step, l.Steps), StepsPerSecond: clock.Rate(st.Step)})
		}
	}
	return st, checkpoint()
}
