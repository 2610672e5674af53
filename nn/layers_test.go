package nn

import (
	"math"
	"strings"
	"testing"

	"lgflow/autograd"
	"lgflow/tensor"
)

var f64 = WithDType(tensor.Float64)

func c64(data []float64, shape ...int) *autograd.Var {
	return autograd.NewConst(tensor.FromFloat64(data, shape...))
}

func assertClose(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol || math.IsNaN(got[i]) {
			t.Fatalf("%s: element %d = %.10g, want %.10g", name, i, got[i], want[i])
		}
	}
}

func values(v *autograd.Var) []float64 { return v.Value.Float64s() }

func setData(v *autograd.Var, data ...float64) {
	copy(v.Value.Data64(), data)
}

func TestLinearMLPEmbeddingValues(t *testing.T) {
	r := tensor.NewRNG(1)
	l := NewLinear(r, 2, 3, f64)
	setData(l.W, 1, 0, 0, 1, 1, 1)
	setData(l.B, 1, 2, 3)
	tp := autograd.NoGrad()
	defer tp.Release()
	assertClose(t, "Linear", values(l.Forward(tp, c64([]float64{1, 2, -1, 0}, 2, 2))), []float64{2, 4, 6, 0, 2, 2}, 0)

	m := NewMLP(r, []int{2, 2, 1}, f64)
	setData(m.Layers[0].W, 1, 0, 0, -1)
	setData(m.Layers[0].B, 0, 0)
	setData(m.Layers[1].W, 1, 1)
	setData(m.Layers[1].B, 0.5)
	// x = (2, 3): hidden ReLU(2, -3) = (2, 0) -> 2.5
	assertClose(t, "MLP", values(m.Forward(tp, c64([]float64{2, 3}, 1, 2))), []float64{2.5}, 0)

	e := NewEmbedding(r, 3, 2, f64)
	setData(e.W, 0, 1, 2, 3, 4, 5)
	assertClose(t, "Embedding", values(e.Forward(tp, []int32{2, 0, 2})), []float64{4, 5, 0, 1, 4, 5}, 0)

	l2 := NewLinear(r, 2, 2, f64, WithBias(false))
	if l2.B != nil || len(l2.Params()) != 1 {
		t.Fatal("WithBias(false) still made a bias")
	}
}

func TestInitialisation(t *testing.T) {
	r := tensor.NewRNG(2)
	l := NewLinear(r, 100, 200)
	bound := 1 / math.Sqrt(100)
	w := l.W.Value.Float64s()
	var sq float64
	for _, v := range w {
		if math.Abs(v) > bound {
			t.Fatalf("default init %v outside ±%v", v, bound)
		}
		sq += v * v
	}
	// Uniform(±b) has variance b²/3.
	if got, want := sq/float64(len(w)), bound*bound/3; math.Abs(got-want) > 0.1*want {
		t.Fatalf("default init variance %v, want %v", got, want)
	}
	n := NewLinear(r, 100, 200, WithNormalInit(0.02))
	sq = 0
	for _, v := range n.W.Value.Float64s() {
		sq += v * v
	}
	if std := math.Sqrt(sq / 20000); math.Abs(std-0.02) > 0.002 {
		t.Fatalf("normal init std %v, want 0.02", std)
	}
	for _, v := range n.B.Value.Float64s() {
		if v != 0 {
			t.Fatal("normal init bias not zero")
		}
	}
	// Same seed, same weights.
	a, b := NewLinear(tensor.NewRNG(7), 3, 4), NewLinear(tensor.NewRNG(7), 3, 4)
	assertClose(t, "seeded", a.W.Value.Float64s(), b.W.Value.Float64s(), 0)
}

