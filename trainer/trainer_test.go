package trainer_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/optim"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
)

// net is a small module with parameters and buffers (BatchNorm running
// statistics), the two kinds of state a checkpoint must carry.
type net struct {
	mlp *nn.MLP
	bn  *nn.BatchNorm1d
}

func newNet(seed uint64, width int) *net {
	r := tensor.NewRNG(seed)
	return &net{mlp: nn.NewMLP(r, []int{3, width, 2}), bn: nn.NewBatchNorm1d(2)}
}

func (n *net) Params() []nn.Param {
	return append(nn.ParamsOf("mlp", n.mlp), nn.ParamsOf("bn", n.bn)...)
}

func (n *net) Buffers() []nn.Param { return nn.BuffersOf("bn", n.bn) }

// fakeStep fills every gradient with seeded noise and takes an optimiser step.
func fakeStep(ps []optim.Param, opt *optim.AdamW, seed uint64) {
	r := tensor.NewRNG(seed)
	for _, p := range ps {
		tensor.Copy(p.Grad, tensor.RandN(r, p.Grad.DType(), p.Grad.Shape()...))
	}
	opt.Step()
}

func newOpt(t *testing.T, m nn.Module) ([]optim.Param, *optim.AdamW) {
	t.Helper()
	ps := trainer.OptimParams(m)
	opt, err := optim.NewAdamW(ps, optim.AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	return ps, opt
}

func sameTensors(t *testing.T, what string, a, b map[string]*tensor.Tensor) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d tensors, want %d", what, len(b), len(a))
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			t.Fatalf("%s: %q missing", what, k)
		}
		if !slices.Equal(x.Shape(), y.Shape()) {
			t.Fatalf("%s: %q has shape %v, want %v", what, k, y.Shape(), x.Shape())
		}
		xd, yd := x.To(tensor.Float64).Data64(), y.To(tensor.Float64).Data64()
		for i := range xd {
			if xd[i] != yd[i] {
				t.Fatalf("%s: %q[%d] = %v, want %v", what, k, i, yd[i], xd[i])
			}
		}
	}
}

// TestOptimParams checks that gradient buffers are shared between the
// autograd Vars and the optimiser Params, and that only matrices decay.
func TestOptimParams(t *testing.T) {
	m := newNet(1, 4)
	ps := trainer.OptimParams(m)
	want := map[string]bool{"mlp.0.weight": true, "mlp.0.bias": false, "mlp.1.weight": true, "mlp.1.bias": false, "bn.weight": false, "bn.bias": false}
	if len(ps) != len(want) {
		t.Fatalf("%d params, want %d", len(ps), len(want))
	}
	for i, p := range m.Params() {
		if ps[i].Name != p.Name {
			t.Fatalf("param %d named %q, want %q", i, ps[i].Name, p.Name)
		}
		if ps[i].Grad == nil || ps[i].Grad != p.V.Grad || ps[i].Value != p.V.Value {
			t.Errorf("%s: optimiser tensors are not the Var's", p.Name)
		}
		if ps[i].Decay != want[p.Name] {
			t.Errorf("%s: Decay %v, want %v", p.Name, ps[i].Decay, want[p.Name])
		}
	}
	ps[0].Grad.Fill(3)
	trainer.ZeroGrad(ps)
	if got := tensor.MaxAbs(m.Params()[0].V.Grad); got != 0 {
		t.Errorf("ZeroGrad left %v in the gradient", got)
	}
}

