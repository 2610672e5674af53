package tensor

import (
	"math"
	"testing"
)

// fakeStorage is memory of fakeBackend: CPU memory under another type, so
// that CPU kernels cannot touch it by accident.
type fakeStorage struct{ inner *cpuStorage }

func (s *fakeStorage) Backend() Backend { return fake }
func (s *fakeStorage) DType() DType     { return s.inner.dt }
func (s *fakeStorage) Len() int         { return s.inner.Len() }

// fakeBackend plays a GPU backend: it runs every kernel by viewing its
// storage as CPU memory and counts the calls.
type fakeBackend struct{ calls *int }

var fake = fakeBackend{calls: new(int)}

// h returns the CPU view of a fake tensor (nil stays nil).
func h(t *Tensor) *Tensor {
	if t == nil {
		return nil
	}
	fs := t.st.(*fakeStorage)
	return &Tensor{dtype: t.dtype, shape: t.shape, strides: t.strides, offset: t.offset, st: fs.inner}
}

func (f fakeBackend) Name() string { return "fake" }
func (f fakeBackend) Alloc(dt DType, n int) Storage {
	return &fakeStorage{inner: newCPUStorage(dt, n)}
}

// AllocUninit fills the storage with NaN, so that an op that leaves part of
// an EmptyOn result unwritten shows up in a comparison.
func (f fakeBackend) AllocUninit(dt DType, n int) Storage {
	s := newCPUStorage(dt, n)
	CPU.Fill(FromStorage(s, n), math.NaN())
	return &fakeStorage{inner: s}
}

// Release poisons the storage with NaN, as reuse by another tensor would.
func (f fakeBackend) Release(t *Tensor) {
	s := t.st.(*fakeStorage).inner
	CPU.Fill(FromStorage(s, s.Len()), math.NaN())
}
func (f fakeBackend) NonFinite(flag, a *Tensor)   { *f.calls++; CPU.NonFinite(h(flag), h(a)) }
func (f fakeBackend) Upload(dst, src *Tensor)     { *f.calls++; CPU.Copy(h(dst), src) }
func (f fakeBackend) Download(dst, src *Tensor)   { *f.calls++; CPU.Copy(dst, h(src)) }
func (f fakeBackend) Fill(dst *Tensor, v float64) { *f.calls++; CPU.Fill(h(dst), v) }
func (f fakeBackend) Copy(dst, src *Tensor)       { *f.calls++; CPU.Copy(h(dst), h(src)) }
func (f fakeBackend) Unary(op UnaryOp, dst, a *Tensor, p0, p1 float64) {
	*f.calls++
	CPU.Unary(op, h(dst), h(a), p0, p1)
}
func (f fakeBackend) Binary(op BinaryOp, dst, a, b *Tensor, alpha float64) {
	*f.calls++
	CPU.Binary(op, h(dst), h(a), h(b), alpha)
}
func (f fakeBackend) Where(dst, cond, a, b *Tensor) { CPU.Where(h(dst), h(cond), h(a), h(b)) }
func (f fakeBackend) MaskedFill(dst, a, mask *Tensor, v float64) {
	CPU.MaskedFill(h(dst), h(a), h(mask), v)
}
func (f fakeBackend) Reduce(op ReduceOp, dst, a *Tensor, axis int) {
	*f.calls++
	CPU.Reduce(op, h(dst), h(a), axis)
}
func (f fakeBackend) ReduceAll(op ReduceOp, a *Tensor) float64 { return CPU.ReduceAll(op, h(a)) }
func (f fakeBackend) Argmax(out []int32, a *Tensor, axis int)  { CPU.Argmax(out, h(a), axis) }
func (f fakeBackend) SumTo(dst, a *Tensor)                     { CPU.SumTo(h(dst), h(a)) }
func (f fakeBackend) Softmax(dst, a *Tensor, axis int, log bool) {
	CPU.Softmax(h(dst), h(a), axis, log)
}
func (f fakeBackend) Gemm(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, beta float64) {
	*f.calls++
	CPU.Gemm(h(dst), alpha, h(a), h(b), transA, transB, beta)
}
func (f fakeBackend) GemmBias(dst *Tensor, alpha float64, a, b *Tensor, transA, transB bool, bias *Tensor) {
	*f.calls++
	CPU.GemmBias(h(dst), alpha, h(a), h(b), transA, transB, h(bias))
}
func (f fakeBackend) IndexSelect(dst, a *Tensor, axis int, idx []int32) {
	CPU.IndexSelect(h(dst), h(a), axis, idx)
}
func (f fakeBackend) ScatterAdd(dst, src *Tensor, idx []int32) { CPU.ScatterAdd(h(dst), h(src), idx) }
func (f fakeBackend) SegmentSum(dst, src *Tensor, seg []int32, mean bool) {
	CPU.SegmentSum(h(dst), h(src), seg, mean)
}
func (f fakeBackend) LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float64) {
	CPU.LayerNorm(h(y), h(mean), h(rstd), h(x), h(gamma), h(beta), eps)
}
func (f fakeBackend) LayerNormBackward(dx, dgamma, dbeta, gy, x, mean, rstd, gamma *Tensor) {
	CPU.LayerNormBackward(h(dx), h(dgamma), h(dbeta), h(gy), h(x), h(mean), h(rstd), h(gamma))
}
func (f fakeBackend) SoftmaxCrossEntropy(prob, logits *Tensor, targets []int32, weight []float32) float64 {
	return CPU.SoftmaxCrossEntropy(h(prob), h(logits), targets, weight)
}
func (f fakeBackend) SoftmaxCrossEntropyBackward(dlogits, prob *Tensor, targets []int32, weight []float32, scale float64) {
	CPU.SoftmaxCrossEntropyBackward(h(dlogits), h(prob), targets, weight, scale)
}
func (f fakeBackend) Attention(out, probs, q, k, v, keyMask *Tensor, scale float64) {
	CPU.Attention(h(out), h(probs), h(q), h(k), h(v), h(keyMask), scale)
}
func (f fakeBackend) AttentionBackward(dq, dk, dv, gout, q, k, v, probs *Tensor, scale float64) {
	CPU.AttentionBackward(h(dq), h(dk), h(dv), h(gout), h(q), h(k), h(v), h(probs), scale)
}
func (f fakeBackend) AdamWStep(param, grad, m, v *Tensor, lr, beta1, beta2, eps, weightDecay float64, step int) {
	CPU.AdamWStep(h(param), h(grad), h(m), h(v), lr, beta1, beta2, eps, weightDecay, step)
}

