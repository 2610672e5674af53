package cuda

import (
	"context"
	"math"
	"testing"

	"lgflow/flow"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/tensor"
	"lgflow/vae"
)

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
	ae.Train(false)
	gs := append(datasets.Tree(6, 4, 1), datasets.Planar(9, 4, 1)...)
	data, err := vae.Prepare(ctx, gs, ae.Cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	lat, err := flow.EncodeLatents(ctx, ae, data, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := flow.Preset("tiny", 4)
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
	moved := 0.0
	cw, dw := nn.StateDict(cpu.Net), nn.StateDict(dev.Net)
	for name, c := range cw {
		d := dw[name]
		if d.Backend() != tensor.CPU {
			t.Fatalf("%s: the returned model is on %s, want the CPU", name, d.Backend().Name())
		}
		if diff := tensor.MaxAbs(tensor.Sub(nil, c, d)); diff > 1e-4 {
			t.Errorf("%s: EMA weights differ by %.3g between %s and the CPU", name, diff, be.Name())
		}
		moved = max(moved, tensor.MaxAbs(c))
	}
	if moved == 0 {
		t.Error("all weights zero after training")
	}
	t.Logf("losses on %s: %.6g; on the CPU: %.6g", be.Name(), devLoss, cpuLoss)
}
