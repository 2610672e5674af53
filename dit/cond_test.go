package dit

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/tensor"
)

// condConfig is a small conditional DiT: 3 classes and a 2-vector.
func condConfig(classes, condDim int) Config {
	return Config{Dim: 3, Width: 8, Depth: 2, Heads: 2, MLPRatio: 2, SelfCond: true, TimeFreqDim: 8, InitStd: 0.3,
		Classes: classes, CondDim: condDim}
}

// randomizeCond gives the condition paths random weights (they start at
// zero, where the condition changes nothing).
func randomizeCond(m *Model, seed uint64) {
	r := tensor.NewRNG(seed)
	for _, p := range m.Params() {
		if strings.HasPrefix(p.Name, "y_embed.") || strings.HasPrefix(p.Name, "cond_") {
			tensor.FillNormal(p.V.Value, r, 0, 0.5)
		}
	}
}

// TestUnconditionalParamNames pins the parameter names and shapes of an
// unconditional DiT, which checkpoints store: conditions must not change
// them.
func TestUnconditionalParamNames(t *testing.T) {
	m := tinyModel(t, tensor.Float32)
	want := []string{"x_embed.weight [32 6]", "x_embed.bias [32]", "t_embed.0.weight [32 256]", "t_embed.0.bias [32]",
		"t_embed.2.weight [32 32]", "t_embed.2.bias [32]"}
	for _, b := range []string{"blocks.0.", "blocks.1."} {
		for _, p := range []string{"adaLN.weight [192 32]", "adaLN.bias [192]", "norm1.weight [32]", "norm1.bias [32]",
			"attn.qkv.weight [96 32]", "attn.qkv.bias [96]", "attn.out.weight [32 32]", "attn.out.bias [32]",
			"norm2.weight [32]", "norm2.bias [32]", "mlp.0.weight [128 32]", "mlp.0.bias [128]",
			"mlp.1.weight [32 128]", "mlp.1.bias [32]"} {
			want = append(want, b+p)
		}
	}
	want = append(want, "final_norm.weight [32]", "final_norm.bias [32]", "final.weight [3 32]", "final.bias [3]")
	var got []string
	for _, p := range m.Params() {
		got = append(got, fmt.Sprint(p.Name, " ", p.V.Shape()))
	}
	if !slices.Equal(got, want) {
		t.Errorf("parameters\n%q\nwant\n%q", got, want)
	}
}

