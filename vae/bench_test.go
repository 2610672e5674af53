package vae_test

import (
	"context"
	"path/filepath"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/optim"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// BenchmarkTrainStep times one LG-VAE optimisation step (forward, backward
// and AdamW update, exactly as vae.Train does it) on a fixed batch of
// 64-node planar graphs, and reports graphs/s, s/step and the speed-up over
// the reference PyTorch 1.13 implementation on CPU (2 threads, same machine,
// same configuration and batch), whose s/step is given per case.
//
// paper-planar is the paper's Planar autoencoder at batch 256; one step
// takes tens of seconds on two cores, so run it with -benchtime=1x:
//
//	go test -run XXX -bench 'TrainStep/paper-planar' -benchtime 1x ./vae/
func BenchmarkTrainStep(b *testing.B) {
	for _, bc := range []struct {
		name   string
		cfg    vae.Config
		graphs int
		torch  float64 // reference s/step
		warmup bool    // take one untimed step first
	}{
		{"paper-planar", vae.Config{K: 16, Latent: 16, PhiWidth: 256, Layers: 16, Width: 256, DeepSet: 16,
			EdgeClasses: 1, Norm: vae.GraphNorm, KLWeight: 1e-6, SignFlips: true}, 256, 19, false},
		{"small", vae.Config{K: 16, Latent: 16, PhiWidth: 64, Layers: 6, Width: 64, DeepSet: 16,
			EdgeClasses: 1, Norm: vae.GraphNorm, KLWeight: 1e-6, SignFlips: true}, 32, 0.71, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			gs := datasets.Planar(64, bc.graphs, 1)
			d, err := vae.Prepare(context.Background(), gs, bc.cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			m, err := vae.New(bc.cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			step := trainStep(b, m, gs, d, 2e-4)
			if bc.warmup {
				step(-1)
			}
			b.ResetTimer()
			for i := range b.N {
				step(i)
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(bc.graphs)/sec, "graphs/s")
			b.ReportMetric(sec, "s/step")
			b.ReportMetric(bc.torch/sec, "x-torch")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkDecoderLoss times the decoder term of a data-end expert's
// training step (flow.Config.DecoderWeight): the frozen planar cpu-preset
// decoder's reconstruction loss of 256 graphs of 64 nodes, forward and
// backward to the latents. Compare it with the DiT's own step in the same
// run:
//
//	go test -run XXX -bench 'DecoderLoss|TrainStep/small' ./vae/ ./dit/
func BenchmarkDecoderLoss(b *testing.B) {
	cfg := vae.Config{K: 16, Latent: 16, PhiWidth: 64, Layers: 6, Width: 64, DeepSet: 16,
		EdgeClasses: 1, Norm: vae.LayerNorm, KLWeight: 1e-6, SignFlips: true}
	const graphs = 256
	gs := datasets.Planar(64, graphs, 1)
	m, err := vae.New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	if m, err = m.Frozen(); err != nil {
		b.Fatal(err)
	}
	batch := graph.NewBatch(gs)
	z := autograd.NewParam(tensor.RandN(tensor.NewRNG(2), tensor.Float32, graphs, batch.MaxN, cfg.Latent))
	step := func() {
		tp := autograd.NewTape()
		l, err := m.DecoderLoss(tp, z, batch)
		if err != nil {
			b.Fatal(err)
		}
		z.ZeroGrad()
		tp.Backward(l)
		tp.Release()
	}
	step()
	b.ResetTimer()
	for range b.N {
		step()
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(graphs/sec, "graphs/s")
	b.ReportMetric(sec, "s/op")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTrainStepTrained times the LG-VAE optimisation step from
// trained weights, the shipped tree LG-VAE's, on 32 trees of 64 nodes: a
// trained network's activations and gradients hold thousands of denormal
// floats, which fresh weights (BenchmarkTrainStep) do not, and which cost
// x86 cores a microcode assist each unless the kernels flush them
// (docs/results.md, session 30).
//
//	go test -run XXX -bench TrainStepTrained -cpu 1,2 ./vae/
func BenchmarkTrainStepTrained(b *testing.B) {
	m, err := vae.Load(filepath.Join("..", "pretrained", "tree", vae.ModelFile))
	if err != nil {
		b.Skip(err)
	}
	gs := datasets.Tree(64, 32, 1)
	d, err := vae.Prepare(context.Background(), gs, m.Cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	step := trainStep(b, m, gs, d, 1e-4)
	step(-1)
	b.ResetTimer()
	for i := range b.N {
		step(i)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/step")
	b.ReportMetric(0, "ns/op")
}

// trainStep returns one LG-VAE optimisation step on the batch of gs
// (forward, backward, the finite check and the AdamW update at rate lr,
// as vae.Train does them), drawing its noise from seed i.
func trainStep(b *testing.B, m *vae.Model, gs []*graph.Graph, d *vae.Dataset, lr float64) func(i int) {
	params := trainer.OptimParams(m)
	opt, err := optim.NewAdamW(params, optim.AdamWConfig{LR: lr, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 1e-4})
	if err != nil {
		b.Fatal(err)
	}
	batch := graph.NewBatch(gs)
	return func(i int) {
		tp := autograd.NewTape()
		loss, _ := m.Objective(tp, batch, d.Features, vae.Training, tensor.NewRNG(uint64(i)))
		trainer.ZeroGrad(params)
		tp.Backward(loss.Total)
		tp.Release()
		if err := optim.CheckFinite(params); err != nil {
			b.Fatal(err)
		}
		opt.Step()
	}
}
