package cuda

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"lgflow/autograd"
	"lgflow/dit"
	"lgflow/flow"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/optim"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// TestEmulatedTrainingSteps checks the device side of a training step on
// the emulated GPU (see checkTrainingSteps), and counts kernel launches.
func TestEmulatedTrainingSteps(t *testing.T) {
	b := emulatedBackend(t)
	checkTrainingSteps(t, b, func() int { return fakeCall(t, "fakecuda_launches") })
}

// TestTrainingSteps is TestEmulatedTrainingSteps on a real GPU (without
// launch counts).
func TestTrainingSteps(t *testing.T) { checkTrainingSteps(t, gpuBackend(t), nil) }

// stepModel is a small DiT on b, flattened, with its optimiser state.
type stepModel struct {
	cfg    flow.Config
	net    *dit.Model
	params []optim.Param
	opt    *optim.AdamW
	ema    *optim.EMA
}

func newStepModel(t *testing.T, b tensor.Backend) *stepModel {
	t.Helper()
	cfg, err := flow.Preset("", "tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DiT.SelfCond = false // no second forward pass: one tape per step
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := nn.ToBackend(net, b); err != nil {
		t.Fatal(err)
	}
	if err := trainer.Flatten(net); err != nil {
		t.Fatal(err)
	}
	m := &stepModel{cfg: cfg, net: net, params: trainer.OptimParams(net)}
	if m.opt, err = optim.NewAdamW(m.params, optim.AdamWConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.01}); err != nil {
		t.Fatal(err)
	}
	if m.ema, err = optim.NewEMA(m.params, optim.EMAConfig{Beta: 0.99, UpdateAfterStep: 1, UpdateEvery: 1, InvGamma: 1, Power: 2.0 / 3}); err != nil {
		t.Fatal(err)
	}
	return m
}

// batch returns a step's latents (B, N, d) and mask (B, N) on the CPU.
func (m *stepModel) batch(step int) (x1, mask *tensor.Tensor) {
	r := tensor.NewRNG(uint64(step) + 100)
	x1 = tensor.RandN(r, tensor.Float32, 4, 7, m.cfg.DiT.Dim)
	mask = tensor.New(tensor.Float32, 4, 7).Fill(1)
	for b := range 4 {
		for j := 7 - b; j < 7; j++ {
			mask.Set(0, b, j)
		}
	}
	return x1, mask
}

