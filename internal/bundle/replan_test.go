package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"lgflow/flow"
	"lgflow/internal/progress"
	"lgflow/internal/testgraphs"
)

// TestReplanSteps pins the re-planning arithmetic: the rate (the
// stage's so far, or its last slice's when slower), and the steps done
// plus those that fit in the time left at that rate, less the margin,
// within [done+1, the preset's steps].
func TestReplanSteps(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name         string
		done         int
		spent        time.Duration
		recentSteps  int
		recent, left time.Duration
		limit        int
		rate         float64
		recentRate   bool
		want         int
	}{
		{"the rate times the time left", 100, 10 * s, 100, 10 * s, 90 * s, 20000, 10, false, 100 + 873}, // 10/s × 90 s × 0.97
		{"faster than planned", 400, 10 * s, 400, 10 * s, 30 * s, 20000, 40, false, 400 + 1164},
		{"the last slice faster", 300, 30 * s, 250, 20 * s, 70 * s, 20000, 10, false, 300 + 679},
		{"the last slice slower", 300, 30 * s, 100, 20 * s, 70 * s, 20000, 5, true, 300 + 339},
		{"up to the preset's steps", 400, 10 * s, 400, 10 * s, 30 * s, 1000, 40, false, 1000},
		{"no time left", 250, 20 * s, 100, 10 * s, 0, 20000, 10, true, 251},
		{"overrun", 250, 20 * s, 100, 10 * s, -3 * s, 20000, 10, true, 251},
		{"slower than one step in the time left", 3, 60 * s, 3, 60 * s, 10 * s, 20000, 0.05, false, 4},
		{"the preset's steps done", 1000, 10 * s, 500, 5 * s, 30 * s, 1000, 100, false, 1000},
		{"no step done", 0, 10 * s, 0, 10 * s, 30 * s, 1000, 0, false, 0},
		{"no time spent", 10, 0, 10, 0, 30 * s, 1000, 0, false, 0},
		{"no step in the last slice", 100, 20 * s, 0, 5 * s, 30 * s, 1000, 5, false, 100 + 145},
		{"huge rate", 1 << 40, s, 1 << 40, s, 1000 * time.Hour, 20000, 1 << 40, false, 20000},
	} {
		rate, recent := stageRate(c.done, c.spent, c.recentSteps, c.recent)
		if math.Abs(rate-c.rate) > 1e-9 || recent != c.recentRate {
			t.Errorf("%s: stageRate(%d, %v, %d, %v) = %g, %v; want %g, %v", c.name, c.done, c.spent, c.recentSteps, c.recent, rate, recent, c.rate, c.recentRate)
		}
		if got := replanSteps(c.done, rate, c.left, c.limit); got != c.want {
			t.Errorf("%s: replanSteps(%d, %g, %v, %d) = %d, want %d", c.name, c.done, rate, c.left, c.limit, got, c.want)
		}
	}
}