func TestLayerNormValues(t *testing.T) {
	ln := NewLayerNorm(2, 1e-5, f64)
	setData(ln.Gamma, 2, 1)
	setData(ln.Beta, 0, 5)
	tp := autograd.NoGrad()
	defer tp.Release()
	s := 1 / math.Sqrt(1+1e-5)
	assertClose(t, "LayerNorm", values(ln.Forward(tp, c64([]float64{1, 3}, 1, 2))), []float64{-2 * s, 5 + s}, 1e-12)
	if len(NewLayerNorm(2, 1e-5, WithBias(false)).Params()) != 0 {
		t.Fatal("LayerNorm without affine has params")
	}
}

func TestBatchNormRunningStats(t *testing.T) {
	bn := NewBatchNorm1d(2, f64)
	x := c64([]float64{1, 10, 3, 10, 5, 10}, 3, 2) // channel 0: mean 3, var 8/3 (unbiased 4); channel 1 constant
	tp := autograd.NoGrad()
	defer tp.Release()
	y := bn.Forward(tp, x)
	s := 1 / math.Sqrt(8.0/3+1e-5)
	assertClose(t, "train output", values(y), []float64{-2 * s, 0, 0, 0, 2 * s, 0}, 1e-12)
	assertClose(t, "running mean", bn.RunningMean.Float64s(), []float64{0.3, 1}, 1e-12)
	assertClose(t, "running var", bn.RunningVar.Float64s(), []float64{0.9 + 0.4, 0.9}, 1e-12)

	bn.Train(false)
	y = bn.Forward(tp, c64([]float64{0.3, 1}, 1, 2))
	assertClose(t, "eval output", values(y), []float64{0, 0}, 1e-12)
	y = bn.Forward(tp, c64([]float64{1.3 + 0.3, 1}, 1, 2))
	assertClose(t, "eval output 2", values(y), []float64{1.3 / math.Sqrt(1.3+1e-5), 0}, 1e-12)

	// Batch statistics always: eval behaves like training, no buffers.
	bs := NewBatchNorm1d(2, f64, WithBatchStats())
	bs.Train(false)
	assertClose(t, "batch stats", values(bs.Forward(tp, x)), []float64{-2 * s, 0, 0, 0, 2 * s, 0}, 1e-12)
	if bs.Buffers() != nil || bs.RunningMean != nil {
		t.Fatal("WithBatchStats kept running statistics")
	}
}

func TestDropoutLayer(t *testing.T) {
	d := NewDropout(0.5, tensor.NewRNG(1))
	x := c64([]float64{1, 1, 1, 1, 1, 1, 1, 1}, 8)
	tp := autograd.NoGrad()
	defer tp.Release()
	y := values(d.Forward(tp, x))
	changed := false
	for _, v := range y {
		if v != 0 && v != 2 {
			t.Fatalf("dropout value %v", v)
		}
		changed = changed || v == 0
	}
	if !changed {
		t.Fatal("dropout dropped nothing out of 8 at p = 0.5 (seed 1)")
	}
	SetTrain(d, false)
	if d.Forward(tp, x) != x {
		t.Fatal("dropout in eval mode is not the identity")
	}
}

