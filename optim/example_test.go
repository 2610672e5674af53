package optim_test

import (
	"fmt"
	"math"

	"lgflow/optim"
	"lgflow/tensor"
)

// A few AdamW steps on f(w) = ½‖w‖² (gradient w) with the project's
// warmup-cosine schedule and an EMA of the weights.
func Example() {
	w := tensor.FromFloat32([]float32{1, -2, 3, 4}, 2, 2)
	b := tensor.FromFloat32([]float32{0.5, 0.5}, 2)
	params := []optim.Param{
		{Name: "w", Value: w, Grad: w.NewLike(), Decay: optim.DefaultDecay("w", w.Shape())},
		{Name: "b", Value: b, Grad: b.NewLike(), Decay: optim.DefaultDecay("b", b.Shape())},
	}
	opt, err := optim.NewAdamW(params, optim.DefaultAdamWConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	before := math.Sqrt(tensor.Norm2Squared(w))
	sched := optim.WarmupCosine{Peak: 0.1, Min: 0.01, Warmup: 2, DecaySteps: 10}
	emaCfg := optim.DefaultEMAConfig()
	emaCfg.UpdateAfterStep = 3
	ema, _ := optim.NewEMA(params, emaCfg)

	for step := 1; step <= 10; step++ {
		for _, p := range params {
			tensor.Copy(p.Grad, p.Value) // gradient of ½‖p‖²
		}
		if err := optim.CheckFinite(params); err != nil {
			fmt.Println(err)
			return
		}
		optim.ClipGradNorm(params, 10)
		opt.SetLR(sched.LR(step))
		opt.Step()
		ema.Update(step)
	}
	fmt.Printf("|w| %.3f -> %.3f, EMA |w| %.3f\n", before, math.Sqrt(tensor.Norm2Squared(w)),
		math.Sqrt(tensor.Norm2Squared(ema.Weights()["w"])))
	fmt.Printf("lr at step 1, 2, 10: %.3g %.3g %.3g\n", sched.LR(1), sched.LR(2), sched.LR(10))
	fmt.Printf("EMA decay at step 5: %.4f\n", emaCfg.Decay(5))
	// Output:
	// |w| 5.477 -> 4.508, EMA |w| 4.573
	// lr at step 1, 2, 10: 0.05 0.1 0.01
	// EMA decay at step 5: 0.3700
}

// The LG-VAE schedule (Planar run): linear warmup over 100 steps, then a
// cosine from 2e-4 down to 1.5e-4 at step 50000.
func ExampleWarmupCosine() {
	s := optim.WarmupCosine{Peak: 2e-4, Min: 1.5e-4, Warmup: 100, DecaySteps: 50000}
	for _, step := range []int{1, 50, 100, 25050, 50000, 60000} {
		fmt.Printf("step %5d: %.4g\n", step, s.LR(step))
	}
	// Output:
	// step     1: 2e-06
	// step    50: 0.0001
	// step   100: 0.0002
	// step 25050: 0.000175
	// step 50000: 0.00015
	// step 60000: 0.00015
}

// The EMA decay of LG-Flow (ema-pytorch warm-up, update after step 1000).
func ExampleEMAConfig_Decay() {
	c := optim.DefaultEMAConfig()
	for _, step := range []int{1000, 1001, 1002, 1008, 32623, 1001000} {
		fmt.Printf("step %7d: %.6f\n", step, c.Decay(step))
	}
	// Output:
	// step    1000: 0.000000
	// step    1001: 0.000000
	// step    1002: 0.370039
	// step    1008: 0.750000
	// step   32623: 0.999000
	// step 1001000: 0.999900
}
