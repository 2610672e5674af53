package autograd

import (
	"math"
	"testing"

	"lgflow/tensor"
)

// Gradient checks of the DiT's fused ops and of attention through
// tensor.FlashAttention.
func TestCheckGradDiTOps(t *testing.T) {
	cases := []struct {
		name  string
		build func(r *tensor.RNG) ([]*Var, func(*Tape) *Var)
	}{
		{"LayerNormModulate", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			x, g, b := randParam(r, 2, 3, 4), posParam(r, 4), randParam(r, 4)
			mod := randParam(r, 2, 1, 8) // shift and scale as slices, as in the DiT
			return []*Var{x, g, b, mod}, func(tp *Tape) *Var {
				p := tp.Split(mod, 2, 4, 4)
				return tp.LayerNormModulate(x, g, b, p[0], p[1], 1e-5)
			}
		}},
		{"LayerNormModulatePlain", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			x, sh, sc := randParam(r, 3, 2, 5), randParam(r, 3, 5), randParam(r, 3, 5)
			return []*Var{x, sh, sc}, func(tp *Tape) *Var { return tp.LayerNormModulate(x, nil, nil, sh, sc, 1e-5) }
		}},
		{"GateResidual", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			x, h, gate := randParam(r, 2, 3, 4), randParam(r, 2, 3, 4), randParam(r, 2, 1, 4)
			return []*Var{x, h, gate}, func(tp *Tape) *Var { return tp.GateResidual(x, gate, h) }
		}},
		{"BiasGELU", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			x, b := awayParam(r, 2, 3, 4), randParam(r, 4)
			return []*Var{x, b}, func(tp *Tape) *Var { return tp.BiasGELU(x, b) }
		}},
		// Key padding with a set whose keys are all masked (output and
		// gradients 0 there).
		{"FlashAttention", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
			q, k, v := randParam(r, 3, 2, 4, 3), randParam(r, 3, 2, 4, 3), randParam(r, 3, 2, 4, 3)
			mask := f64([]float64{1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0}, 3, 4)
			return []*Var{q, k, v}, func(tp *Tape) *Var { return tp.Attention(q, k, v, mask, KeyPadding, 0.7) }
		}},
	}
	flashCPUTraining = true
	defer func() { flashCPUTraining = false }()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			params, f := c.build(tensor.NewRNG(43))
			if err := CheckGrad(f, params, 1e-6, 1e-6); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFlashAttentionPath checks that key-padding attention takes the
// FlashAttention path when it fits, keeps no probabilities, and gives the
// same values and gradients, bit for bit on the CPU, as the
// probabilities path; a set whose keys are all masked gets output and
// gradients 0.
func TestFlashAttentionPath(t *testing.T) {
	r := tensor.NewRNG(9)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		b, h, n, dh := 3, 2, 20, 8
		mk := func() *tensor.Tensor { return tensor.FillUniform(tensor.New(dt, b, n, h, dh), r, -1, 1) }
		q0, k0, v0 := mk(), mk(), mk()
		mask := tensor.Full(dt, 1, b, n)
		for j := 13; j < n; j++ {
			mask.Set(0, 1, j)
		}
		mask.Slice(0, 2, 3).Fill(0)
		gy := tensor.FillUniform(tensor.New(dt, b, h, n, dh), r, -1, 1)
		run := func(flash bool) (y, dq, dk, dv *tensor.Tensor, s *attentionSaved) {
			useFlashAttention, flashCPUTraining = flash, flash
			defer func() { useFlashAttention, flashCPUTraining = true, false }()
			tp := NewTape()
			defer tp.Release()
			q, k, v := NewParam(q0.Clone()), NewParam(k0.Clone()), NewParam(v0.Clone())
			perm := func(x *Var) *Var { return tp.Permute(x, 0, 2, 1, 3) }
			out := tp.Attention(perm(q), perm(k), perm(v), mask, KeyPadding, 1/math.Sqrt(float64(dh)))
			sl := savedSlabOf(tp, attentionKind)
			s = new(attentionSaved)
			*s = sl.chunks[0][0] // the tape's only attention
			tp.BackwardWith(out, gy)
			return out.Value.Clone(), q.Grad, k.Grad, v.Grad, s
		}
		y1, dq1, dk1, dv1, s1 := run(true)
		y0, dq0, dk0, dv0, s0 := run(false)
		if !s1.flash || s1.probs != nil || s0.flash || s0.probs == nil {
			t.Fatalf("%v: flash path %v (probs kept %v), probabilities path flash %v", dt, s1.flash, s1.probs != nil, s0.flash)
		}
		for _, c := range []struct {
			what      string
			got, want *tensor.Tensor
		}{{"out", y1, y0}, {"dq", dq1, dq0}, {"dk", dk1, dk0}, {"dv", dv1, dv0}} {
			g, w := c.got.Float64s(), c.want.Float64s()
			for i := range w {
				if g[i] != w[i] {
					t.Fatalf("%v %s[%d] = %v, probabilities path %v", dt, c.what, i, g[i], w[i])
				}
			}
		}
		// Set 2 has every key masked.
		for _, x := range []*tensor.Tensor{y1.Slice(0, 2, 3), dq1.Slice(0, 2, 3), dk1.Slice(0, 2, 3), dv1.Slice(0, 2, 3)} {
			if m := tensor.MaxAbs(x); m != 0 {
				t.Fatalf("%v: all-masked set has |value| up to %v, want 0", dt, m)
			}
		}
	}
}

func TestTakeFlash(t *testing.T) {
	big := flashDeviceMinBytes
	cases := []struct {
		name         string
		device, grad bool
		probBytes    int
		cpuTraining  bool
		want         bool
	}{
		{"cpu sampling", false, false, 1 << 20, false, true},
		{"cpu training keeps the probabilities", false, true, 1 << 20, false, false},
		{"cpu training with flashCPUTraining", false, true, 1 << 20, true, true},
		{"gpu training at DiT-T size", true, true, 256 * 6 * 64 * 64 * 4, false, false},
		{"gpu sampling at DiT-T size", true, false, 256 * 6 * 64 * 64 * 4, false, false},
		{"gpu, probabilities just under the limit", true, true, big - 1, false, false},
		{"gpu, probabilities at the limit", true, true, big, false, true},
		{"gpu sampling, large probabilities", true, false, 4 * big, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flashCPUTraining = c.cpuTraining
			defer func() { flashCPUTraining = false }()
			if got := takeFlash(c.device, c.grad, c.probBytes); got != c.want {
				t.Errorf("takeFlash(device %v, grad %v, %d bytes) = %v, want %v", c.device, c.grad, c.probBytes, got, c.want)
			}
		})
	}
}
