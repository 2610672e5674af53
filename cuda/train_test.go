package cuda

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/tensor"
	"lgflow/vae"
)

// TestEmulatedVAETraining trains an LG-VAE on the emulated GPU (see
// TestEmulatedConformance) and checks it against the CPU.
func TestEmulatedVAETraining(t *testing.T) { checkVAETraining(t, emulatedBackend(t)) }

// TestVAETraining trains an LG-VAE on the GPU and checks it against the CPU.
func TestVAETraining(t *testing.T) { checkVAETraining(t, gpuBackend(t)) }

// checkVAETraining trains a small LG-VAE (with node and edge labels, so
// every head and the per-class GINE tables take part; LayerNorm and
// GraphNorm) for a few steps on be
// and on the CPU from the same seed: losses, validation accuracy and final
// weights must agree to float32 rounding, and the returned model must be on
// the CPU.
func checkVAETraining(t *testing.T, be tensor.Backend) {
	for _, norm := range []vae.Norm{vae.LayerNorm, vae.GraphNorm} {
		t.Run(string(norm), func(t *testing.T) {
			cfg := vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, NodeClasses: 2, EdgeClasses: 2,
				Norm: norm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true, LatentNoise: 0.01}
			checkVAETrainingConfig(t, be, cfg)
		})
	}
}

