package vae

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
)

// TestResume interrupts a 30-step run at step 17 (checkpoints every 10
// steps, validation every 5), resumes it, and checks that it continues
// from step 18 and ends with exactly the weights and best validation score
// of an uninterrupted run; a checkpoint of another model configuration is
// refused.
func TestResume(t *testing.T) {
	c := tinyConfig(false)
	d := prepare(t, append(datasets.Planar(8, 6, 3), datasets.Tree(8, 6, 3)...), c)
	tc := TrainConfig{Steps: 30, BatchSize: 4, LR: 3e-3, MinLR: 1e-3, Warmup: 5, Beta1: 0.9, Beta2: 0.95, ValEvery: 5, CheckpointEvery: 10, ClipNorm: 1, Seed: 4}
	ctx := context.Background()
	run := func(ctx context.Context, dir string, resume bool, onStep func(Progress)) (*Model, error) {
		return Train(ctx, c, tc, d, d, TrainOptions{Dir: dir, Resume: resume, LogEvery: 1, Progress: onStep})
	}
	var last Progress
	straight, err := run(ctx, t.TempDir(), false, func(p Progress) { last = p })
	if err != nil {
		t.Fatal(err)
	}
	want := last.BestSample

	dir := t.TempDir()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := run(cctx, dir, false, func(p Progress) {
		if p.Step == 17 {
			cancel()
		}
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: error %v, want context.Canceled", err)
	}
	h, err := safetensors.LoadHeader(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata[trainer.MetaStep] != "17" {
		t.Fatalf("checkpoint at step %s, want 17", h.Metadata[trainer.MetaStep])
	}
	var steps []int
	resumed, err := run(ctx, dir, true, func(p Progress) { steps = append(steps, p.Step); last = p })
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 13 || steps[0] != 18 || steps[12] != 30 {
		t.Fatalf("resumed run reported steps %v, want 18..30", steps)
	}
	if last.BestSample != want {
		t.Errorf("best validation sample accuracy %v after resume, %v uninterrupted", last.BestSample, want)
	}
	a, b := nn.StateDict(straight), nn.StateDict(resumed)
	for k, x := range a {
		if tensor.MaxAbs(tensor.Sub(nil, x, b[k])) != 0 {
			t.Errorf("%s differs between the resumed and the uninterrupted run", k)
		}
	}
	other := c
	other.Width++
	if _, err := Train(ctx, other, tc, d, d, TrainOptions{Dir: dir, Resume: true}); err == nil {
		t.Error("resumed a checkpoint of another model configuration")
	}
}