// checkTrainingSteps checks, on b: that a released tape hands its device
// buffers back (in-use memory returns to where it was, and later steps
// reuse cached blocks instead of calling the driver); that the optimiser,
// the EMA, zeroing and the finiteness check of a flattened model take a
// few launches, not a few per parameter (when launches counts kernel
// launches); that the Stepper reports a NaN a few steps late and before
// saving; and that TF32 reaches cuBLAS.
func checkTrainingSteps(t *testing.T, b *Backend, launches func() int) {
	m := newStepModel(t, b)
	t.Run("TapeRelease", func(t *testing.T) {
		// Let the garbage of earlier tests go back to the cache first
		// (cleanups run after a collection, on their own goroutine).
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
		var allocs []uint64
		for step := range 4 {
			must(b.Synchronize())
			before := b.MemStats()
			x1, mask := m.batch(step)
			tp := autograd.NewTape()
			loss := m.cfg.Loss(tp, m.net, x1, mask, tensor.NewRNG(uint64(step)))
			optim.ZeroGrad(m.params)
			tp.Backward(loss)
			peak := b.MemStats().InUse
			tp.Release()
			after := b.MemStats()
			t.Logf("step %d: in use %d -> %d during the step -> %d after Release; driver allocations %d, requests %d, releases %d",
				step, before.InUse, peak, after.InUse, after.Allocs, after.Requests, after.Releases)
			if used := int64(peak) - int64(before.InUse); used < 64<<10 {
				t.Fatalf("step %d: the step used only %d bytes: too small to tell", step, used)
			}
			// A few small tensors (dit's time embedding) are left to the
			// garbage collector; everything the tape made comes back.
			if kept := int64(after.InUse) - int64(before.InUse); kept > 16<<10 {
				t.Errorf("step %d: %d more bytes in use after Release than before the step", step, kept)
			}
			allocs = append(allocs, after.Allocs)
		}
		if allocs[3]-allocs[1] > 4 {
			t.Errorf("steps 3 and 4 made %d driver allocations; the cache should serve them", allocs[3]-allocs[1])
		}
	})
	if launches != nil {
		t.Run("Launches", func(t *testing.T) {
			// Gradients for every parameter, as after a backward pass.
			for _, p := range m.params {
				tensor.FillUniform(p.Grad, tensor.NewRNG(2), -1, 1)
			}
			var chk optim.NonFiniteCheck
			for _, c := range []struct {
				name string
				run  func()
				max  int
			}{
				{"AdamW step", m.opt.Step, 2}, // decayed matrices, the rest
				{"EMA update", func() { m.ema.Update(5) }, 1},
				{"zero gradients", func() { optim.ZeroGrad(m.params) }, 1},
				{"finiteness check", func() { chk.AddGrads(m.params) }, 1},
			} {
				n0 := launches()
				c.run()
				if n := launches() - n0; n > c.max {
					t.Errorf("%s: %d kernel launches for %d parameters, want at most %d", c.name, n, len(m.params), c.max)
				}
			}
			if chk.Read() {
				t.Error("finite gradients flagged")
			}
		})
	}
	if launches != nil {
		t.Run("NoHostReads", func(t *testing.T) {
			// Flow training steps through the Stepper wait for the device
			// only when the loss is read and the finiteness flag is due.
			st := trainer.NewStepper(m.params, m.opt, 0)
			st.CheckEvery = 1000
			syncs := func() int { return fakeCall(t, "fakecuda_syncs") }
			n0 := syncs()
			for step := range 3 {
				x1, mask := m.batch(step)
				tp := autograd.NewTape()
				if err := st.Step(tp, m.cfg.Loss(tp, m.net, x1, mask, tensor.NewRNG(uint64(step)))); err != nil {
					t.Fatal(err)
				}
				m.ema.Update(step + 1)
			}
			if n := syncs() - n0; n != 0 {
				t.Errorf("3 training steps waited for the device %d times, want 0", n)
			}
			n0 = syncs()
			if l := st.Loss(); math.IsNaN(l) || l <= 0 {
				t.Errorf("Loss() = %v", l)
			}
			if err := st.Check(); err != nil {
				t.Error(err)
			}
			if n := syncs() - n0; n != 2 {
				t.Errorf("reading the loss and the flag waited %d times, want 2", n)
			}
		})
	}
	t.Run("StepperNaN", func(t *testing.T) {
		st := trainer.NewStepper(m.params, m.opt, 0)
		st.CheckEvery = 3
		for step := 1; step <= 3; step++ {
			x1, mask := m.batch(step)
			if step == 2 {
				x1.Set(math.NaN(), 0, 0, 0)
			}
			tp := autograd.NewTape()
			err := st.Step(tp, m.cfg.Loss(tp, m.net, x1, mask, tensor.NewRNG(7)))
			switch {
			case step < 3 && err != nil:
				t.Fatalf("step %d: %v before the flag was due", step, err)
			case step == 3 && (err == nil || !strings.Contains(err.Error(), "non-finite")):
				t.Fatalf("step 3: error %v, want the NaN of step 2", err)
			}
		}
		if err := st.Check(); err != nil {
			t.Errorf("Check after the flag was read and cleared: %v", err)
		}
		x1, mask := m.batch(9)
		x1.Set(math.Inf(1), 1, 0, 1)
		tp := autograd.NewTape()
		if err := st.Step(tp, m.cfg.Loss(tp, m.net, x1, mask, tensor.NewRNG(7))); err != nil {
			t.Fatalf("a step with an infinity reported at once: %v", err)
		}
		if err := st.Check(); err == nil {
			t.Error("Check (before a save) missed an infinity")
		}
		if l := st.Loss(); !math.IsNaN(l) && !math.IsInf(l, 0) {
			t.Errorf("Loss() = %v after a non-finite step", l)
		}
	})
	t.Run("TF32", func(t *testing.T) {
		defer b.SetTF32(false)
		for _, on := range []bool{true, false} {
			b.SetTF32(on)
			if b.TF32() != on {
				t.Errorf("SetTF32(%v): TF32() = %v", on, b.TF32())
			}
			if launches != nil {
				want := cublasDefaultMath
				if on {
					want = cublasTF32TensorMath
				}
				if got := fakeCall(t, "fakecuda_math_mode"); got != want {
					t.Errorf("SetTF32(%v): cuBLAS math mode %d, want %d", on, got, want)
				}
			}
		}
		if !b.SupportsTF32() && b.Device().ComputeCapability[0] >= 8 {
			t.Error("SupportsTF32 false on sm_80 or newer")
		}
	})
}