func TestBackendSeam(t *testing.T) {
	Register(fake)
	if BackendByName("fake") != fake {
		t.Fatal("Register/BackendByName")
	}
	r := NewRNG(70)
	a, b := randT(r, Float32, 4, 5), randT(r, Float32, 5)
	ga, gb := a.ToBackend(fake), b.ToBackend(fake)
	if ga.Backend() != fake || ga.At(2, 3) != a.At(2, 3) {
		t.Fatalf("ToBackend: %v on %s", ga.At(2, 3), ga.Backend().Name())
	}
	// On copies only across backends.
	if ga.On(fake) != ga || a.On(CPU) != a {
		t.Fatal("On copied a tensor already on its backend")
	}
	if ha := ga.On(CPU); ha.Backend() != CPU || ha.At(2, 3) != a.At(2, 3) {
		t.Fatal("On(CPU) of a fake tensor")
	}
	if gb2 := b.On(fake); gb2 == b || gb2.Backend() != fake {
		t.Fatal("On(fake) of a CPU tensor")
	}
	*fake.calls = 0
	sum := Add(nil, ga, gb) // dispatches on the first input's backend
	if sum.Backend() != fake || *fake.calls == 0 {
		t.Fatal("Add did not run on the fake backend")
	}
	assertClose(t, sum, []int{4, 5}, Add(nil, a, b).Float64s(), 0, "Add on fake")
	mm := MatMul(nil, ga, ga, false, true)
	assertClose(t, mm.ToBackend(CPU), []int{4, 4}, MatMul(nil, a, a, false, true).Float64s(), 1e-6, "MatMul on fake")
	// Views, Set, Item, Clone, Concat and Copy across backends.
	ga.T().Set(7, 1, 2)
	if a2 := ga.ToBackend(CPU); a2.At(2, 1) != 7 || a2.Backend() != CPU {
		t.Fatal("Set through a view on the fake backend")
	}
	if s := Sum(nil, ga.Slice(0, 2, 3), 1, false); math.Abs(s.Item()-SumAll(ga.Slice(0, 2, 3).ToBackend(CPU))) > 1e-5 {
		t.Fatal("Sum of a slice on fake")
	}
	c := Concat(nil, 0, ga, ga.Clone())
	if c.Backend() != fake || c.Dim(0) != 8 {
		t.Fatal("Concat on fake")
	}
	host := New(Float32, 4, 5)
	Copy(host, ga)
	dev := fake.Alloc(Float32, 20)
	Copy(FromStorage(dev, 4, 5).T(), host.T()) // host to device into a transposed view
	assertClose(t, FromStorage(dev, 4, 5), []int{4, 5}, host.Float64s(), 0, "Copy host->device")
	FillNormal(ga, NewRNG(1), 0, 1)
	assertClose(t, ga, []int{4, 5}, RandN(NewRNG(1), Float32, 4, 5).Float64s(), 0, "FillNormal on fake")
	if s := ga.String(); len(s) == 0 {
		t.Fatal("String on fake")
	}
	// Mixing backends panics.
	mustPanic(t, ErrBackend, func() { Add(nil, a, gb) }, "tensor.Add", `"cpu"`, `"fake"`)
	mustPanic(t, ErrBackend, func() { ga.Data32() }, "Data32", "fake")
}

