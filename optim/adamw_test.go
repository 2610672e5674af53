package optim

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"lgflow/tensor"
)

// refAdamW is the PyTorch AdamW update written out in float64, one
// element at a time (the formula of the AdamW doc comment).
type refAdamW struct {
	lr, b1, b2, eps, wd float64
	m, v                []float64
	t                   int
}

func (r *refAdamW) step(p, g []float64, decay bool) {
	if r.m == nil {
		r.m, r.v = make([]float64, len(p)), make([]float64, len(p))
	}
	r.t++
	bc1 := 1 - math.Pow(r.b1, float64(r.t))
	bc2 := 1 - math.Pow(r.b2, float64(r.t))
	for i := range p {
		if decay {
			p[i] *= 1 - r.lr*r.wd
		}
		r.m[i] = r.b1*r.m[i] + (1-r.b1)*g[i]
		r.v[i] = r.b2*r.v[i] + (1-r.b2)*g[i]*g[i]
		p[i] -= r.lr * (r.m[i] / bc1) / (math.Sqrt(r.v[i]/bc2) + r.eps)
	}
}

func TestAdamWHandComputed(t *testing.T) {
	// p0 = 1, lr 0.1, wd 0.01, betas (0.9, 0.95), eps 1e-8, grads 0.5,
	// -0.25, 2; values from the formula in float64 (Python):
	want := []float64{0.899000002, 0.8712640578738273, 0.8047594376347552}
	grads := []float64{0.5, -0.25, 2}
	cfg := AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.01}
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		p := Param{Name: "p", Value: tensor.Scalar(dt, 1), Grad: tensor.Scalar(dt, 0), Decay: true}
		opt, err := NewAdamW([]Param{p}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-15
		if dt == tensor.Float32 {
			tol = 2e-7
		}
		for i, g := range grads {
			p.Grad.Fill(g)
			opt.Step()
			if got := p.Value.Item(); math.Abs(got-want[i]) > tol*math.Abs(want[i]) {
				t.Errorf("%v step %d: p = %.17g, want %.17g", dt, i+1, got, want[i])
			}
		}
		if opt.Steps("p") != 3 {
			t.Errorf("Steps = %d", opt.Steps("p"))
		}
	}
}

func TestAdamWAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := AdamWConfig{LR: 3e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		shapes := [][]int{{4, 3}, {5}, {2, 2, 3}}
		var params []Param
		refs := make([]*refAdamW, len(shapes))
		refP := make([][]float64, len(shapes))
		for i, sh := range shapes {
			v := tensor.New(dt, sh...)
			refP[i] = make([]float64, v.Size())
			for j := range refP[i] {
				refP[i][j] = rng.NormFloat64()
			}
			setAll(v, refP[i])
			refP[i] = getAll(v) // rounded to dt
			params = append(params, Param{Name: []string{"w", "b", "x"}[i], Value: v, Grad: v.NewLike(), Decay: DefaultDecay("", sh)})
			refs[i] = &refAdamW{lr: cfg.LR, b1: cfg.Beta1, b2: cfg.Beta2, eps: cfg.Eps, wd: cfg.WeightDecay}
		}
		opt, err := NewAdamW(params, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 20; step++ {
			for i, p := range params {
				g := make([]float64, p.Value.Size())
				for j := range g {
					g[j] = rng.NormFloat64() * 0.1
				}
				setAll(p.Grad, g)
				refs[i].step(refP[i], getAll(p.Grad), p.Decay)
			}
			opt.Step()
		}
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		for i, p := range params {
			got := getAll(p.Value)
			for j := range got {
				if d := math.Abs(got[j] - refP[i][j]); d > tol*(1+math.Abs(refP[i][j])) {
					t.Fatalf("%v %s[%d] = %.10g, reference %.10g", dt, p.Name, j, got[j], refP[i][j])
				}
			}
		}
	}
}

func TestAdamWNoDecayAndNilGrad(t *testing.T) {
	cfg := AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.5}
	a := Param{Name: "a", Value: tensor.Scalar(tensor.Float64, 1), Grad: tensor.Scalar(tensor.Float64, 0.5)}
	b := Param{Name: "b", Value: tensor.Scalar(tensor.Float64, 1), Decay: true} // no grad
	opt, err := NewAdamW([]Param{a, b}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	opt.Step()
	// No decay: p = 1 - 0.1*0.5/(0.5+1e-8).
	if got, want := a.Value.Item(), 1-0.1*0.5/(0.5+1e-8); got != want {
		t.Errorf("a = %.17g, want %.17g", got, want)
	}
	if b.Value.Item() != 1 || opt.Steps("b") != 0 {
		t.Errorf("b without grad changed: %v, steps %d", b.Value.Item(), opt.Steps("b"))
	}
	opt.ZeroGrad()
	if a.Grad.Item() != 0 {
		t.Error("ZeroGrad left a gradient")
	}
}

