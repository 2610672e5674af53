package trainer_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lgflow/nn"
	"lgflow/optim"
	"lgflow/tensor"
	"lgflow/trainer"
)

// toyRun is a training run of the small test net whose steps depend on the
// step RNG and the batch (so a resume that got either wrong would show in
// the weights), validated with a fixed table of scores, checkpointed with
// SaveState.
type toyRun struct {
	t      *testing.T
	net    *net
	ps     []optim.Param
	opt    *optim.AdamW
	dir    string
	scores []trainer.Score // validation score after step i+1 (by index)
	saved  []int           // steps whose model SaveBest wrote
	steps  []int           // steps Progress reported
	stopAt int             // cancel after this step (0: never)
	sizes  []int           // Loop.Sizes (nil: random batches)
	ahead  bool            // steps through Loop.Prepare
	cancel context.CancelFunc
}

func newToyRun(t *testing.T, dir string, scores []trainer.Score) *toyRun {
	m := newNet(1, 4)
	ps, opt := newOpt(t, m)
	return &toyRun{t: t, net: m, ps: ps, opt: opt, dir: dir, scores: scores}
}

func (r *toyRun) statePath() string { return filepath.Join(r.dir, "state.safetensors") }

func (r *toyRun) loop(steps int) trainer.Loop {
	return trainer.Loop{
		Seed: 7, BatchSeed: 7 ^ 0x55, N: 10, BatchSize: 3, Steps: steps, Sizes: r.sizes,
		ValEvery: 2, CheckpointEvery: 5, LogEvery: 1, TiesToLater: true,
		Step: func(step int, batch []int, rng *tensor.RNG) error {
			return r.prepare(step, batch, rng)()
		},
		Validate: func(_ context.Context, step int) (trainer.Score, error) {
			return r.scores[step-1], nil
		},
		SaveBest: func(step int, _ trainer.Score) error {
			r.saved = append(r.saved, step)
			return nil
		},
		Checkpoint: func(st trainer.RunState) error {
			return trainer.SaveState(r.statePath(), r.net, r.opt, st.Step, st.Meta(map[string]string{"note": "toy"}), nil)
		},
		Progress: func(s trainer.Status) {
			r.steps = append(r.steps, s.Step)
			if s.Step == r.stopAt {
				r.cancel()
			}
		},
	}
}

// prepare draws a step's gradients from the batch and rng, and returns the
// rest of the step: setting them and taking the optimiser step.
func (r *toyRun) prepare(step int, batch []int, rng *tensor.RNG) func() error {
	gs := make([]*tensor.Tensor, len(r.ps))
	for i, p := range r.ps {
		gs[i] = tensor.RandN(rng, p.Grad.DType(), p.Grad.Shape()...)
		tensor.MulScalar(gs[i], gs[i], float64(batch[i%len(batch)]+1))
	}
	return func() error {
		for i, p := range r.ps {
			tensor.Copy(p.Grad, gs[i])
		}
		r.opt.Step()
		return nil
	}
}

func (r *toyRun) run(ctx context.Context, st trainer.RunState, steps int) (trainer.RunState, error) {
	ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	l := r.loop(steps)
	if r.ahead {
		l.Step, l.Prepare = nil, r.prepare
	}
	return trainer.Run(ctx, st, l)
}

func toyScores(n int) []trainer.Score {
	s := make([]trainer.Score, n)
	for i := range s {
		// Rising, with a tie at the top from step 20 on and a dip.
		s[i] = trainer.Score{Value: math.Min(float64(i/4)/10, 0.5)}
		if i == 29 {
			s[i].Value = 0.1
		}
	}
	return s
}

// TestRunResume interrupts a 40-step run at step 27, resumes it from the
// checkpoint written then, and checks that it reports steps 28..40 and ends
// with exactly the weights, optimiser state and best score of an
// uninterrupted run.
func TestRunResume(t *testing.T) {
	sizes := []int{5, 1, 9, 3, 3, 7, 2, 8, 6, 4}
	for _, tc := range []struct {
		name  string
		sizes []int
		ahead bool
	}{{"random batches", nil, false}, {"batches by size", sizes, false},
		{"prepared ahead", nil, true}, {"prepared ahead, batches by size", sizes, true}} {
		t.Run(tc.name, func(t *testing.T) { testRunResume(t, tc.sizes, tc.ahead) })
	}
}