// TestEmptyResults checks that every op which allocates its result with
// EmptyOn writes all of it: the fake backend's AllocUninit hands out NaN.
func TestEmptyResults(t *testing.T) {
	r := NewRNG(71)
	a, b := randT(r, Float32, 6, 5), randT(r, Float32, 5)
	gy := randT(r, Float32, 6, 5)
	ga, gb, ggy := a.ToBackend(fake), b.ToBackend(fake), gy.ToBackend(fake)
	idx := []int32{4, 0, 0, 2}
	seg := []int32{0, 2, 2, 1, 0, 2}
	mean, rstd := New(Float32, 6), New(Float32, 6)
	LayerNorm(nil, mean, rstd, a, nil, nil, 1e-5)
	gmean, grstd := mean.ToBackend(fake), rstd.ToBackend(fake)
	cases := []struct {
		name string
		op   func(x, y, g, m, s *Tensor) *Tensor
	}{
		{"Clone of a view", func(x, _, _, _, _ *Tensor) *Tensor { return x.T().Clone() }},
		{"To", func(x, _, _, _, _ *Tensor) *Tensor { return x.To(Float64) }},
		{"Add", func(x, y, _, _, _ *Tensor) *Tensor { return Add(nil, x, y) }},
		{"Exp", func(x, _, _, _, _ *Tensor) *Tensor { return Exp(nil, x) }},
		{"GELUGrad", func(x, _, g, _, _ *Tensor) *Tensor { return GELUGrad(nil, x, g) }},
		{"MaskedFill", func(x, y, _, _, _ *Tensor) *Tensor { return MaskedFill(nil, x, ReLU(nil, y), 3) }},
		{"IndexSelect", func(x, _, _, _, _ *Tensor) *Tensor { return IndexSelect(nil, x, 0, idx) }},
		{"SegmentSum", func(x, _, _, _, _ *Tensor) *Tensor { return SegmentSum(nil, x, seg, 4) }},
		{"MatMul", func(x, _, g, _, _ *Tensor) *Tensor { return MatMul(nil, x, g, true, false) }},
		{"Sum", func(x, _, _, _, _ *Tensor) *Tensor { return Sum(nil, x, 0, true) }},
		{"Softmax", func(x, _, _, _, _ *Tensor) *Tensor { return Softmax(nil, x, 1) }},
		{"LayerNorm", func(x, _, _, _, _ *Tensor) *Tensor { return LayerNorm(nil, nil, nil, x, nil, nil, 1e-5) }},
		{"LayerNormBackward", func(x, _, g, m, s *Tensor) *Tensor { return LayerNormBackward(nil, nil, nil, g, x, m, s, nil) }},
		{"Concat", func(x, _, g, _, _ *Tensor) *Tensor { return Concat(nil, 1, x, g) }},
	}
	for _, c := range cases {
		want := c.op(a, b, gy, mean, rstd)
		got := c.op(ga, gb, ggy, gmean, grstd)
		if got.Backend() != fake {
			t.Errorf("%s: result on %s", c.name, got.Backend().Name())
			continue
		}
		assertClose(t, got.ToBackend(CPU), want.Shape(), want.Float64s(), 0, c.name)
	}
}

// TestFlagNonFinite checks FlagNonFinite's contract on the CPU and its
// argument checks.
func TestFlagNonFinite(t *testing.T) {
	cases := []struct {
		name string
		v    []float64
		init float64
		want float64
	}{
		{"finite", []float64{1, -2, math.MaxFloat32}, 0, 0},
		{"NaN", []float64{1, math.NaN(), 3}, 0, 1},
		{"Inf", []float64{math.Inf(-1)}, 0, 1},
		{"set stays set", []float64{1, 2}, 1, 1},
		{"empty", []float64{}, 0, 0},
	}
	for _, c := range cases {
		for _, dt := range []DType{Float32, Float64} {
			flag := Full(dt, c.init)
			FlagNonFinite(flag, FromFloat64(c.v).To(dt))
			if got := flag.Item(); got != c.want {
				t.Errorf("%s %v: flag %v, want %v", c.name, dt, got, c.want)
			}
		}
	}
	x := New(Float32, 3)
	mustPanic(t, ErrShape, func() { FlagNonFinite(New(Float32, 2), x) }, "tensor.FlagNonFinite", "[2]")
	mustPanic(t, ErrDType, func() { FlagNonFinite(New(Float64, 1), x) }, "tensor.FlagNonFinite")
	mustPanic(t, ErrBackend, func() { FlagNonFinite(NewOn(fake, Float32, 1), x) }, "tensor.FlagNonFinite")
}