func TestAdamWResume(t *testing.T) {
	cfg := DefaultAdamWConfig()
	cfg.LR = 1e-2
	mk := func() []Param {
		return []Param{
			{Name: "w", Value: tensor.FromFloat32([]float32{0.1, -0.2, 0.3, 0.4, 0.5, -0.6}, 2, 3), Grad: tensor.New(tensor.Float32, 2, 3), Decay: true},
			{Name: "b", Value: tensor.FromFloat32([]float32{1, 2, 3}, 3), Grad: tensor.New(tensor.Float32, 3)},
		}
	}
	grad := func(ps []Param, step int) {
		for _, p := range ps {
			d := p.Grad.Data32()
			for i := range d {
				d[i] = float32(math.Sin(float64(step*7+i)) * 0.3)
			}
		}
	}
	// Run A: 10 steps straight.
	pa := mk()
	oa, _ := NewAdamW(pa, cfg)
	for s := 1; s <= 10; s++ {
		grad(pa, s)
		oa.Step()
	}
	// Run B: 5 steps, "save", then a fresh optimiser on the saved values
	// loads the state and does 5 more.
	pb := mk()
	ob, _ := NewAdamW(pb, cfg)
	for s := 1; s <= 5; s++ {
		grad(pb, s)
		ob.Step()
	}
	saved := map[string]*tensor.Tensor{}
	for k, v := range ob.StateDict() {
		saved[k] = v.Clone()
	}
	pc := mk()
	for i := range pc {
		tensor.Copy(pc[i].Value, pb[i].Value)
	}
	oc, _ := NewAdamW(pc, cfg)
	if err := oc.LoadStateDict(saved); err != nil {
		t.Fatal(err)
	}
	for s := 6; s <= 10; s++ {
		grad(pc, s)
		oc.Step()
	}
	for i := range pa {
		a, c := pa[i].Value.Data32(), pc[i].Value.Data32()
		for j := range a {
			if a[j] != c[j] {
				t.Fatalf("%s[%d]: resumed %v, straight %v", pa[i].Name, j, c[j], a[j])
			}
		}
	}
	if got := oc.StateDict()["w.step"].Item(); got != 10 {
		t.Errorf("w.step = %v", got)
	}
}

func TestAdamWLoadStateDictErrors(t *testing.T) {
	p := Param{Name: "w", Value: tensor.New(tensor.Float32, 2, 2), Grad: tensor.New(tensor.Float32, 2, 2)}
	opt, _ := NewAdamW([]Param{p}, DefaultAdamWConfig())
	sd := map[string]*tensor.Tensor{
		"w.step":    tensor.Scalar(tensor.Float64, 2.5),
		"w.exp_avg": tensor.New(tensor.Float32, 4),
		"extra":     tensor.New(tensor.Float32, 1),
	}
	err := opt.LoadStateDict(sd)
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{`missing "w.exp_avg_sq"`, `"w.exp_avg" is float32 [4], want float32 [2 2]`, `unexpected "extra"`, `"w.step" must hold one non-negative integer`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if opt.Steps("w") != 0 {
		t.Error("failed load changed the state")
	}
}

func TestNewAdamWErrors(t *testing.T) {
	v := tensor.New(tensor.Float32, 1)
	bad := DefaultAdamWConfig()
	bad.Beta2 = 1
	nan := DefaultAdamWConfig()
	nan.LR = math.NaN()
	for name, c := range map[string]struct {
		ps   []Param
		cfg  AdamWConfig
		want string
	}{
		"beta2":      {[]Param{{Name: "a", Value: v}}, bad, "Beta2 = 1"},
		"lr NaN":     {[]Param{{Name: "a", Value: v}}, nan, "LR = NaN"},
		"empty name": {[]Param{{Value: v}}, DefaultAdamWConfig(), "empty name"},
		"duplicate":  {[]Param{{Name: "a", Value: v}, {Name: "a", Value: v}}, DefaultAdamWConfig(), `"a" appears twice`},
		"nil value":  {[]Param{{Name: "a"}}, DefaultAdamWConfig(), "nil Value"},
	} {
		if _, err := NewAdamW(c.ps, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}

func setAll(t *tensor.Tensor, v []float64) {
	if t.DType() == tensor.Float64 {
		copy(t.Data64(), v)
		return
	}
	d := t.Data32()
	for i := range d {
		d[i] = float32(v[i])
	}
}

func getAll(t *tensor.Tensor) []float64 {
	if t.DType() == tensor.Float64 {
		return append([]float64(nil), t.Data64()...)
	}
	out := make([]float64, t.Size())
	for i, x := range t.Data32() {
		out[i] = float64(x)
	}
	return out
}
