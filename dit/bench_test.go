package dit_test

import (
	"runtime"
	"testing"
	"time"

	"lgflow/autograd"
	"lgflow/dit"
	"lgflow/flow"
	"lgflow/optim"
	"lgflow/tensor"
	"lgflow/trainer"
)

// benchCase is a DiT size with its batch and the reference PyTorch 1.13
// CPU timings (2 threads, same machine, same configuration and batch).
type benchCase struct {
	name        string
	cfg         dit.Config
	sets        int     // batch size B; every set has 64 tokens
	torchFwd    float64 // reference s per forward pass
	torchTrain  float64 // reference s per training step
	warmupTrain bool    // take one untimed training step first
}

func benchCases(b *testing.B) []benchCase {
	t, err := dit.Preset("T", 16)
	if err != nil {
		b.Fatal(err)
	}
	small := dit.Config{Dim: 16, Width: 128, Depth: 4, Heads: 4, MLPRatio: 4, SelfCond: true, TimeFreqDim: 256, InitStd: 0.02}
	return []benchCase{
		// PyTorch 1.13 (Debian, OpenBLAS), two threads, on the two-core
		// Zen 5 development machine: scripts/bench_torch_dit.py T / small.
		{name: "T", cfg: t, sets: 256, torchFwd: 2.40, torchTrain: 6.77},
		{name: "small", cfg: small, sets: 64, torchFwd: 0.080, torchTrain: 0.279, warmupTrain: true},
	}
}

const benchTokens = 64

// benchInputs returns a batch x (B, 64, d), a full token mask, times and a
// self-conditioning input, all float32.
func benchInputs(c benchCase) (x, mask, sc *tensor.Tensor, ts []float64) {
	r := tensor.NewRNG(1)
	x = tensor.RandN(r, tensor.Float32, c.sets, benchTokens, c.cfg.Dim)
	sc = tensor.RandN(r, tensor.Float32, c.sets, benchTokens, c.cfg.Dim)
	mask = tensor.Full(tensor.Float32, 1, c.sets, benchTokens)
	ts = make([]float64, c.sets)
	for i := range ts {
		ts[i] = r.Uniform()
	}
	return x, mask, sc, ts
}

// forwardFLOPs counts the multiply-adds (x2) of one forward pass over
// B sets of N tokens: per token the input and output projections, and per
// block qkv (3E²), attention output (E²), MLP (2·ratio·E²) and the score
// and value products (2NE); per set the time MLP and adaLN (6E² a block).
func forwardFLOPs(c dit.Config, B, N int) float64 {
	E, d, L := float64(c.Width), float64(c.Dim), float64(c.Depth)
	in := d
	if c.SelfCond {
		in = 2 * d
	}
	perToken := in*E + E*d + L*((4+2*c.MLPRatio)*E*E+2*float64(N)*E)
	perSet := float64(c.TimeFreqDim)*E + E*E + L*6*E*E
	return 2 * (float64(B*N)*perToken + float64(B)*perSet)
}

// report prints the figures; flops is the work of one op. %-of-GEMM is the
// op's rate against that of a 1024³ float32 MatMul measured in the same
// process with the same GOMAXPROCS (gemmRate), the ratio #14 asks about.
func report(b *testing.B, sets int, torch, flops float64) {
	b.StopTimer()
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(flops/sec/1e9, "GFLOP/s")
	b.ReportMetric(100*flops/sec/1e9/gemmRate(), "%-of-GEMM")
	b.ReportMetric(float64(sets)/sec, "sets/s")
	b.ReportMetric(sec, "s/op")
	b.ReportMetric(torch/sec, "x-torch")
	b.ReportMetric(0, "ns/op")
}

// gemmRates caches gemmRate's measurement per GOMAXPROCS value.
var gemmRates = map[int]float64{}

// gemmRate returns the GFLOP/s of 1024³ float32 MatMuls into a
// preallocated result with the current GOMAXPROCS: the best of five
// windows of about 0.1 s after one warm-up product (once per GOMAXPROCS
// value and process). The best window is the machine's rate with the
// least interference, so a slowed reference cannot inflate the ratio.
func gemmRate() float64 {
	procs := runtime.GOMAXPROCS(0)
	if r, ok := gemmRates[procs]; ok {
		return r
	}
	const n = 1024
	rng := tensor.NewRNG(2)
	x, y := tensor.RandN(rng, tensor.Float32, n, n), tensor.RandN(rng, tensor.Float32, n, n)
	z := tensor.New(tensor.Float32, n, n)
	tensor.MatMul(z, x, y, false, false)
	best := 0.0
	for range 5 {
		start, reps := time.Now(), 0
		for time.Since(start) < 100*time.Millisecond {
			tensor.MatMul(z, x, y, false, false)
			reps++
		}
		best = max(best, 2*n*n*n*float64(reps)/time.Since(start).Seconds()/1e9)
	}
	gemmRates[procs] = best
	return best
}

// BenchmarkForward times one no-grad forward pass of the DiT (the work of
// one sampling step) with a self-conditioning input, on B sets of 64
// tokens, and reports GFLOP/s, its share of the GEMM rate, sets/s, s/op and
// the speed-up over PyTorch.
func BenchmarkForward(b *testing.B) {
	for _, c := range benchCases(b) {
		b.Run(c.name, func(b *testing.B) {
			m, err := dit.New(c.cfg, tensor.NewRNG(1))
			if err != nil {
				b.Fatal(err)
			}
			x, mask, sc, ts := benchInputs(c)
			xv, scv := autograd.NewConst(x), autograd.NewConst(sc)
			b.ResetTimer()
			for range b.N {
				tp := autograd.NoGrad()
				m.Forward(tp, xv, ts, mask, scv)
				tp.Release()
			}
			report(b, c.sets, c.torchFwd, forwardFLOPs(c.cfg, c.sets, benchTokens))
		})
	}
}

// BenchmarkTrainStep times one flow-matching training step of the DiT:
// flow.Config.Loss with self-conditioning always on (a no-grad forward pass, then
// the training forward pass), backward and the AdamW update, as flow.Train
// does it. It reports GFLOP/s (counting the backward pass as twice the
// forward), its share of the GEMM rate, sets/s, s/op and the speed-up over
// PyTorch.
//
// T takes tens of seconds a step on two cores; run it with -benchtime=1x.
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range benchCases(b) {
		b.Run(c.name, func(b *testing.B) {
			net, err := dit.New(c.cfg, tensor.NewRNG(1))
			if err != nil {
				b.Fatal(err)
			}
			params := trainer.OptimParams(net)
			opt, err := optim.NewAdamW(params, optim.AdamWConfig{LR: 2e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 1e-12})
			if err != nil {
				b.Fatal(err)
			}
			fc := flow.Config{DiT: c.cfg, SelfCondProb: 1, BatchSize: c.sets, Steps: 1, LR: 2e-4}
			x1, mask, _, _ := benchInputs(c)
			step := func(i int) {
				tp := autograd.NewTape()
				loss := fc.Loss(tp, net, x1, mask, tensor.NewRNG(uint64(i)))
				trainer.ZeroGrad(params)
				tp.Backward(loss)
				tp.Release()
				if err := optim.CheckFinite(params); err != nil {
					b.Fatal(err)
				}
				opt.Step()
			}
			if c.warmupTrain {
				step(-1)
			}
			b.ResetTimer()
			for i := range b.N {
				step(i)
			}
			// no-grad pass + forward + backward (about twice a forward)
			report(b, c.sets, c.torchTrain, 4*forwardFLOPs(c.cfg, c.sets, benchTokens))
		})
	}
}