// TestEmulatedOutOfMemory fills the emulated device (its cuMemAlloc fails
// after a number of allocations) during vae.Train, flow.Train and
// flow.Sample: each must return an error matching ErrOutOfMemory and tensor.ErrDevice, not
// panic, and the backend must work afterwards.
func TestEmulatedOutOfMemory(t *testing.T) {
	b := emulatedBackend(t)
	ctx := context.Background()
	vcfg := vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}
	gs := append(datasets.Tree(6, 4, 1), datasets.Planar(9, 4, 1)...)
	data, err := vae.Prepare(ctx, gs, vcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ae, err := vae.New(vcfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	lat, err := flow.EncodeLatents(ctx, ae, data, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	fcfg, err := flow.Preset("", "tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	fcfg.Steps = 3
	tc := vae.TrainConfig{Steps: 3, BatchSize: 4, LR: 1e-3, MinLR: 1e-4, Warmup: 1, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95, ClipNorm: 1, Seed: 3}
	// A flow whose denoiser lives on the device before memory runs out:
	// sampling must fail with an error too.
	sampler, err := flow.Train(ctx, fcfg, ae, data, lat, flow.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sampler.ToBackend(b); err != nil {
		t.Fatal(err)
	}
	sample := func() error {
		_, err := flow.Sample(ctx, sampler, 4, flow.WithSettings(func(s *flow.Sampler) { s.Steps = 3 }))
		return err
	}
	cases := []struct {
		name  string
		after int // successful driver allocations before the device is full
		run   func() error
	}{
		{"vae.Train at once", 0, func() error {
			_, err := vae.Train(ctx, vcfg, tc, data, nil, vae.TrainOptions{Backend: b})
			return err
		}},
		{"vae.Train in a step", 40, func() error {
			_, err := vae.Train(ctx, vcfg, tc, data, nil, vae.TrainOptions{Backend: b})
			return err
		}},
		{"flow.Train at once", 0, func() error {
			_, err := flow.Train(ctx, fcfg, ae, data, lat, flow.TrainOptions{Backend: b})
			return err
		}},
		{"flow.Train in a step", 40, func() error {
			_, err := flow.Train(ctx, fcfg, ae, data, lat, flow.TrainOptions{Backend: b})
			return err
		}},
		{"flow.Sample at once", 0, sample},
		{"flow.Sample in a step", 20, sample},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.EmptyCache() // every allocation goes to the driver
			failAllocsAfter(t, c.after)
			err := c.run()
			if !errors.Is(err, ErrOutOfMemory) || !errors.Is(err, tensor.ErrDevice) {
				t.Fatalf("error %v, want one matching ErrOutOfMemory and tensor.ErrDevice", err)
			}
			t.Logf("%v", err)
		})
	}
	// The backend recovers once memory is available again.
	x := tensor.FillUniform(tensor.New(tensor.Float32, 5, 3), tensor.NewRNG(1), -1, 1)
	if got, want := tensor.SumAll(tensor.Add(nil, x.ToBackend(b), x.ToBackend(b))), 2*tensor.SumAll(x); math.Abs(got-want) > 1e-5 {
		t.Errorf("after the failures: sum %v, want %v", got, want)
	}
}