// TestStateRoundTrip saves a model after a few optimiser steps and restores
// it into a differently initialised model: weights, buffers, optimiser
// moments and steps, metadata and extra tensors must all come back, and a
// further step must then agree bit for bit.
func TestStateRoundTrip(t *testing.T) {
	a := newNet(1, 4)
	psA, optA := newOpt(t, a)
	for s := range 3 {
		fakeStep(psA, optA, uint64(s))
	}
	a.bn.RunningMean.Set(0.25, 1)
	a.bn.RunningVar.Set(4, 0)
	extra := map[string]*tensor.Tensor{"ema.w": tensor.FromFloat64([]float64{1, 2, 3, 4}, 2, 2)}
	path := filepath.Join(t.TempDir(), "state.safetensors")
	if err := trainer.SaveState(path, a, optA, 7, map[string]string{"note": "hello", trainer.MetaConfig: `{"k":1}`}, extra); err != nil {
		t.Fatal(err)
	}

	b := newNet(2, 4)
	psB, optB := newOpt(t, b)
	st, err := trainer.LoadState(path, b, optB)
	if err != nil {
		t.Fatal(err)
	}
	if st.Step != 7 {
		t.Errorf("Step = %d, want 7", st.Step)
	}
	for k, v := range map[string]string{"note": "hello", trainer.MetaConfig: `{"k":1}`, trainer.MetaStep: "7"} {
		if st.Meta[k] != v {
			t.Errorf("Meta[%q] = %q, want %q", k, st.Meta[k], v)
		}
	}
	sameTensors(t, "extra", extra, st.Extra)
	sameTensors(t, "model", nn.StateDict(a), nn.StateDict(b))
	sameTensors(t, "optimiser", optA.StateDict(), optB.StateDict())
	for _, p := range psA {
		if got := optB.Steps(p.Name); got != 3 {
			t.Errorf("%s: optimiser step %d after load, want 3", p.Name, got)
		}
	}

	fakeStep(psA, optA, 99)
	fakeStep(psB, optB, 99)
	sameTensors(t, "after one more step", nn.StateDict(a), nn.StateDict(b))

	// Without an optimiser only the model is restored.
	c := newNet(3, 4)
	if _, err := trainer.LoadState(path, c, nil); err != nil {
		t.Fatal(err)
	}
	if err := trainer.SaveState(path, a, nil, 0, nil, nil); err != nil {
		t.Fatalf("SaveState without optimiser and metadata: %v", err)
	}
}