func testRunResume(t *testing.T, sizes []int, ahead bool) {
	ctx := context.Background()
	scores := toyScores(40)
	straight := newToyRun(t, t.TempDir(), scores)
	straight.sizes, straight.ahead = sizes, ahead
	want, err := straight.run(ctx, trainer.RunState{}, 40)
	if err != nil {
		t.Fatal(err)
	}
	if want.Step != 40 || want.Best == nil || want.Best.Value != 0.5 {
		t.Fatalf("uninterrupted run ended at %+v", want)
	}

	dir := t.TempDir()
	first := newToyRun(t, dir, scores)
	first.sizes, first.ahead = sizes, ahead
	first.stopAt = 27
	if _, err := first.run(ctx, trainer.RunState{}, 40); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: error %v, want context.Canceled", err)
	}
	second := newToyRun(t, dir, scores)
	second.sizes, second.ahead = sizes, ahead
	second.net = newNet(99, 4) // other initial weights: all must come from the checkpoint
	second.ps, second.opt = newOpt(t, second.net)
	st, err := trainer.LoadState(second.statePath(), second.net, second.opt)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := st.Run()
	if err != nil {
		t.Fatal(err)
	}
	if rs.Step != 27 || rs.Best == nil || rs.Best.Value != scores[25].Value {
		t.Fatalf("checkpoint holds %+v, want step 27 and the best score of step 26", rs)
	}
	got, err := second.run(ctx, rs, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.steps) != 13 || second.steps[0] != 28 || second.steps[12] != 40 {
		t.Errorf("resumed run reported steps %v, want 28..40", second.steps)
	}
	if got.Step != want.Step || *got.Best != *want.Best {
		t.Errorf("resumed run ended at %+v (best %+v), want %+v (best %+v)", got, *got.Best, want, *want.Best)
	}
	sameTensors(t, "model", nn.StateDict(straight.net), nn.StateDict(second.net))
	sameTensors(t, "optimiser", straight.opt.StateDict(), second.opt.StateDict())
	// The models saved as best: the same steps, split between the two legs.
	if all := append(first.saved, second.saved...); !slices.Equal(all, straight.saved) {
		t.Errorf("best models saved at steps %v, want %v", all, straight.saved)
	}
}