// checkVAETrainingConfig is checkVAETraining for one configuration.
func checkVAETrainingConfig(t *testing.T, be tensor.Backend, cfg vae.Config) {
	ctx := context.Background()
	gs := append(datasets.Tree(7, 4, 1), datasets.Planar(9, 4, 1)...)
	for i, g := range gs {
		g.NodeLabels = make([]int, g.N())
		for v := range g.NodeLabels {
			g.NodeLabels[v] = (v + i) % 2
		}
		for _, e := range g.Edges() {
			g.AddLabeledEdge(e.From, e.To, (e.From+e.To)%2)
		}
	}
	data, err := vae.Prepare(ctx, gs, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := vae.TrainConfig{Steps: 6, BatchSize: 4, LR: 3e-3, MinLR: 1e-3, Warmup: 2, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95,
		ValEvery: 3, ClipNorm: 1, Seed: 3}
	run := func(b tensor.Backend) (*vae.Model, []vae.Progress) {
		var ps []vae.Progress
		m, err := vae.Train(ctx, cfg, tc, data, data, vae.TrainOptions{Backend: b, LogEvery: 1,
			Progress: func(p vae.Progress) { ps = append(ps, p) }})
		if err != nil {
			t.Fatal(err)
		}
		return m, ps
	}
	cpu, cpuP := run(nil)
	dev, devP := run(be)
	if len(devP) != len(cpuP) {
		t.Fatalf("%d progress reports on %s, %d on the CPU", len(devP), be.Name(), len(cpuP))
	}
	for i := range cpuP {
		c, d := cpuP[i], devP[i]
		if math.Abs(c.Loss-d.Loss) > 1e-4*math.Abs(c.Loss)+1e-6 || math.IsNaN(d.Loss) {
			t.Errorf("step %d: loss %.7g on %s, %.7g on the CPU", c.Step, d.Loss, be.Name(), c.Loss)
		}
		if (c.Val == nil) != (d.Val == nil) || c.Val != nil && math.Abs(c.Val.Edge()-d.Val.Edge()) > 0.02 {
			t.Errorf("step %d: validation %+v on %s, %+v on the CPU", c.Step, d.Val, be.Name(), c.Val)
		}
	}
	init, err := vae.New(cfg, tc.Seed)
	if err != nil {
		t.Fatal(err)
	}
	// AdamW moves a weight by up to about lr per step whatever the
	// gradient's size, so rounding in a near-zero gradient can show as a
	// weight difference of a few per cent of lr·steps = 0.018.
	compareWeights(t, be, init, cpu, dev, 1e-3)
	// BatchNorm keeps its statistics outside its parameters: refused.
	bn := cfg
	bn.Norm = vae.BatchNorm
	if _, err := vae.Train(ctx, bn, tc, data, nil, vae.TrainOptions{Backend: be}); err == nil {
		t.Error("a BatchNorm model trained on the GPU backend")
	}
	t.Logf("losses on %s: %.6g", be.Name(), func() []float64 {
		l := make([]float64, len(devP))
		for i, p := range devP {
			l[i] = p.Loss
		}
		return l
	}())
}

// TestEmulatedFlowTraining trains LG-Flow on the emulated GPU (see
// TestEmulatedConformance) and checks it against the CPU.
func TestEmulatedFlowTraining(t *testing.T) { checkFlowTraining(t, emulatedBackend(t)) }

// TestFlowTraining trains LG-Flow on the GPU and checks it against the CPU.
func TestFlowTraining(t *testing.T) { checkFlowTraining(t, gpuBackend(t)) }

// checkFlowTraining trains a tiny LG-Flow for a few steps with its DiT on
// be and on the CPU, from the same seed and batches: the losses and the
// final EMA weights must agree to float32 rounding (the GPU sums in
// another order), and training must have moved the weights.
func checkFlowTraining(t *testing.T, be tensor.Backend) {
	ctx := context.Background()
	ae, err := vae.New(vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	gs := append(datasets.Tree(6, 4, 1), datasets.Planar(9, 4, 1)...)
	data, err := vae.Prepare(ctx, gs, ae.Cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	lat, err := flow.EncodeLatents(ctx, ae, data, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := flow.Preset("", "tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Steps, cfg.EMAAfter = 6, 2
	run := func(b tensor.Backend) (*flow.Model, []float64) {
		var losses []float64
		m, err := flow.Train(ctx, cfg, ae, data, lat, flow.TrainOptions{Backend: b, LogEvery: 1,
			Progress: func(p flow.Progress) { losses = append(losses, p.Loss) }})
		if err != nil {
			t.Fatal(err)
		}
		return m, losses
	}
	cpu, cpuLoss := run(nil)
	dev, devLoss := run(be)
	if len(devLoss) != cfg.Steps {
		t.Fatalf("%d losses reported, want %d", len(devLoss), cfg.Steps)
	}
	for i := range cpuLoss {
		if d := math.Abs(devLoss[i] - cpuLoss[i]); d > 1e-4*math.Abs(cpuLoss[i])+1e-6 || math.IsNaN(devLoss[i]) {
			t.Errorf("step %d: loss %.7g on %s, %.7g on the CPU", i+1, devLoss[i], be.Name(), cpuLoss[i])
		}
	}
	init, err := dit.New(cfg.DiT, tensor.NewRNG(cfg.Seed)) // as flow.Train starts
	if err != nil {
		t.Fatal(err)
	}
	compareWeights(t, be, init, cpu.Net, dev.Net, 1e-4)
	t.Logf("losses on %s: %.6g; on the CPU: %.6g", be.Name(), devLoss, cpuLoss)

	// Sampling with the denoiser on be gives the CPU's graphs (the noise is
	// drawn on the CPU; rounding may flip a rare edge decision).
	path := filepath.Join(t.TempDir(), "flow.safetensors")
	if err := cpu.Save(path, nil); err != nil {
		t.Fatal(err)
	}
	onDev, err := flow.Load(path, ae)
	if err != nil {
		t.Fatal(err)
	}
	if err := onDev.ToBackend(be); err != nil {
		t.Fatal(err)
	}
	const n = 10
	want, err := flow.Sample(ctx, cpu, n, flow.WithSeed(4), flow.WithSettings(func(s *flow.Sampler) { s.Steps = 6 }), flow.WithBatchSize(4))
	if err != nil {
		t.Fatal(err)
	}
	got, err := flow.Sample(ctx, onDev, n, flow.WithSeed(4), flow.WithSettings(func(s *flow.Sampler) { s.Steps = 6 }), flow.WithBatchSize(4))
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i := range want {
		if graph.FormatGraph6(got[i]) == graph.FormatGraph6(want[i]) {
			same++
		}
	}
	if same < n-1 {
		t.Errorf("%d of %d graphs sampled on %s equal the CPU's", same, n, be.Name())
	}
}

// compareWeights checks that dev (trained on be) is on the CPU and within
// tol of cpu (trained on the CPU) weight by weight, and that training moved
// cpu away from its initial weights init.
func compareWeights(t *testing.T, be tensor.Backend, init, cpu, dev nn.Module, tol float64) {
	t.Helper()
	iw, dw := nn.StateDict(init), nn.StateDict(dev)
	moved := 0.0
	for name, c := range nn.StateDict(cpu) {
		d := dw[name]
		if d.Backend() != tensor.CPU {
			t.Fatalf("%s: the returned model is on %s, want the CPU", name, d.Backend().Name())
		}
		if diff := tensor.MaxAbs(tensor.Sub(nil, c, d)); diff > tol {
			t.Errorf("%s: weights differ by %.3g between %s and the CPU", name, diff, be.Name())
		}
		moved = max(moved, tensor.MaxAbs(tensor.Sub(nil, c, iw[name])))
	}
	if moved == 0 {
		t.Error("training left every weight at its initial value")
	}
}