// TestLoadStateErrors feeds LoadState truncated, garbage and mismatched
// files: each must give an error (never a panic) that says what is wrong.
func TestLoadStateErrors(t *testing.T) {
	dir := t.TempDir()
	a := newNet(1, 4)
	_, opt := newOpt(t, a)
	good := filepath.Join(dir, "good.safetensors")
	if err := trainer.SaveState(good, a, opt, 5, nil, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noStep := filepath.Join(dir, "nostep.safetensors")
	if err := safetensors.Save(noStep, prefixed("model.", nn.StateDict(a)), nil); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.safetensors")
	if err := safetensors.Save(foreign, map[string]*tensor.Tensor{"weight": tensor.New(tensor.Float32, 2)}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		path  string
		model nn.Module
		opt   bool
		want  []string // substrings of the error
	}{
		{"missing file", filepath.Join(dir, "nope.safetensors"), newNet(1, 4), true, []string{"nope.safetensors"}},
		{"empty", write("empty", nil), newNet(1, 4), true, nil},
		{"truncated header", write("t1", raw[:20]), newNet(1, 4), true, nil},
		{"truncated data", write("t2", raw[:len(raw)-3]), newNet(1, 4), true, nil},
		{"garbage", write("garbage", []byte("this is not a safetensors file at all, sorry")), newNet(1, 4), true, nil},
		{"wider model", good, newNet(1, 5), true, []string{"mlp.0.weight", "shape"}},
		{"wider model, no optimiser", good, newNet(1, 5), false, []string{"mlp.0.weight", "mlp.1.weight"}},
		{"no step metadata", noStep, newNet(1, 4), false, []string{`"step"`}},
		{"not a training checkpoint", foreign, newNet(1, 4), false, []string{`"weight"`, "foreign.safetensors"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o *optim.AdamW
			if tc.opt {
				_, o = newOpt(t, tc.model)
			}
			st, err := trainer.LoadState(tc.path, tc.model, o)
			if err == nil {
				t.Fatalf("no error (state %+v)", st)
			}
			t.Logf("error: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

func prefixed(p string, m map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	out := make(map[string]*tensor.Tensor, len(m))
	for k, v := range m {
		out[p+k] = v
	}
	return out
}

// TestMeta checks the JSON metadata helpers.
func TestMeta(t *testing.T) {
	type cfg struct {
		A int     `json:"a"`
		B float64 `json:"b"`
	}
	meta := map[string]string{"c": trainer.MarshalMeta(cfg{3, 0.1}), "bad": "{"}
	if meta["c"] != `{"a":3,"b":0.1}` {
		t.Errorf("MarshalMeta = %s", meta["c"])
	}
	var got cfg
	if err := trainer.UnmarshalMeta(meta, "c", &got); err != nil || got != (cfg{3, 0.1}) {
		t.Errorf("UnmarshalMeta = %+v, %v", got, err)
	}
	if err := trainer.UnmarshalMeta(meta, "missing", &got); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("missing key: error %v", err)
	}
	var se *safetensors.Error
	if err := trainer.UnmarshalMeta(meta, "bad", &got); err == nil || !strings.Contains(err.Error(), `"bad"`) || errors.As(err, &se) {
		t.Errorf("bad JSON: error %v", err)
	}
}

// TestClock checks the trivial cases of the progress clock.
func TestClock(t *testing.T) {
	c := trainer.NewClock(10)
	if eta := c.ETA(10, 100); eta != 0 {
		t.Errorf("ETA with no steps done = %v, want 0", eta)
	}
	if r := c.Rate(10); r != 0 {
		t.Errorf("Rate with no steps done = %v, want 0", r)
	}
	if c.Elapsed() < 0 {
		t.Error("negative Elapsed")
	}
}

// TestStepperCPU checks that on the CPU a Stepper is Step: the same loss
// and weights, bit for bit, on flattened parameters too, and an error at
// once for a non-finite loss.
func TestStepperCPU(t *testing.T) {
	x := autograd.NewConst(tensor.FillUniform(tensor.New(tensor.Float32, 5, 3), tensor.NewRNG(3), -1, 1))
	lossOf := func(tp *autograd.Tape, m *net, scale float64) *autograd.Var {
		return tp.MulScalar(tp.SumAll(tp.Square(m.mlp.Forward(tp, x))), scale)
	}
	cases := []struct {
		name    string
		flatten bool
		scale   float64
		wantErr bool
	}{
		{"separate", false, 1, false},
		{"flat", true, 1, false},
		{"NaN loss", true, math.NaN(), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref, got := newNet(1, 4), newNet(1, 4)
			if c.flatten {
				if err := trainer.Flatten(got); err != nil {
					t.Fatal(err)
				}
			}
			psR, optR := newOpt(t, ref)
			psG, optG := newOpt(t, got)
			st := trainer.NewStepper(psG, optG, 0.5)
			for step := range 3 {
				tp := autograd.NewTape()
				want, errR := trainer.Step(tp, lossOf(tp, ref, c.scale), psR, optR, 0.5)
				tp = autograd.NewTape()
				err := st.Step(tp, lossOf(tp, got, c.scale))
				if (err != nil) != c.wantErr || (errR != nil) != c.wantErr {
					t.Fatalf("step %d: Stepper error %v, Step error %v, want errors %v", step, err, errR, c.wantErr)
				}
				if c.wantErr {
					return
				}
				if l := st.Loss(); l != want {
					t.Fatalf("step %d: loss %v, Step's %v", step, l, want)
				}
			}
			sameTensors(t, "weights", nn.StateDict(ref), nn.StateDict(got))
			if err := st.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestReadStateMeta reads a state's metadata from its header and refuses a
// checkpoint of another kind.
func TestReadStateMeta(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.safetensors")
	m := newNet(1, 4)
	_, opt := newOpt(t, m)
	if err := trainer.SaveState(path, m, opt, 3, map[string]string{trainer.MetaKind: "lgflow.test", "note": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	meta, err := trainer.ReadStateMeta(path, "lgflow.test")
	if err != nil || meta["note"] != "x" || meta[trainer.MetaStep] != "3" {
		t.Fatalf("ReadStateMeta = %v, %v", meta, err)
	}
	if _, err := trainer.ReadStateMeta(path, "lgflow.vae"); err == nil || !strings.Contains(err.Error(), `kind "lgflow.test"`) {
		t.Errorf("wrong kind: error %v", err)
	}
}