// TestCondParams checks the names and shapes of the condition paths.
func TestCondParams(t *testing.T) {
	for _, tc := range []struct {
		classes, dim int
		want         []string
	}{
		{3, 0, []string{"y_embed.weight [4 8]"}},
		{0, 2, []string{"cond_embed.0.weight [8 2]", "cond_embed.0.bias [8]", "cond_embed.2.weight [8 8]",
			"cond_embed.2.bias [8]", "cond_null.weight [1 8]"}},
		{3, 2, []string{"y_embed.weight [4 8]", "cond_embed.0.weight [8 2]", "cond_embed.0.bias [8]",
			"cond_embed.2.weight [8 8]", "cond_embed.2.bias [8]", "cond_null.weight [1 8]"}},
	} {
		m, err := New(condConfig(tc.classes, tc.dim), tensor.NewRNG(1))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range m.Params() {
			if strings.HasPrefix(p.Name, "y_embed.") || strings.HasPrefix(p.Name, "cond_") {
				got = append(got, fmt.Sprint(p.Name, " ", p.V.Shape()))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("classes %d, dim %d: condition parameters %q, want %q", tc.classes, tc.dim, got, tc.want)
		}
	}
	if err := condConfig(-1, 0).Validate(); err == nil {
		t.Error("negative Classes accepted")
	}
	if err := condConfig(0, -2).Validate(); err == nil {
		t.Error("negative CondDim accepted")
	}
}

// TestCondStartsUnconditional checks that a conditional network starts
// as the unconditional one with the same seed: the same shared weights,
// and outputs equal bit for bit whatever the condition, on one tape and
// through the grouped no-grad path.
func TestCondStartsUnconditional(t *testing.T) {
	base, err := Preset("tiny", 3)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New(base, tensor.NewRNG(7))
	if err != nil {
		t.Fatal(err)
	}
	cc := base
	cc.Classes, cc.CondDim = 4, 2
	cond, err := New(cc, tensor.NewRNG(7))
	if err != nil {
		t.Fatal(err)
	}
	psd := nn.StateDict(plain)
	for name, v := range nn.StateDict(cond) {
		if w, ok := psd[name]; ok && tensor.MaxAbs(tensor.Sub(nil, v, w)) != 0 {
			t.Errorf("%s differs from the unconditional network's", name)
		}
	}
	const N = 16
	B := EvalTokens/N + 5 // more than one group
	r := tensor.NewRNG(2)
	x := tensor.RandN(r, tensor.Float32, B, N, 3)
	sc := autograd.NewConst(tensor.RandN(r, tensor.Float32, B, N, 3))
	ts := make([]float64, B)
	for i := range ts {
		ts[i] = 0.4
	}
	c := &Cond{Class: make([]int, B), Vec: make([]float64, 2*B), Drop: make([]bool, B)}
	for b := range B {
		c.Class[b] = b%5 - 1
		c.Vec[2*b], c.Vec[2*b+1] = float64(b)/10, -1
		c.Drop[b] = b%3 == 0
	}
	for _, rec := range []bool{false, true} {
		tp := autograd.NoGrad()
		if rec {
			tp = autograd.NewTape()
		}
		want := plain.Forward(tp, autograd.NewConst(x), ts, nil, sc).Value.Clone()
		for _, cd := range []*Cond{nil, c} {
			got := cond.ForwardCond(tp, autograd.NewConst(x), ts, nil, sc, cd).Value
			if d := tensor.MaxAbs(tensor.Sub(nil, got, want)); d != 0 {
				t.Errorf("recording %v, condition %v: output differs from the unconditional network's by %g", rec, cd != nil, d)
			}
		}
		tp.Release()
	}
}

// TestCondGradients checks the gradients of every parameter of a
// conditional DiT, the condition paths included, against finite
// differences, with classes, the null class, vectors and dropped vectors
// in one batch.
func TestCondGradients(t *testing.T) {
	for _, tc := range []struct {
		name         string
		classes, dim int
		cond         *Cond
	}{
		{"classes", 3, 0, &Cond{Class: []int{2, -1}}},
		{"vector", 0, 2, &Cond{Vec: []float64{0.5, -1.2, 9, 9}, Drop: []bool{false, true}}},
		{"both", 3, 2, &Cond{Class: []int{-1, 1}, Vec: []float64{0.3, 0.7, -0.4, 1.1}}},
		{"null", 3, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(condConfig(tc.classes, tc.dim), tensor.NewRNG(9), nn.WithDType(tensor.Float64))
			if err != nil {
				t.Fatal(err)
			}
			randomizeCond(m, 4)
			r := tensor.NewRNG(5)
			x := tensor.RandN(r, tensor.Float64, 2, 4, 3)
			sc := tensor.RandN(r, tensor.Float64, 2, 4, 3)
			mask := tensor.FromFloat64([]float64{1, 1, 1, 0, 1, 1, 1, 1}, 2, 4)
			var params []*autograd.Var
			for _, p := range m.Params() {
				params = append(params, p.V)
			}
			err = autograd.CheckGrad(func(tp *autograd.Tape) *autograd.Var {
				return m.ForwardCond(tp, autograd.NewConst(x), []float64{0.2, 0.8}, mask, autograd.NewConst(sc), tc.cond)
			}, params, 1e-6, 1e-5)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCondEquivarianceAndMasking checks a conditional network with
// trained-looking (random) condition paths: permuting a set's tokens
// permutes its output, padding and the other sets of the batch change
// nothing, each set's output depends on its own condition only, and the
// null condition is the same whether given as nil, class -1 or a dropped
// vector.
func TestCondEquivarianceAndMasking(t *testing.T) {
	m, err := New(condConfig(3, 2), tensor.NewRNG(11), nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	randomizeCond(m, 12)
	r := tensor.NewRNG(3)
	const n, pad, d = 5, 3, 3
	x := tensor.RandN(r, tensor.Float64, 1, n, d)
	sc := tensor.RandN(r, tensor.Float64, 1, n, d)
	ts := []float64{0.37}
	one := &Cond{Class: []int{1}, Vec: []float64{0.4, -0.9}}
	tp := autograd.NoGrad()
	defer tp.Release()
	fwd := func(x, sc *tensor.Tensor, ts []float64, mask *tensor.Tensor, c *Cond) *tensor.Tensor {
		return m.ForwardCond(tp, autograd.NewConst(x), ts, mask, autograd.NewConst(sc), c).Value
	}
	base := fwd(x, sc, ts, nil, one)
	near := func(a, b float64) bool { return a-b <= 1e-10 && b-a <= 1e-10 }

	perm := []int{3, 0, 4, 1, 2}
	xp, scp := tensor.New(tensor.Float64, 1, n, d), tensor.New(tensor.Float64, 1, n, d)
	for i, p := range perm {
		for k := range d {
			xp.Set(x.At(0, p, k), 0, i, k)
			scp.Set(sc.At(0, p, k), 0, i, k)
		}
	}
	outp := fwd(xp, scp, ts, nil, one)
	for i, p := range perm {
		for k := range d {
			if !near(outp.At(0, i, k), base.At(0, p, k)) {
				t.Fatalf("not equivariant at token %d: %v vs %v", i, outp.At(0, i, k), base.At(0, p, k))
			}
		}
	}

	// Padded, next to a second set with another condition.
	xb, scb := tensor.RandN(r, tensor.Float64, 2, n+pad, d), tensor.RandN(r, tensor.Float64, 2, n+pad, d)
	mask := tensor.New(tensor.Float64, 2, n+pad)
	for i := range n {
		for k := range d {
			xb.Set(x.At(0, i, k), 0, i, k)
			scb.Set(sc.At(0, i, k), 0, i, k)
		}
		mask.Set(1, 0, i)
	}
	mask.Set(1, 1, 0)
	two := &Cond{Class: []int{1, 2}, Vec: []float64{0.4, -0.9, 3, 3}, Drop: []bool{false, true}}
	outb := fwd(xb, scb, []float64{0.37, 0.9}, mask, two)
	for i := range n + pad {
		for k := range d {
			want := 0.0
			if i < n {
				want = base.At(0, i, k)
			}
			if got := outb.At(0, i, k); !near(got, want) {
				t.Fatalf("token %d dim %d: got %v want %v", i, k, got, want)
			}
		}
	}

	// Each part of the condition matters.
	for name, c := range map[string]*Cond{
		"class":   {Class: []int{2}, Vec: []float64{0.4, -0.9}},
		"vector":  {Class: []int{1}, Vec: []float64{0.4, 0.9}},
		"dropped": {Class: []int{1}, Vec: []float64{0.4, -0.9}, Drop: []bool{true}},
	} {
		if tensor.MaxAbs(tensor.Sub(nil, fwd(x, sc, ts, nil, c), base)) < 1e-6 {
			t.Errorf("changing the %s changed nothing", name)
		}
	}
	// The null condition, three ways.
	null := fwd(x, sc, ts, nil, nil)
	for name, c := range map[string]*Cond{
		"empty":            {},
		"class -1 no vec":  {Class: []int{-1}},
		"class -1 dropped": {Class: []int{-1}, Vec: []float64{5, 5}, Drop: []bool{true}},
	} {
		if d := tensor.MaxAbs(tensor.Sub(nil, fwd(x, sc, ts, nil, c), null)); d != 0 {
			t.Errorf("%s: differs from the nil condition by %g", name, d)
		}
	}
}

// TestCondForwardGroups checks that the grouped no-grad forward pass of a
// conditional network slices each set's condition with it: the result
// equals one recording pass bit for bit.
func TestCondForwardGroups(t *testing.T) {
	cfg, err := Preset("tiny", 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Classes, cfg.CondDim = 3, 2
	m, err := New(cfg, tensor.NewRNG(7))
	if err != nil {
		t.Fatal(err)
	}
	randomizeCond(m, 8)
	const N = 32
	B := 2*EvalTokens/N + 3
	r := tensor.NewRNG(1)
	x := tensor.RandN(r, tensor.Float32, B, N, 3)
	sc := autograd.NewConst(tensor.RandN(r, tensor.Float32, B, N, 3))
	ts := make([]float64, B)
	c := &Cond{Class: make([]int, B), Vec: make([]float64, 2*B), Drop: make([]bool, B)}
	for b := range B {
		ts[b] = 0.5
		c.Class[b] = b%4 - 1
		c.Vec[2*b], c.Vec[2*b+1] = r.Normal(), r.Normal()
		c.Drop[b] = b%5 == 0
	}
	rec := autograd.NewTape()
	want := m.ForwardCond(rec, autograd.NewConst(x), ts, nil, sc, c).Value
	ng := autograd.NoGrad()
	got := m.ForwardCond(ng, autograd.NewConst(x), ts, nil, sc, c).Value
	if d := tensor.MaxAbs(tensor.Sub(nil, got, want)); d != 0 {
		t.Errorf("grouped pass differs from one pass by %g", d)
	}
	ng.Release()
	rec.Release()
}

// TestCondPanics checks that conditions that do not fit the network or
// the batch are programmer errors (panics) with a message.
func TestCondPanics(t *testing.T) {
	cond, err := New(condConfig(3, 2), tensor.NewRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New(condConfig(0, 0), tensor.NewRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	x := autograd.NewConst(tensor.New(tensor.Float32, 2, 3, 3))
	for _, tc := range []struct {
		name string
		m    *Model
		c    *Cond
		want string
	}{
		{"unconditional", plain, &Cond{}, "unconditional"},
		{"class too large", cond, &Cond{Class: []int{0, 3}}, "outside"},
		{"class below -1", cond, &Cond{Class: []int{-2, 0}}, "outside"},
		{"classes length", cond, &Cond{Class: []int{0}}, "classes for a batch"},
		{"vector length", cond, &Cond{Vec: []float64{1, 2, 3}}, "vector values"},
		{"drop length", cond, &Cond{Vec: []float64{1, 2, 3, 4}, Drop: []bool{true}}, "drop flags"},
	} {
		func() {
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.Contains(s, tc.want) {
					t.Errorf("%s: panic %v, want one mentioning %q", tc.name, p, tc.want)
				}
			}()
			tp := autograd.NoGrad()
			defer tp.Release()
			tc.m.ForwardCond(tp, x, []float64{0.1, 0.2}, nil, nil, tc.c)
		}()
	}
	// Classes only: a vector is an error; vector only: classes are.
	classes, _ := New(condConfig(3, 0), tensor.NewRNG(1))
	vector, _ := New(condConfig(0, 2), tensor.NewRNG(1))
	for _, tc := range []struct {
		m *Model
		c *Cond
	}{{classes, &Cond{Vec: []float64{1, 2, 3, 4}}}, {vector, &Cond{Class: []int{0, 0}}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("condition %+v accepted by a network with Classes %d, CondDim %d", tc.c, tc.m.Cfg.Classes, tc.m.Cfg.CondDim)
				}
			}()
			tp := autograd.NoGrad()
			defer tp.Release()
			tc.m.ForwardCond(tp, x, []float64{0.1, 0.2}, nil, nil, tc.c)
		}()
	}
}
