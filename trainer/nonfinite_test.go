package trainer_test

import (
	"math"
	"strings"
	"testing"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/optim"
	"lgflow/tensor"
	"lgflow/trainer"
)

// TestStepNonFinite takes one trainer.Step of a small MLP with a mean
// output as the loss: a finite step succeeds and moves the weights; a NaN
// loss (from a NaN output bias) or a NaN gradient (a NaN input, which the
// activation hides from the loss) is refused before any update; and a
// learning rate so large that the update itself overflows, from a finite
// loss and finite gradients, is reported naming the weight and the rate,
// so that a training loop stops before it can save the spoilt weights.
func TestStepNonFinite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   float64
		nanBias bool // NaN output bias
		lr      float64
		want    []string // substrings of the error; none: no error
		updated bool
	}{
		{"finite", 0.5, false, 1e-2, nil, true},
		{"NaN loss", 0.5, true, 1e-2, []string{"loss is NaN"}, false},
		{"NaN gradient", math.NaN(), false, 1e-2, []string{`gradient of "mlp.0.weight"`, "NaN"}, false},
		{"update overflows", 0.5, false, 1e300, []string{`the optimiser step made weight "mlp.`, "learning rate 1e+300 too large"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := nn.NewMLP(tensor.NewRNG(1), []int{3, 4, 2})
			mod := wrap{m}
			ps := trainer.OptimParams(mod)
			opt, err := optim.NewAdamW(ps, optim.AdamWConfig{LR: tc.lr, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8})
			if err != nil {
				t.Fatal(err)
			}
			if tc.nanBias {
				ps[len(ps)-1].Value.Fill(math.NaN())
			}
			before := nn.Fingerprint(mod)
			tp := autograd.NewTape()
			x := tensor.FromFloat64([]float64{tc.input, 1, -1, 0.25, 2, -0.5}, 2, 3).To(tensor.Float32)
			loss := tp.MeanAll(m.Forward(tp, autograd.NewConst(x)))
			v, err := trainer.Step(tp, loss, ps, opt, 0)
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("loss %v: error %v", v, err)
			}
			if len(tc.want) > 0 && err == nil {
				t.Fatalf("loss %v: no error", v)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if updated := nn.Fingerprint(mod) != before; updated != tc.updated {
				t.Errorf("weights updated: %v, want %v", updated, tc.updated)
			}
		})
	}
}

// wrap names an MLP's parameters "mlp.*".
type wrap struct{ m *nn.MLP }

func (w wrap) Params() []nn.Param { return nn.ParamsOf("mlp", w.m) }