func TestParamNamesAndStateDict(t *testing.T) {
	r := tensor.NewRNG(3)
	d := NewDirGNN(r, 4, 5, EdgeSpec{Classes: 3})
	var names []string
	for _, p := range d.Params() {
		names = append(names, p.Name)
	}
	want := "conv_in.mlp.0.weight conv_in.mlp.0.bias conv_in.mlp.1.weight conv_in.mlp.1.bias conv_in.edge.weight " +
		"conv_out.mlp.0.weight conv_out.mlp.0.bias conv_out.mlp.1.weight conv_out.mlp.1.bias conv_out.edge.weight root.weight root.bias"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("names\n got %s\nwant %s", got, want)
	}
	// in·out+out + out·out+out for two MLPs, classes·in edge tables, root in·out+out.
	if got, want := NumParams(d), 2*(4*5+5+5*5+5+3*4)+4*5+5; got != want {
		t.Fatalf("NumParams %d, want %d", got, want)
	}

	// Round trip into a differently seeded model.
	sd := StateDict(d)
	d2 := NewDirGNN(tensor.NewRNG(99), 4, 5, EdgeSpec{Classes: 3})
	if err := LoadStateDict(d2, sd); err != nil {
		t.Fatal(err)
	}
	for _, p := range d2.Params() {
		assertClose(t, p.Name, p.V.Value.Float64s(), sd[p.Name].Float64s(), 0)
	}

	// Errors: missing, unexpected, shape and dtype, all reported, nothing copied.
	bad := map[string]*tensor.Tensor{}
	for k, v := range sd {
		bad[k] = v
	}
	delete(bad, "root.bias")
	bad["extra.weight"] = tensor.New(tensor.Float32, 1)
	bad["root.weight"] = tensor.New(tensor.Float32, 2, 2)
	bad["conv_in.edge.weight"] = tensor.New(tensor.Float64, 3, 4)
	before := d2.Root.W.Value.Clone()
	err := LoadStateDict(d2, bad)
	if err == nil {
		t.Fatal("LoadStateDict accepted a bad state dict")
	}
	for _, frag := range []string{`missing "root.bias"`, `unexpected "extra.weight"`, `"root.weight": shape [2 2]`, `"conv_in.edge.weight": dtype float64`} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q does not mention %q", err, frag)
		}
	}
	assertClose(t, "unchanged", d2.Root.W.Value.Float64s(), before.Float64s(), 0)

	// Buffers are in the state dict.
	bn := NewBatchNorm1d(3)
	sd = StateDict(bn)
	if _, ok := sd["running_var"]; !ok || len(sd) != 4 {
		t.Fatalf("BatchNorm state dict keys: %v", keys(sd))
	}
}

func keys(m map[string]*tensor.Tensor) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestZeroGrad(t *testing.T) {
	l := NewLinear(tensor.NewRNG(1), 2, 2, f64)
	tp := autograd.NewTape()
	tp.Backward(tp.SumAll(l.Forward(tp, c64([]float64{1, 2}, 1, 2))))
	tp.Release()
	if l.W.Grad == nil || l.W.Grad.Float64s()[1] != 2 {
		t.Fatalf("grad %v", l.W.Grad)
	}
	ZeroGrad(l)
	assertClose(t, "zeroed", l.W.Grad.Float64s(), []float64{0, 0, 0, 0}, 0)
}

func TestFingerprint(t *testing.T) {
	r := tensor.NewRNG(1)
	a := NewLinear(r, 3, 2)
	b := NewLinear(tensor.NewRNG(1), 3, 2)
	if Fingerprint(a) != Fingerprint(b) {
		t.Fatal("identical modules have different fingerprints")
	}
	if len(Fingerprint(a)) != 64 {
		t.Fatalf("fingerprint %q is not a hex SHA-256", Fingerprint(a))
	}
	b.W.Value.Data32()[4] += 1e-6
	if Fingerprint(a) == Fingerprint(b) {
		t.Error("a changed weight keeps the fingerprint")
	}
	c := NewLinear(tensor.NewRNG(1), 3, 2, WithDType(tensor.Float64))
	if Fingerprint(a) == Fingerprint(c) {
		t.Error("float32 and float64 modules share a fingerprint")
	}
}

// TestToBackendNoOp checks ToBackend where nothing moves: every module,
// BatchNorm included, is already on the CPU, and the values stay the same
// tensors. (Moving to a GPU is tested in package cuda.)
func TestToBackendNoOp(t *testing.T) {
	lin := NewLinear(tensor.NewRNG(1), 3, 2)
	w := lin.W.Value
	if err := ToBackend(lin, tensor.CPU); err != nil {
		t.Fatal(err)
	}
	if lin.W.Value != w {
		t.Error("ToBackend to the CPU replaced a CPU parameter")
	}
	if err := ToBackend(NewBatchNorm1d(4), tensor.CPU); err != nil {
		t.Errorf("BatchNorm to the CPU: %v", err)
	}
	if err := ToBackend(lin, nil); err == nil {
		t.Error("nil backend accepted")
	}
}