// TestRunBest checks which validations become the best: higher values,
// ties broken by TieBreak, and equal scores by TiesToLater.
func TestRunBest(t *testing.T) {
	sc := func(v, tb float64) trainer.Score { return trainer.Score{Value: v, TieBreak: tb} }
	for _, tc := range []struct {
		name   string
		scores []trainer.Score
		later  bool
		saved  []int
	}{
		{"rising", []trainer.Score{sc(0.1, 0), sc(0.2, 0), sc(0.3, 0)}, false, []int{1, 2, 3}},
		{"falling", []trainer.Score{sc(0.3, 0), sc(0.2, 0), sc(0.1, 0)}, false, []int{1}},
		{"tie broken", []trainer.Score{sc(0, 0.9), sc(0, 0.95), sc(0, 0.93)}, false, []int{1, 2}},
		{"tie kept earlier", []trainer.Score{sc(0.5, 0), sc(0.5, 0)}, false, []int{1}},
		{"tie to later", []trainer.Score{sc(0.5, 0), sc(0.5, 0), sc(0.4, 0)}, true, []int{1, 2}},
		{"zero is a score", []trainer.Score{sc(0, 0)}, false, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var saved []int
			st, err := trainer.Run(context.Background(), trainer.RunState{}, trainer.Loop{
				N: 4, BatchSize: 2, Steps: len(tc.scores), ValEvery: 1, TiesToLater: tc.later,
				Step:     func(int, []int, *tensor.RNG) error { return nil },
				Validate: func(_ context.Context, step int) (trainer.Score, error) { return tc.scores[step-1], nil },
				SaveBest: func(step int, _ trainer.Score) error { saved = append(saved, step); return nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(saved, tc.saved) {
				t.Errorf("best saved at %v, want %v", saved, tc.saved)
			}
			if want := tc.scores[tc.saved[len(tc.saved)-1]-1]; st.Best == nil || *st.Best != want {
				t.Errorf("Best = %v, want %+v", st.Best, want)
			}
		})
	}
}

// TestRunStops checks the ways a run ends early: a step error (no
// checkpoint: the weights may be spoilt), a time limit and cancellation
// (both checkpoint), and a malformed Loop.
func TestRunStops(t *testing.T) {
	var checkpoints []int
	base := trainer.Loop{N: 4, BatchSize: 2, Steps: 100,
		Step:       func(int, []int, *tensor.RNG) error { return nil },
		Checkpoint: func(st trainer.RunState) error { checkpoints = append(checkpoints, st.Step); return nil }}

	l := base
	boom := errors.New("boom")
	l.Step = func(step int, _ []int, _ *tensor.RNG) error {
		if step == 3 {
			return boom
		}
		return nil
	}
	st, err := trainer.Run(context.Background(), trainer.RunState{}, l)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "step 3") || st.Step != 3 || len(checkpoints) != 0 {
		t.Errorf("step error: state %+v, error %v, checkpoints %v", st, err, checkpoints)
	}

	l = base
	// Steps of 20 ms under a 50 ms limit: the run stops long before its
	// 100 steps (a loaded machine may even stop it before the first) and
	// checkpoints where it stopped.
	l.MaxDuration = 50 * time.Millisecond
	l.Step = func(int, []int, *tensor.RNG) error { time.Sleep(20 * time.Millisecond); return nil }
	checkpoints = nil
	st, err = trainer.Run(context.Background(), trainer.RunState{Step: 10}, l)
	if err != nil || st.Step < 10 || st.Step >= 60 || !slices.Equal(checkpoints, []int{st.Step}) {
		t.Errorf("time limit: state %+v, error %v, checkpoints %v", st, err, checkpoints)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	checkpoints = nil
	st, err = trainer.Run(ctx, trainer.RunState{Step: 5}, base)
	if !errors.Is(err, context.Canceled) || st.Step != 5 || !slices.Equal(checkpoints, []int{5}) {
		t.Errorf("cancelled: state %+v, error %v, checkpoints %v", st, err, checkpoints)
	}

	for name, edit := range map[string]func(*trainer.Loop){
		"no step":     func(l *trainer.Loop) { l.Step = nil },
		"empty set":   func(l *trainer.Loop) { l.N = 0 },
		"zero batch":  func(l *trainer.Loop) { l.BatchSize = 0 },
		"bad resumed": func(l *trainer.Loop) {},
	} {
		l := base
		edit(&l)
		start := trainer.RunState{}
		if name == "bad resumed" {
			start.Step = -1
		}
		if _, err := trainer.Run(context.Background(), start, l); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestStateRun reads RunStates back from checkpoint metadata, typed and in
// the keys of checkpoints written before MetaRun.
func TestStateRun(t *testing.T) {
	best := func(v, tb float64) *trainer.Score { return &trainer.Score{Value: v, TieBreak: tb} }
	for _, tc := range []struct {
		name    string
		meta    map[string]string
		legacy  []string
		want    *trainer.Score
		wantErr bool
	}{
		{"typed", trainer.RunState{Step: 12, Best: best(0.25, 0.5)}.Meta(nil), nil, best(0.25, 0.5), false},
		{"typed, no best", trainer.RunState{Step: 12}.Meta(nil), nil, nil, false},
		{"typed, wrong step", map[string]string{trainer.MetaRun: `{"step":11}`}, nil, nil, true},
		{"typed, malformed", map[string]string{trainer.MetaRun: `{"step":`}, nil, nil, true},
		{"flow legacy", map[string]string{"best_score": "0.40625"}, []string{"best_score"}, best(0.40625, 0), false},
		{"flow legacy, none", map[string]string{"best_score": "-Inf"}, []string{"best_score"}, nil, false},
		{"vae legacy", map[string]string{"best_val_sample": "0.82", "best_val_edge": "0.9997"}, []string{"best_val_sample", "best_val_edge"}, best(0.82, 0.9997), false},
		{"vae legacy, none", map[string]string{"best_val_sample": "-1", "best_val_edge": "-1"}, []string{"best_val_sample", "best_val_edge"}, nil, false},
		{"legacy missing", map[string]string{}, []string{"best_score"}, nil, false},
		{"legacy malformed", map[string]string{"best_score": "0.4x"}, []string{"best_score"}, nil, true},
		{"legacy NaN", map[string]string{"best_score": "NaN"}, []string{"best_score"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &trainer.State{Step: 12, Meta: tc.meta}
			rs, err := st.Run(tc.legacy...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if rs.Step != 12 {
				t.Errorf("Step = %d, want 12", rs.Step)
			}
			if (rs.Best == nil) != (tc.want == nil) || rs.Best != nil && *rs.Best != *tc.want {
				t.Errorf("Best = %v, want %v", rs.Best, tc.want)
			}
		})
	}
}

// TestBatchOrder checks that every epoch visits every item once and that
// the order is a pure function of (seed, step).
func TestBatchOrder(t *testing.T) {
	const n, batch = 10, 5
	seen := map[int]int{}
	for step := range 2 {
		for _, i := range trainer.BatchOrder(3, n, batch, step) {
			seen[i]++
		}
	}
	if len(seen) != n {
		t.Errorf("one epoch visited %d distinct items of %d", len(seen), n)
	}
	if !slices.Equal(trainer.BatchOrder(3, n, batch, 7), trainer.BatchOrder(3, n, batch, 7)) {
		t.Error("BatchOrder is not deterministic")
	}
	if slices.Equal(trainer.BatchOrder(3, n, batch, 0), trainer.BatchOrder(3, n, batch, 2)) &&
		slices.Equal(trainer.BatchOrder(3, n, batch, 1), trainer.BatchOrder(3, n, batch, 3)) {
		t.Error("two epochs visit the items in the same order")
	}
	if trainer.StepRNG(1, 4).Uniform() != trainer.StepRNG(1, 4).Uniform() || trainer.StepRNG(1, 4).Uniform() == trainer.StepRNG(1, 5).Uniform() {
		t.Error("StepRNG is not a pure function of (seed, step)")
	}
}

func TestBatchesBySize(t *testing.T) {
	r := tensor.NewRNG(5)
	const n, batch = 4000, 16
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 50 + int(r.Uniform()*350) // Ego-like: 50 to 399 nodes
	}
	// padding returns the padded slots of one epoch's batches (batch x
	// largest size, minus the sizes).
	padding := func(batches [][]int) int {
		pad := 0
		for _, b := range batches {
			big := 0
			for _, i := range b {
				big = max(big, sizes[i])
			}
			for _, i := range b {
				pad += big - sizes[i]
			}
		}
		return pad
	}
	per := n / batch
	var random [][]int
	for step := range per {
		random = append(random, trainer.BatchOrder(3, n, batch, step))
	}
	bySize := trainer.BatchesBySize(3, sizes, batch, 0)
	if len(bySize) != per {
		t.Fatalf("%d batches, want %d", len(bySize), per)
	}
	seen := make([]int, n)
	for _, b := range bySize {
		if len(b) != batch {
			t.Fatalf("batch of %d items, want %d", len(b), batch)
		}
		for _, i := range b {
			seen[i]++
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("item %d visited %d times in an epoch", i, c)
		}
	}
	pr, pb := padding(random), padding(bySize)
	t.Logf("padding per epoch: random batches %d, by size %d", pr, pb)
	if pb*10 > pr {
		t.Errorf("batches by size pad %d slots, random ones %d: want under a tenth", pb, pr)
	}
	if !slices.EqualFunc(bySize, trainer.BatchesBySize(3, sizes, batch, 0), slices.Equal) {
		t.Error("BatchesBySize is not deterministic")
	}
	if slices.EqualFunc(bySize, trainer.BatchesBySize(3, sizes, batch, 1), slices.Equal) {
		t.Error("two epochs have the same batches")
	}
	// A set smaller than a batch wraps around, as BatchOrder does.
	small := trainer.BatchesBySize(3, []int{3, 1, 2}, 5, 0)
	if len(small) != 1 || len(small[0]) != 5 {
		t.Errorf("3 items in batches of 5: %v", small)
	}
	if _, err := trainer.Run(context.Background(), trainer.RunState{}, trainer.Loop{N: 4, BatchSize: 2, Steps: 1, Sizes: []int{1, 2},
		Step: func(int, []int, *tensor.RNG) error { return nil }}); err == nil || !strings.Contains(err.Error(), "2 sizes for 4 items") {
		t.Errorf("mismatched sizes: error %v", err)
	}
}

// TestPrepareSameAsStep checks that a run through Loop.Prepare (each step
// prepared one step ahead on another goroutine) ends with the weights of
// the same run through Loop.Step.
func TestPrepareSameAsStep(t *testing.T) {
	ctx := context.Background()
	scores := toyScores(40)
	plain := newToyRun(t, t.TempDir(), scores)
	if _, err := plain.run(ctx, trainer.RunState{}, 40); err != nil {
		t.Fatal(err)
	}
	ahead := newToyRun(t, t.TempDir(), scores)
	ahead.ahead = true
	if _, err := ahead.run(ctx, trainer.RunState{}, 40); err != nil {
		t.Fatal(err)
	}
	sameTensors(t, "model", nn.StateDict(plain.net), nn.StateDict(ahead.net))
	sameTensors(t, "optimiser", plain.opt.StateDict(), ahead.opt.StateDict())
}