// TestSlicesAndEstimates checks where the slices of a stage end, the
// measurement's estimate from its probe, and the step counts' commas.
func TestSlicesAndEstimates(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(100 * time.Second)
	for i, want := range []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second, 85 * time.Second, 100 * time.Second, 100 * time.Second} {
		if got := sliceEnd(start, end, i).Sub(start); got != want {
			t.Errorf("slice %d ends at %v, want %v", i, got, want)
		}
	}
	for _, c := range []struct {
		probe time.Duration
		k, n  int
		want  time.Duration
	}{
		{2 * time.Second, 16, 32, 4400 * time.Millisecond},
		{2 * time.Second, 16, 16, 2200 * time.Millisecond},
		{time.Second, 16, 256, 17600 * time.Millisecond},
		{time.Second, 0, 10, time.Second},
	} {
		if got := measureEstimate(c.probe, c.k, c.n); got != c.want {
			t.Errorf("measureEstimate(%v, %d, %d) = %v, want %v", c.probe, c.k, c.n, got, c.want)
		}
	}
	if probeSamples(51) != 16 || probeSamples(8) != 8 {
		t.Errorf("probe samples %d, %d", probeSamples(51), probeSamples(8))
	}
	for n, want := range map[int]string{0: "0", 950: "950", 2950: "2,950", 20000: "20,000", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestReplanKeeps checks that a re-plan changes the steps and what may
// follow them, and keeps what the steps taken depend on: the LG-VAE's
// warmup, the flow's EMA (which flow.Train's resume checks) and the start
// of a cooldown that has begun.
func TestReplanKeeps(t *testing.T) {
	p, err := PlanFor(DataFacts{MinNodes: 20, MaxNodes: 40, EdgeClasses: 1}, "cpu", 500)
	if err != nil {
		t.Fatal(err)
	}
	p.SetVAESteps(300)
	p.ReplanVAESteps(1200)
	if tr := p.VAE.Train; tr.Steps != 1200 || tr.Warmup != 30 || tr.ValEvery != 120 || tr.CheckpointEvery != 60 {
		t.Errorf("LG-VAE: %+v, want 1200 steps, the warmup of 300 (30)", tr)
	}
	p.SetFlowSteps(500)
	first := p.Flow
	p.ReplanFlowSteps(3000, 100)
	if c := p.Flow; c.Steps != 3000 || c.ValEvery != 600 || c.CheckpointEvery != 150 || c.Cooldown != 600 || c.EMABeta != first.EMABeta || c.EMAAfter != first.EMAAfter {
		t.Errorf("flow: steps %d val %d checkpoints %d cooldown %d EMA %g after %d, want the EMA of 500 steps (%g after %d)",
			c.Steps, c.ValEvery, c.CheckpointEvery, c.Cooldown, c.EMABeta, c.EMAAfter, first.EMABeta, first.EMAAfter)
	}
	if err := p.Flow.Validate(); err != nil {
		t.Error(err)
	}
	// In the cooldown (from step 2400 of 3000): it keeps its start.
	for _, c := range []struct{ steps, done, cooldown int }{{3200, 2550, 800}, {2600, 2550, 200}, {2551, 2550, 151}, {3500, 2400, 700}} {
		q := *p
		q.ReplanFlowSteps(c.steps, c.done)
		if q.Flow.Steps != c.steps || q.Flow.Cooldown != c.cooldown || q.Flow.EMAAfter != first.EMAAfter {
			t.Errorf("%d steps at step %d: cooldown %d, want %d", c.steps, c.done, q.Flow.Cooldown, c.cooldown)
		}
		if err := q.Flow.Validate(); err != nil {
			t.Error(err)
		}
	}
}

// TestTrainReplans trains tiny models with a budget of a few seconds and
// the preset's steps raised: both stages re-plan their steps as they
// train and resume from their checkpoints with the new plan (the flow's
// EMA as first planned), the final measurement is timed, the run ends
// near its budget, and a second run continues the stored plan.
func TestTrainReplans(t *testing.T) {
	train, val := testgraphs.Ladders(24, 1), testgraphs.Ladders(8, 2)
	var mu []string
	budget := 10 * time.Second
	o := BundleOptions{Out: filepath.Join(t.TempDir(), "m"), Size: "tiny", Budget: budget, Seed: 1,
		Hooks: progress.Hooks{Log: func(msg string) { mu = append(mu, msg) }}}
	r, err := newBundleRun(train, val, o)
	if err != nil {
		t.Fatal(err)
	}
	// The tiny preset's 6 steps would end both stages at once.
	r.plan.SetVAESteps(1_000_000)
	r.plan.SetFlowSteps(1_000_000)
	start := time.Now()
	if _, err := r.run(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(mu, "\n"))
	}
	took := time.Since(start)
	log := strings.Join(mu, "\n")
	t.Logf("a run of %v took %v:\n%s", budget, took, log)
	if took > budget+3*time.Second {
		t.Errorf("a run of %v took %v\n%s", budget, took, log)
	}
	replans := regexp.MustCompile(`(LG-VAE|LG-Flow): [0-9.]+ steps/s measured over [^,]+, ([0-9,]+) steps fit in its share`)
	last := map[string]int{}
	for _, m := range replans.FindAllStringSubmatch(log, -1) {
		last[m[1]], _ = strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
	}
	if last["LG-VAE"] == 0 || last["LG-Flow"] == 0 {
		t.Fatalf("no re-plan of each stage:\n%s", log)
	}
	if !strings.Contains(log, "the final measurement of 32 samples should take about") {
		t.Errorf("the measurement was not timed:\n%s", log)
	}
	firstFlow := regexp.MustCompile(`LG-Flow: [0-9.]+ steps/s, (\d+) steps fit in`).FindStringSubmatch(log)
	if firstFlow == nil {
		t.Fatalf("no first plan of the flow:\n%s", log)
	}
	planned, _ := strconv.Atoi(firstFlow[1])

	b, err := os.ReadFile(filepath.Join(o.Out, WorkDir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st workState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	p := st.Plan
	if p.VAE.Train.Steps != last["LG-VAE"] || p.Flow.Steps != last["LG-Flow"] {
		t.Errorf("plan.json: %d and %d steps, the last re-plans %v", p.VAE.Train.Steps, p.Flow.Steps, last)
	}
	if p.Flow.EMAAfter != planned/10 {
		t.Errorf("the flow's EMA starts after %d steps, the first plan's (%d steps) after %d", p.Flow.EMAAfter, planned, planned/10)
	}
	cfg, _, err := flow.CheckpointConfig(filepath.Join(o.Out, WorkDir, "flow", flow.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Steps != p.Flow.Steps || cfg.EMABeta != p.Flow.EMABeta || cfg.EMAAfter != p.Flow.EMAAfter {
		t.Errorf("the flow's checkpoint: %d steps, EMA %g after %d; plan.json: %d, %g after %d", cfg.Steps, cfg.EMABeta, cfg.EMAAfter, p.Flow.Steps, p.Flow.EMABeta, p.Flow.EMAAfter)
	}
	vaeStep := checkpointStep(filepath.Join(o.Out, WorkDir, "vae", "state.safetensors"), "lgflow.vae")
	flowStep := checkpointStep(filepath.Join(o.Out, WorkDir, "flow", flow.StateFile), "lgflow.flow.state")
	if vaeStep <= 6 || vaeStep > p.VAE.Train.Steps || flowStep <= 6 || flowStep > p.Flow.Steps {
		t.Errorf("checkpoints at LG-VAE step %d of %d, flow step %d of %d", vaeStep, p.VAE.Train.Steps, flowStep, p.Flow.Steps)
	}

	// A second run continues with the stored plan: no re-planning.
	mu = nil
	if _, err := TrainBundle(context.Background(), train, val, o); err != nil {
		t.Fatalf("continuing: %v\n%s", err, strings.Join(mu, "\n"))
	}
	log = strings.Join(mu, "\n")
	if !strings.Contains(log, "continuing the training") || strings.Contains(log, "measured over") {
		t.Errorf("the second run:\n%s", log)
	}
	if _, err := flow.Open(o.Out); err != nil {
		t.Error(err)
	}
}

// TestMeasureRate checks that a rate measurement leaves out the slow first
// steps of a fresh process, stops once it has timed enough steps for long
// enough, and returns training errors but not its own stop.
func TestMeasureRate(t *testing.T) {
	ctx := context.Background()
	// Four slow steps, then fast ones: the rate is the fast steps'.
	var ticks int
	r, err := measureRate(ctx, func(ctx context.Context, tick func()) error {
		for i := range rateSteps {
			if i < 4 {
				time.Sleep(50 * time.Millisecond)
			}
			ticks++
			tick()
		}
		return nil
	})
	if err != nil || ticks != rateSteps {
		t.Fatalf("measureRate: %v after %d steps, want nil after %d", err, ticks, rateSteps)
	}
	if r < 100 { // the whole span's rate would be under 40/0.2 s
		t.Errorf("rate %.1f steps/s: the slow first steps were counted", r)
	}
	// A run that goes on past rateTime is stopped (through its context)
	// after rateMinSteps, and its stop is no error.
	defer func(d time.Duration) { rateTime = d }(rateTime)
	rateTime = 400 * time.Millisecond
	ticks = 0
	start := time.Now()
	r, err = measureRate(ctx, func(ctx context.Context, tick func()) error {
		for ctx.Err() == nil {
			time.Sleep(rateTime / rateMinSteps * 2)
			ticks++
			tick()
		}
		return ctx.Err()
	})
	if err != nil || ticks != rateMinSteps || time.Since(start) > 4*rateTime {
		t.Errorf("slow run: %v after %d steps in %s, want nil after %d", err, ticks, time.Since(start), rateMinSteps)
	}
	if want := float64(rateMinSteps) / 2 / rateTime.Seconds(); !(r > 0 && r <= want*1.01) {
		t.Errorf("slow run: rate %.3f steps/s, want at most %.3f", r, want)
	}
	// A training error is returned; so is the caller's cancellation.
	boom := errors.New("boom")
	if _, err := measureRate(ctx, func(context.Context, func()) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("training error: got %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := measureRate(cctx, func(ctx context.Context, tick func()) error { return ctx.Err() }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}
