package tensor

import (
	"math"
	"testing"
)

// The CPU's fused DiT ops must round exactly as the unfused ops they
// replace, so that the DiT's CPU results do not change.

func exactly(t *testing.T, what string, got, want *Tensor) {
	t.Helper()
	g, w := got.Float64s(), want.Float64s()
	if len(g) != len(w) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(w))
	}
	bad := 0
	for i := range w {
		if g[i] != w[i] && !(math.IsNaN(g[i]) && math.IsNaN(w[i])) {
			if bad < 3 {
				t.Errorf("%s: element %d = %.17g, want %.17g", what, i, g[i], w[i])
			}
			bad++
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(w))
	}
}

func TestFusedDiTMatchesUnfused(t *testing.T) {
	r := NewRNG(5)
	for _, dt := range []DType{Float32, Float64} {
		for _, sh := range [][3]int{{3, 5, 7}, {16, 64, 128}} {
			g, n, d := sh[0], sh[1], sh[2]
			x := FillUniform(New(dt, g, n, d), r, -2, 3)
			gy := FillUniform(New(dt, g, n, d), r, -1, 1)
			gamma, beta := FillUniform(New(dt, d), r, 0.5, 1.5), FillUniform(New(dt, d), r, -1, 1)
			shift := FillUniform(New(dt, g, 3*d), r, -1, 1).Slice(1, 0, d)
			scale := FillUniform(New(dt, g, 3*d), r, -1, 1).Slice(1, d, 2*d)
			sh3, sc3 := shift.Contiguous().Reshape(g, 1, d), scale.Contiguous().Reshape(g, 1, d)

			// LayerNorm + modulate.
			mean, rstd := New(dt, g, n), New(dt, g, n)
			u := LayerNorm(nil, mean, rstd, x, gamma, beta, 1e-5)
			want := Add(nil, Add(nil, u, Mul(nil, u, sc3)), sh3)
			fm, fr := New(dt, g, n), New(dt, g, n)
			exactly(t, "LayerNormModulate", LayerNormModulate(nil, fm, fr, x, gamma, beta, shift, scale, 1e-5), want)
			exactly(t, "LayerNormModulate mean", fm, mean)
			exactly(t, "LayerNormModulate rstd", fr, rstd)

			// Its backward, as autograd composes it.
			gu := Add(nil, gy, Mul(nil, gy, sc3))
			wsh, wsc := New(dt, g, 1, d), New(dt, g, 1, d)
			SumTo(wsh, gy)
			SumTo(wsc, Mul(nil, gy, u))
			wdg, wdb := New(dt, d), New(dt, d)
			wdx := LayerNormBackward(nil, wdg, wdb, gu, x, mean, rstd, gamma)
			dg, db, dsh, dsc := New(dt, d), New(dt, d), New(dt, g, d), New(dt, g, d)
			dx := LayerNormModulateBackward(nil, dg, db, dsh, dsc, gy, x, mean, rstd, gamma, beta, scale)
			exactly(t, "LayerNormModulateBackward dx", dx, wdx)
			exactly(t, "LayerNormModulateBackward dshift", dsh, wsh.Reshape(g, d))
			exactly(t, "LayerNormModulateBackward dscale", dsc, wsc.Reshape(g, d))
			checkClose(t, "LayerNormModulateBackward dgamma", dg, wdg, 1e-6)
			checkClose(t, "LayerNormModulateBackward dbeta", db, wdb, 1e-6)

			// Gated residual.
			h := FillUniform(New(dt, g, n, d), r, -2, 2)
			exactly(t, "GateResidual", GateResidual(nil, x, scale, h), Add(nil, x, Mul(nil, sc3, h)))
			dh, dgate := New(dt, g, n, d), New(dt, g, d)
			GateResidualBackward(dh, dgate, gy, h, scale)
			exactly(t, "GateResidualBackward dh", dh, Mul(nil, gy, sc3))
			wg := New(dt, g, 1, d)
			SumTo(wg, Mul(nil, gy, h))
			exactly(t, "GateResidualBackward dgate", dgate, wg.Reshape(g, d))

			// Bias + GELU.
			pre := Add(nil, x, gamma)
			exactly(t, "BiasGELU", BiasGELU(nil, x, gamma), GELU(nil, pre))
			exactly(t, "BiasGELU no bias", BiasGELU(nil, x, nil), GELU(nil, x))
			wdx = GELUGrad(nil, pre, gy)
			db = New(dt, d)
			exactly(t, "BiasGELUBackward", BiasGELUBackward(nil, db, gy, x, gamma), wdx)
			wdb = New(dt, 1, d)
			SumTo(wdb, wdx.Reshape(g*n, d))
			checkClose(t, "BiasGELUBackward dbias", db, wdb.Reshape(d), 1e-6)
			exactly(t, "BiasGELUBackward no bias", BiasGELUBackward(nil, nil, gy, x, nil), GELUGrad(nil, x, gy))
		}
	}
}

