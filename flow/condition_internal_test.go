package flow

import (
	"math"
	"strings"
	"testing"

	"lgflow/autograd"
	"lgflow/dit"
	"lgflow/flow/cond"
	"lgflow/nn"
	"lgflow/tensor"
)

// condNet returns a small conditional denoiser (3 classes, a 2-vector)
// whose condition paths have random weights, as after training (they
// start at zero, where no condition changes anything).
func condNet(t *testing.T, dt tensor.DType) *dit.Model {
	t.Helper()
	cfg, err := dit.Preset("tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Classes, cfg.CondDim = 3, 2
	net, err := dit.New(cfg, tensor.NewRNG(3), nn.WithDType(dt))
	if err != nil {
		t.Fatal(err)
	}
	r := tensor.NewRNG(4)
	for _, p := range net.Params() {
		if strings.HasPrefix(p.Name, "y_embed.") || strings.HasPrefix(p.Name, "cond_") {
			tensor.FillNormal(p.V.Value, r, 0, 0.5)
		}
	}
	return net
}

// TestCondDropout checks the training conditions: over many draws the
// fraction of dropped graphs is CondDrop (a negative CondDrop drops none,
// 0 the default), a dropped graph gets the null class and a dropped
// vector together, a kept one its label and standardised properties, and
// the denoiser's output for a dropped graph is its output under the null
// condition.
func TestCondDropout(t *testing.T) {
	conds, err := cond.NewSet([]string{"b", "a", "b", "c"}, []string{"x", "y"},
		[][]float64{{1, 10}, {2, 20}, {3, 30}, {4, 40}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfgDrop, want float64
	}{{0, DefaultCondDrop}, {0.3, 0.3}, {-1, 0}} {
		p := Config{CondDrop: tc.cfgDrop}.condDrop()
		if p != tc.want {
			t.Errorf("CondDrop %g: drop probability %g, want %g", tc.cfgDrop, p, tc.want)
			continue
		}
		r := tensor.NewRNG(1)
		const draws = 20000
		idx := make([]int, draws)
		for i := range idx {
			idx[i] = i % 4
		}
		c := condBatch(conds, idx, p, r)
		dropped := 0
		for b, i := range idx {
			switch {
			case c.Drop[b] != (c.Class[b] == -1):
				t.Fatalf("graph %d: class %d with vector dropped %v: label and properties must drop together", b, c.Class[b], c.Drop[b])
			case c.Drop[b]:
				dropped++
			case c.Class[b] != conds.Labels[i]:
				t.Fatalf("graph %d: class %d, want %d", b, c.Class[b], conds.Labels[i])
			default:
				for k, prop := range conds.Schema.Properties {
					if want := (conds.Props[i][k] - prop.Mean) / prop.Std; c.Vec[2*b+k] != want {
						t.Fatalf("graph %d property %d: %g, want %g", b, k, c.Vec[2*b+k], want)
					}
				}
			}
		}
		frac := float64(dropped) / draws
		if sd := math.Sqrt(p * (1 - p) / draws); math.Abs(frac-p) > 4*sd+1e-12 {
			t.Errorf("CondDrop %g: dropped %.4f of %d, want %g ± %.4f", tc.cfgDrop, frac, draws, p, 4*sd)
		}
	}

	// A dropped graph's output is the null condition's; a kept one's is not.
	net := condNet(t, tensor.Float64)
	r := tensor.NewRNG(2)
	idx := []int{0, 1, 2, 3, 0, 1, 2, 3}
	c := condBatch(conds, idx, 0.5, r)
	x := tensor.RandN(r, tensor.Float64, len(idx), 5, 4)
	ts := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}
	tp := autograd.NoGrad()
	defer tp.Release()
	got := net.ForwardCond(tp, autograd.NewConst(x), ts, nil, nil, c).Value
	null := net.ForwardCond(tp, autograd.NewConst(x), ts, nil, nil, nil).Value
	kept := 0
	for b := range idx {
		d := tensor.MaxAbs(tensor.Sub(nil, got.Slice(0, b, b+1), null.Slice(0, b, b+1)))
		switch {
		case c.Drop[b] && d != 0:
			t.Errorf("graph %d dropped: output differs from the null condition's by %g", b, d)
		case !c.Drop[b] && d < 1e-6:
			t.Errorf("graph %d kept: output equals the null condition's", b)
		}
		if !c.Drop[b] {
			kept++
		}
	}
	if kept == 0 || kept == len(idx) {
		t.Fatalf("%d of %d kept: draw another seed", kept, len(idx))
	}
}

// TestGuidanceArithmetic checks classifier-free guidance on a denoiser
// with trained-looking condition paths: w = 0 gives the prediction under
// the null condition, w = 1 the one under the condition (one evaluation
// each), w = 2 and 0.5 uncond + w·(cond - uncond) from the two evaluations
// (batched in one pass, which gives each the bits of its own pass), and
// each prediction is handed back for its own self-conditioning.
func TestGuidanceArithmetic(t *testing.T) {
	net := condNet(t, tensor.Float32)
	schema := &cond.Schema{Labels: []string{"a", "b", "c"},
		Properties: []cond.Property{{Name: "x", Mean: 1, Std: 2, Min: -3, Max: 5}, {Name: "y", Std: 1, Min: -1, Max: 1}}}
	m := &Model{Net: net, Cond: schema}
	conds := []cond.Value{{Label: "c", Props: []float64{2, 0.5}}, {}, {Label: "a", Props: []float64{-3, -1}}}
	const B, N = 3, 6
	r := tensor.NewRNG(5)
	x := tensor.RandN(r, tensor.Float32, B, N, 4)
	sc := selfCond{cond: tensor.RandN(r, tensor.Float32, B, N, 4), uncond: tensor.RandN(r, tensor.Float32, B, N, 4)}
	mask := tokenMask(tensor.Float32, []int{6, 4, 5}, N)
	// Graph 1, sampled under the null condition, has the same
	// self-conditioning input in both branches, as in a sampler.
	tensor.Copy(sc.cond.Slice(0, 1, 2), sc.uncond.Slice(0, 1, 2))
	const tm = 0.6
	eval := func(xsc *tensor.Tensor, c *dit.Cond) *tensor.Tensor {
		tp := autograd.NoGrad()
		defer tp.Release()
		return net.ForwardCond(tp, autograd.NewConst(x), []float64{tm, tm, tm}, mask, autograd.NewConst(xsc), c).Value.Clone()
	}
	plan1, err := planConditions(m, conds, B, 1)
	if err != nil {
		t.Fatal(err)
	}
	dc := plan1.batch(0, B).cond
	if dc.Class[0] != 2 || dc.Class[1] != -1 || !dc.Drop[1] || dc.Drop[0] || dc.Vec[0] != 0.5 || dc.Vec[5] != -1 {
		t.Fatalf("encoded condition %+v", dc)
	}
	cond, uncond := eval(sc.cond, dc), eval(sc.uncond, nil)
	if tensor.MaxAbs(tensor.Sub(nil, cond, uncond)) < 1e-4 {
		t.Fatal("the condition changes nothing: nothing to test")
	}
	same := func(a, b *tensor.Tensor) bool { return tensor.MaxAbs(tensor.Sub(nil, a, b)) == 0 }
	for _, w := range []float64{0, 1, 2, 0.5} {
		plan, err := planConditions(m, conds, B, w)
		if err != nil {
			t.Fatal(err)
		}
		g := plan.batch(0, B)
		guided, pred := g.predict(net, false, x, tm, mask, sc)
		switch w {
		case 0:
			if !same(guided, uncond) || pred.uncond == nil || pred.cond != nil {
				t.Errorf("w = 0: not the prediction under the null condition")
			}
		case 1:
			if !same(guided, cond) || pred.cond == nil || pred.uncond != nil {
				t.Errorf("w = 1: not the prediction under the condition")
			}
		default:
			if !same(pred.cond, cond) || !same(pred.uncond, uncond) {
				t.Errorf("w = %g: the batched predictions differ from separate ones", w)
			}
			want := tensor.AddScaled(nil, uncond, tensor.Sub(nil, cond, uncond), w)
			if !same(guided, want) {
				t.Errorf("w = %g: guided prediction is not uncond + w·(cond - uncond)", w)
			}
			// The same in float64: (1-w)·uncond + w·cond.
			c64, u64, g64 := cond.Float64s(), uncond.Float64s(), guided.Float64s()
			for i := range g64 {
				if e := (1-w)*u64[i] + w*c64[i]; math.Abs(g64[i]-e) > 1e-5*(1+math.Abs(e)) {
					t.Fatalf("w = %g, element %d: %g, want %g", w, i, g64[i], e)
				}
			}
			// The null-condition graph is not moved by guidance.
			if !same(guided.Slice(0, 1, 2), uncond.Slice(0, 1, 2)) {
				t.Errorf("w = %g: guidance moved the graph sampled under the null condition", w)
			}
		}
	}
	// Without a condition: the null condition, one evaluation, whatever w.
	plan, err := planConditions(m, nil, B, 3)
	if err != nil || plan != nil {
		t.Fatalf("no condition: plan %v, error %v", plan, err)
	}
	if guided, _ := plan.batch(0, B).predict(net, false, x, tm, mask, sc); !same(guided, uncond) {
		t.Error("no condition: not the prediction under the null condition")
	}
}