// tiedModule lists one Var under two names.
type tiedModule struct{ lin *Linear }

func (m tiedModule) Params() []Param {
	return []Param{{Name: "a", V: m.lin.W}, {Name: "b", V: m.lin.W}}
}

// TestFlatten checks that Flatten keeps every value and the forward and
// backward passes, packs parameters group by group into one storage with
// gradients laid out alike, is idempotent, and refuses a Var listed twice.
func TestFlatten(t *testing.T) {
	build := func() *MLP { return NewMLP(tensor.NewRNG(3), []int{4, 6, 5, 2}) }
	grads := func(m *MLP) map[string][]float64 {
		x := autograd.NewConst(tensor.FillUniform(tensor.New(tensor.Float32, 3, 4), tensor.NewRNG(4), -1, 1))
		tp := autograd.NewTape()
		tp.Backward(tp.SumAll(m.Forward(tp, x)))
		tp.Release()
		out := map[string][]float64{}
		for _, p := range m.Params() {
			out[p.Name] = p.V.Grad.Float64s()
		}
		return out
	}
	ref, flat := build(), build()
	want := grads(ref)
	byRank := func(name string, shape []int) int { return -len(shape) } // matrices first
	if err := Flatten(flat, byRank); err != nil {
		t.Fatal(err)
	}
	ps := flat.Params()
	st := ps[0].V.Value.Storage()
	gst := ps[0].V.Grad.Storage()
	for _, p := range ps {
		if p.V.Value.Storage() != st || p.V.Grad.Storage() != gst {
			t.Fatalf("%s is not in the flat storage", p.Name)
		}
		if p.V.Value.Offset() != p.V.Grad.Offset() {
			t.Errorf("%s: value at %d, gradient at %d", p.Name, p.V.Value.Offset(), p.V.Grad.Offset())
		}
		if m := tensor.MaxAbs(p.V.Grad); m != 0 {
			t.Errorf("%s: gradient not zeroed (%v)", p.Name, m)
		}
	}
	// Matrices (rank 2) come first, then the biases, each in Params order.
	wantOrder := []string{"0.weight", "1.weight", "2.weight", "0.bias", "1.bias", "2.bias"}
	off := 0
	for _, name := range wantOrder {
		for _, p := range ps {
			if p.Name == name {
				if p.V.Value.Offset() != off {
					t.Errorf("%s at offset %d, want %d", name, p.V.Value.Offset(), off)
				}
				off += p.V.Value.Size()
			}
		}
	}
	if off != st.Len() {
		t.Errorf("parameters cover %d of %d flat elements", off, st.Len())
	}
	got := grads(flat)
	for _, p := range ref.Params() {
		if !equalFloats(got[p.Name], want[p.Name]) {
			t.Errorf("%s: gradient changed by flattening", p.Name)
		}
	}
	for name, v := range StateDict(ref) {
		if !equalFloats(StateDict(flat)[name].Float64s(), v.Float64s()) {
			t.Errorf("%s: value changed by flattening", name)
		}
	}
	// Flattening again changes nothing.
	w := ps[0].V.Value
	if err := Flatten(flat, byRank); err != nil || flat.Params()[0].V.Value != w {
		t.Errorf("a second Flatten: err %v, moved the parameters %v", err, flat.Params()[0].V.Value != w)
	}
	lin := NewLinear(tensor.NewRNG(1), 3, 2)
	lw := lin.W.Value
	if err := Flatten(tiedModule{lin}, nil); err == nil || lin.W.Value != lw {
		t.Errorf("a Var listed twice: err %v, value replaced %v", err, lin.W.Value != lw)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