// checkClose fails unless got is within rtol of want (relative to the
// largest |want|).
func checkClose(t *testing.T, what string, got, want *Tensor, rtol float64) {
	t.Helper()
	g, w := got.Float64s(), want.Float64s()
	scale := 0.0
	for _, v := range w {
		scale = max(scale, math.Abs(v))
	}
	for i := range w {
		if math.Abs(g[i]-w[i]) > rtol*scale {
			t.Errorf("%s: element %d = %.17g, want %.17g", what, i, g[i], w[i])
			return
		}
	}
}

func TestFlashAttentionMatchesAttention(t *testing.T) {
	r := NewRNG(6)
	for _, dt := range []DType{Float32, Float64} {
		b, n, h, dh := 4, 64, 4, 32
		q := FillUniform(New(dt, b, n, h, dh), r, -1, 1).Permute(0, 2, 1, 3)
		k := FillUniform(New(dt, b, n, h, dh), r, -1, 1).Permute(0, 2, 1, 3)
		v := FillUniform(New(dt, b, n, h, dh), r, -1, 1).Permute(0, 2, 1, 3)
		gout := FillUniform(New(dt, b, h, n, dh), r, -1, 1)
		mask := Full(dt, 1, b, n)
		for j := 40; j < n; j++ {
			mask.Set(0, 1, j)
		}
		mask.Slice(0, 2, 3).Fill(0)
		scale := 1 / math.Sqrt(float64(dh))
		probs := New(dt, b, h, n, n)
		want := Attention(nil, probs, q, k, v, mask, scale)
		lse := New(dt, b, h, n)
		got := FlashAttention(nil, lse, q, k, v, mask, scale)
		exactly(t, "FlashAttention out", got, want)
		// lse against a float64 log-sum-exp of the scores.
		s := Gemm(nil, scale, q.Contiguous().Reshape(b*h, n, dh), k.Contiguous().Reshape(b*h, n, dh), false, true, 0).Float64s()
		l := lse.Float64s()
		mk := mask.Float64s()
		for bh := range b * h {
			for i := range n {
				acc := 0.0
				for j := range n {
					if mk[(bh/h)*n+j] != 0 {
						acc += math.Exp(s[(bh*n+i)*n+j])
					}
				}
				w := math.Log(acc)
				if got := l[bh*n+i]; !(got == w || math.Abs(got-w) <= 1e-5*max(1, math.Abs(w))) {
					t.Fatalf("%v lse[%d, %d] = %v, want %v", dt, bh, i, got, w)
				}
			}
		}
		dq, dk, dv := New(dt, b, h, n, dh), New(dt, b, h, n, dh), New(dt, b, h, n, dh)
		AttentionBackward(dq, dk, dv, gout, q, k, v, probs, scale)
		fq, fk, fv := New(dt, b, h, n, dh), New(dt, b, h, n, dh), New(dt, b, h, n, dh)
		FlashAttentionBackward(fq, fk, fv, gout, q, k, v, got, lse, mask, scale)
		exactly(t, "FlashAttentionBackward dq", fq, dq)
		exactly(t, "FlashAttentionBackward dk", fk, dk)
		exactly(t, "FlashAttentionBackward dv", fv, dv)
	}
}
