package tensor

// The diffusion transformer's fused ops on the fake backend (backend_test.go).

func (f fakeBackend) LayerNormModulate(y, mean, rstd, x, gamma, beta, shift, scale *Tensor, eps float64) {
	CPU.LayerNormModulate(h(y), h(mean), h(rstd), h(x), h(gamma), h(beta), h(shift), h(scale), eps)
}
func (f fakeBackend) LayerNormModulateBackward(dx, dgamma, dbeta, dshift, dscale, gy, x, mean, rstd, gamma, beta, scale *Tensor) {
	CPU.LayerNormModulateBackward(h(dx), h(dgamma), h(dbeta), h(dshift), h(dscale), h(gy), h(x), h(mean), h(rstd), h(gamma), h(beta), h(scale))
}
func (f fakeBackend) GateResidual(out, x, gate, hh *Tensor) {
	CPU.GateResidual(h(out), h(x), h(gate), h(hh))
}
func (f fakeBackend) GateResidualBackward(dh, dgate, gy, hh, gate *Tensor) {
	CPU.GateResidualBackward(h(dh), h(dgate), h(gy), h(hh), h(gate))
}
func (f fakeBackend) BiasGELU(y, x, bias *Tensor) { CPU.BiasGELU(h(y), h(x), h(bias)) }
func (f fakeBackend) BiasGELUBackward(dx, dbias, gy, x, bias *Tensor) {
	CPU.BiasGELUBackward(h(dx), h(dbias), h(gy), h(x), h(bias))
}
func (f fakeBackend) FlashAttention(out, lse, q, k, v, keyMask *Tensor, scale float64) {
	CPU.FlashAttention(h(out), h(lse), h(q), h(k), h(v), h(keyMask), scale)
}
func (f fakeBackend) FlashAttentionBackward(dq, dk, dv, gout, q, k, v, out, lse, keyMask *Tensor, scale float64) {
	CPU.FlashAttentionBackward(h(dq), h(dk), h(dv), h(gout), h(q), h(k), h(v), h(out), h(lse), h(keyMask), scale)
}

// The LG-VAE decoder's fused DeepSet (fused_deepset.go).

func (f fakeBackend) DeepSetScores(y, s, ctx, ws, bs, wo, bo *Tensor) {
	CPU.DeepSetScores(h(y), h(s), h(ctx), h(ws), h(bs), h(wo), h(bo))
}
func (f fakeBackend) DeepSetScoresBackward(ds, dctx, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo *Tensor) {
	CPU.DeepSetScoresBackward(h(ds), h(dctx), h(dws), h(dbs), h(dwo), h(dbo), h(gy), h(s), h(ctx), h(ws), h(bs), h(wo))
}
