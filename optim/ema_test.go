package optim

import (
	"math"
	"strings"
	"testing"

	"lgflow/tensor"
)

func TestEMADecay(t *testing.T) {
	def := DefaultEMAConfig()
	custom := EMAConfig{Beta: 0.99, UpdateAfterStep: 10, UpdateEvery: 1, InvGamma: 2, Power: 0.75, MinValue: 0}
	floor := def
	floor.MinValue = 0.5
	cases := []struct {
		cfg  EMAConfig
		step int
		want float64
	}{
		{def, 1, 0},
		{def, 1000, 0},
		{def, 1001, 0},                       // e = 0
		{def, 1002, 1 - math.Pow(2, -2.0/3)}, // e = 1: 0.3700394750525634
		{def, 1008, 0.75},                    // e = 7: 1 - 8^(-2/3) = 1 - 1/4
		{def, 1027, 8.0 / 9},                 // e = 26: 1 - 27^(-2/3) = 1 - 1/9
		{def, 1064, 0.9375},                  // e = 63: 1 - 1/16
		{def, 1001 + 999, 1 - math.Pow(1000, -2.0/3)}, // e = 999: 1 - 1/100 (up to rounding)
		{def, 1001000, 0.9999},                        // e = 999999: 1 - 1e6^(-2/3) = 0.9999, the cap
		{def, 5000000, 0.9999},
		{custom, 11, 0},
		{custom, 12, 1 - math.Pow(1.5, -0.75)},  // e = 1, e/InvGamma = 0.5
		{custom, 42, 1 - math.Pow(16.5, -0.75)}, // e = 31, 1 + 31/2
		{floor, 1002, 0.5},                      // 0.37 raised to MinValue
		{floor, 1001, 0},                        // copy phase ignores MinValue (as ema-pytorch)
	}
	for _, c := range cases {
		if got := c.cfg.Decay(c.step); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Decay(%d) with %+v = %.17g, want %.17g", c.step, c.cfg, got, c.want)
		}
	}
	if got := def.Decay(1002); math.Abs(got-0.3700394750525634) > 1e-16 {
		t.Errorf("Decay(1002) = %.17g", got)
	}
}

// torchEMA mirrors ema-pytorch 0.7.7's EMA.update for one scalar
// parameter, line by line (step is the pre-increment counter, the decay
// is computed after the increment).
type torchEMA struct {
	cfg   EMAConfig
	step  int
	ema   float64
	init  bool
	model *float64
}

func (e *torchEMA) update() {
	step := e.step
	e.step++
	if !e.init {
		e.ema = *e.model
		e.init = true
		return
	}
	if step%e.cfg.UpdateEvery != 0 {
		return
	}
	if step <= e.cfg.UpdateAfterStep {
		e.ema = *e.model
		return
	}
	epoch := math.Max(float64(e.step-e.cfg.UpdateAfterStep-1), 0)
	d := 0.0
	if epoch > 0 {
		d = 1 - math.Pow(1+epoch/e.cfg.InvGamma, -e.cfg.Power)
		d = math.Min(math.Max(d, e.cfg.MinValue), e.cfg.Beta)
	}
	e.ema += (1 - d) * (*e.model - e.ema) // lerp_(model, 1 - decay)
}

func TestEMAMatchesEMAPyTorch(t *testing.T) {
	for _, cfg := range []EMAConfig{
		{Beta: 0.9999, UpdateAfterStep: 20, UpdateEvery: 1, InvGamma: 1, Power: 2.0 / 3},
		{Beta: 0.9, UpdateAfterStep: 5, UpdateEvery: 3, InvGamma: 1, Power: 2.0 / 3},
		{Beta: 0.999, UpdateAfterStep: 0, UpdateEvery: 1, InvGamma: 3, Power: 0.75, MinValue: 0.2},
	} {
		p := Param{Name: "w", Value: tensor.Scalar(tensor.Float64, 0)}
		ema, err := NewEMA([]Param{p}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var online float64
		ref := &torchEMA{cfg: cfg, model: &online}
		for step := 1; step <= 200; step++ {
			online = math.Sin(float64(step)) + float64(step)/10 // the "optimiser step"
			p.Value.Fill(online)
			ema.Update(step)
			ref.update()
			if got := ema.Weights()["w"].Item(); math.Abs(got-ref.ema) > 1e-12 {
				t.Fatalf("%+v: step %d: ema %.15g, ema-pytorch %.15g", cfg, step, got, ref.ema)
			}
		}
	}
}

func TestEMAUpdate(t *testing.T) {
	// Default config, float32 vector: copies through step 1001, then
	// decay 1 - 2^(-2/3) at step 1002.
	v := tensor.FromFloat32([]float32{0, 0, 0}, 3)
	ema, err := NewEMA([]Param{{Name: "v", Value: v}}, DefaultEMAConfig())
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 1001; step++ {
		v.Fill(float64(step))
		if d := ema.Update(step); d != 0 {
			t.Fatalf("step %d: decay %v, want 0 (copy)", step, d)
		}
	}
	if got := ema.Weights()["v"].Data32(); got[0] != 1001 {
		t.Fatalf("after copy phase: %v", got)
	}
	v.Fill(1002)
	d := ema.Update(1002)
	want := 1001 + (1-d)*1 // 1001.6299605...
	for _, x := range ema.Weights()["v"].Data32() {
		if math.Abs(float64(x)-want) > 1e-4 {
			t.Fatalf("step 1002: %v, want %v", x, want)
		}
	}
	// Large tensors take the parallel path; check it against the formula.
	n := 1 << 17
	big := tensor.New(tensor.Float32, n)
	e2, _ := NewEMA([]Param{{Name: "big", Value: big}}, EMAConfig{Beta: 0.5, UpdateEvery: 1, InvGamma: 1, Power: 1})
	for i, d := 0, big.Data32(); i < n; i++ {
		d[i] = float32(i)
	}
	e2.Update(5) // e = 4, decay = 1 - 1/5 = 0.8, capped to 0.5
	for i, x := range e2.Weights()["big"].Data32() {
		if x != 0.5*float32(i) {
			t.Fatalf("big[%d] = %v, want %v", i, x, 0.5*float32(i))
		}
	}
}

func TestEMAWeightsRoundTrip(t *testing.T) {
	a := Param{Name: "a", Value: tensor.FromFloat32([]float32{1, 2}, 2)}
	b := Param{Name: "b", Value: tensor.FromFloat64([]float64{3}, 1, 1)}
	ema, _ := NewEMA([]Param{a, b}, DefaultEMAConfig())
	saved := map[string]*tensor.Tensor{}
	for k, v := range ema.Weights() {
		saved[k] = v.Clone()
	}
	a.Value.Fill(9)
	b.Value.Fill(9)
	ema.Update(1) // copy
	if err := ema.LoadWeights(saved); err != nil {
		t.Fatal(err)
	}
	if ema.Weights()["a"].Data32()[1] != 2 || ema.Weights()["b"].Item() != 3 {
		t.Error("LoadWeights did not restore")
	}
	// CopyTo an evaluation copy of the model.
	evalA := Param{Name: "a", Value: tensor.New(tensor.Float32, 2)}
	if err := ema.CopyTo([]Param{evalA}); err != nil {
		t.Fatal(err)
	}
	if evalA.Value.Data32()[0] != 1 {
		t.Error("CopyTo did not copy")
	}
	err := ema.LoadWeights(map[string]*tensor.Tensor{"a": tensor.New(tensor.Float32, 3), "c": tensor.New(tensor.Float32, 1)})
	for _, s := range []string{`missing "b"`, `"a" is float32 [3], want float32 [2]`, `unexpected "c"`} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("LoadWeights error %v lacks %q", err, s)
		}
	}
	if err := ema.CopyTo([]Param{{Name: "zz", Value: tensor.New(tensor.Float32, 1)}}); err == nil {
		t.Error("CopyTo accepted an unknown name")
	}
}

func TestEMAConfigValidate(t *testing.T) {
	mod := func(f func(*EMAConfig)) EMAConfig { c := DefaultEMAConfig(); f(&c); return c }
	for name, c := range map[string]EMAConfig{
		"beta":     mod(func(c *EMAConfig) { c.Beta = 1.5 }),
		"min":      mod(func(c *EMAConfig) { c.MinValue = 1 }),
		"after":    mod(func(c *EMAConfig) { c.UpdateAfterStep = -1 }),
		"every":    mod(func(c *EMAConfig) { c.UpdateEvery = 0 }),
		"invgamma": mod(func(c *EMAConfig) { c.InvGamma = 0 }),
		"power":    mod(func(c *EMAConfig) { c.Power = math.NaN() }),
	} {
		if c.Validate() == nil {
			t.Errorf("%s: %+v accepted", name, c)
		}
	}
	if err := DefaultEMAConfig().Validate(); err != nil {
		t.Error(err)
	}
}
