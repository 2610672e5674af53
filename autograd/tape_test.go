package autograd

import (
	"math"
	"runtime"
	"sync"
	"testing"

	"lgflow/tensor"
)

// mlp is a tiny two-layer perceptron used by the tape tests and benchmarks.
type mlp struct{ w1, b1, w2, b2 *Var }

func newMLP(r *tensor.RNG, dt tensor.DType, in, hidden, out int) *mlp {
	return &mlp{
		w1: NewParam(tensor.FillNormal(tensor.New(dt, hidden, in), r, 0, 0.3)),
		b1: NewParam(tensor.FillNormal(tensor.New(dt, hidden), r, 0, 0.1)),
		w2: NewParam(tensor.FillNormal(tensor.New(dt, out, hidden), r, 0, 0.3)),
		b2: NewParam(tensor.FillNormal(tensor.New(dt, out), r, 0, 0.1)),
	}
}

func (m *mlp) params() []*Var { return []*Var{m.w1, m.b1, m.w2, m.b2} }

func (m *mlp) loss(tp *Tape, x, y *Var) *Var {
	h := tp.GELU(tp.Linear(x, m.w1, m.b1))
	return tp.MSE(tp.Linear(h, m.w2, m.b2), y, nil)
}

func sgd(ps []*Var, lr float64) {
	for _, p := range ps {
		tensor.AddScaled(p.Value, p.Value, p.Grad, -lr)
		p.ZeroGrad()
	}
}

func TestNoGradTapeRecordsNothing(t *testing.T) {
	r := tensor.NewRNG(1)
	m := newMLP(r, tensor.Float64, 3, 4, 2)
	x := NewConst(tensor.RandN(r, tensor.Float64, 5, 3))
	y := NewConst(tensor.RandN(r, tensor.Float64, 5, 2))
	tp := NoGrad()
	l := m.loss(tp, x, y)
	if tp.Len() != 0 || tp.Recording() {
		t.Fatalf("no-grad tape recorded %d ops", tp.Len())
	}
	if l.RequiresGrad() {
		t.Fatal("result of a no-grad tape requires grad")
	}
	// Same value as a recording tape.
	tp2 := NewTape()
	l2 := m.loss(tp2, x, y)
	if tp2.Len() == 0 {
		t.Fatal("recording tape recorded nothing")
	}
	if l.Item() != l2.Item() {
		t.Fatalf("no-grad loss %v, recording loss %v", l.Item(), l2.Item())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Backward on a no-grad tape did not panic")
			}
		}()
		tp.Backward(l)
	}()
	tp.Release()
	tp2.Release()
}

func gradsOf(ps []*Var) [][]float64 {
	out := make([][]float64, len(ps))
	for i, p := range ps {
		out[i] = append([]float64(nil), p.Grad.Contiguous().Data64()...)
	}
	return out
}

func TestGradientAccumulatesAcrossBackwardPasses(t *testing.T) {
	r := tensor.NewRNG(2)
	m := newMLP(r, tensor.Float64, 3, 4, 2)
	x := NewConst(tensor.RandN(r, tensor.Float64, 5, 3))
	y := NewConst(tensor.RandN(r, tensor.Float64, 5, 2))
	step := func() {
		tp := NewTape()
		tp.Backward(m.loss(tp, x, y))
		tp.Release()
	}
	step()
	once := gradsOf(m.params())
	step()
	twice := gradsOf(m.params())
	for i := range once {
		for j := range once[i] {
			if d := math.Abs(twice[i][j] - 2*once[i][j]); d > 1e-12 {
				t.Fatalf("param %d elem %d: after two passes %v, want 2×%v", i, j, twice[i][j], once[i][j])
			}
		}
	}
	// Backward twice on one tape accumulates too (the graph is kept until Release).
	for _, p := range m.params() {
		p.ZeroGrad()
	}
	tp := NewTape()
	l := m.loss(tp, x, y)
	tp.Backward(l)
	tp.Backward(l)
	tp.Release()
	again := gradsOf(m.params())
	for i := range once {
		for j := range once[i] {
			if d := math.Abs(again[i][j] - 2*once[i][j]); d > 1e-12 {
				t.Fatalf("same tape: param %d elem %d: %v, want %v", i, j, again[i][j], 2*once[i][j])
			}
		}
	}
}

func TestConcurrentTapes(t *testing.T) {
	r := tensor.NewRNG(3)
	m := newMLP(r, tensor.Float64, 8, 16, 4)
	x := NewConst(tensor.RandN(r, tensor.Float64, 32, 8))
	y := NewConst(tensor.RandN(r, tensor.Float64, 32, 4))
	tp := NewTape()
	tp.Backward(m.loss(tp, x, y))
	tp.Release()
	single := gradsOf(m.params())
	for _, p := range m.params() {
		p.ZeroGrad()
	}
	const workers, steps = 2, 10
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tp := NewTape()
			for s := 0; s < steps; s++ {
				tp.Backward(m.loss(tp, x, y))
				// A concurrent no-grad pass over the same parameters.
				ng := NoGrad()
				m.loss(ng, x, y)
				ng.Release()
				tp.Release()
			}
		}()
	}
	wg.Wait()
	got := gradsOf(m.params())
	for i := range single {
		for j := range single[i] {
			want := workers * steps * single[i][j]
			if d := math.Abs(got[i][j] - want); d > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("param %d elem %d: %v, want %v", i, j, got[i][j], want)
			}
		}
	}
}

func TestReleasedVarPanics(t *testing.T) {
	tp := NewTape()
	a := NewParam(tensor.FromFloat64([]float64{1, 2}, 2))
	y := tp.Exp(a)
	tp.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("using a released Var did not panic")
		}
	}()
	NewTape().Exp(y)
}

func TestForeignIntermediatePanics(t *testing.T) {
	a := NewParam(tensor.FromFloat64([]float64{1, 2}, 2))
	tp1, tp2 := NewTape(), NewTape()
	y := tp1.Exp(a)
	defer func() {
		if recover() == nil {
			t.Fatal("mixing tapes did not panic")
		}
	}()
	tp2.Exp(y)
}

func TestHeapStableOverTrainingSteps(t *testing.T) {
	r := tensor.NewRNG(4)
	m := newMLP(r, tensor.Float32, 64, 128, 8)
	x := NewConst(tensor.RandN(r, tensor.Float32, 256, 64))
	y := NewConst(tensor.RandN(r, tensor.Float32, 256, 8))
	tp := NewTape()
	step := func() {
		tp.Backward(m.loss(tp, x, y))
		sgd(m.params(), 1e-3)
		tp.Release()
	}
	for i := 0; i < 20; i++ {
		step()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const steps = 200
	for i := 0; i < steps; i++ {
		step()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	perStep := float64(after.TotalAlloc-before.TotalAlloc) / steps
	t.Logf("heap growth over %d steps: %d bytes; allocated per step: %.0f bytes (%d mallocs/step)",
		steps, growth, perStep, (after.Mallocs-before.Mallocs)/steps)
	// One step's activations are 256×128×4 B = 128 KiB per buffer; the pool
	// must keep the live heap flat and the per-step garbage small.
	if growth > 1<<20 {
		t.Errorf("heap grew by %d bytes over %d steps", growth, steps)
	}
	if perStep > 64<<10 && !raceEnabled {
		t.Errorf("%.0f bytes allocated per step; buffers are not being reused", perStep)
	}
}

// TestFreeze checks that a frozen parameter receives no gradient while the
// other operand of the same op still does, and that freezing an
// intermediate changes nothing.
func TestFreeze(t *testing.T) {
	w := NewParam(tensor.FromFloat64([]float64{1, 2, 3, 4}, 2, 2))
	x := NewParam(tensor.FromFloat64([]float64{1, -1}, 1, 2))
	w.Freeze()
	if w.RequiresGrad() {
		t.Fatal("a frozen parameter requires a gradient")
	}
	tp := NewTape()
	h := tp.MatMul(x, w, false, false)
	h.Freeze()
	if !h.RequiresGrad() {
		t.Fatal("Freeze changed an intermediate")
	}
	tp.Backward(tp.SumAll(h))
	tp.Release()
	if w.Grad != nil {
		t.Errorf("frozen parameter got gradient %v", w.Grad.Data64())
	}
	// d/dx Σ x·W = row sums of W: (1+2, 3+4).
	if x.Grad == nil || x.Grad.Data64()[0] != 3 || x.Grad.Data64()[1] != 7 {
		t.Errorf("input gradient %v, want [3 7]", x.Grad)
	}
}

// TestScratch: scratch buffers have the shape, dtype and length asked for,
// live on the CPU, and are usable again after Release, on tapes that
// record and on no-grad tapes.
func TestScratch(t *testing.T) {
	for _, c := range []struct {
		name   string
		noGrad bool
		dt     tensor.DType
		shape  []int
		ints   int
	}{
		{"recording/float32", false, tensor.Float32, []int{32, 1, 64, 64}, 131072},
		{"recording/float64", false, tensor.Float64, []int{7, 3}, 1},
		{"nograd/float32", true, tensor.Float32, []int{100}, 65},
		{"nograd/scalar", true, tensor.Float32, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			for round := range 2 {
				tp := NewTape()
				if c.noGrad {
					tp = NoGrad()
				}
				x := tp.Scratch(c.dt, c.shape...)
				want := 1
				for _, d := range c.shape {
					want *= d
				}
				if x.DType() != c.dt || x.Size() != want || x.Backend() != tensor.CPU || !x.IsContiguous() {
					t.Fatalf("round %d: %v %v on %v, want %v %v on the CPU", round, x.DType(), x.Shape(), x.Backend(), c.dt, c.shape)
				}
				x.Fill(float64(round + 1))
				ix := tp.ScratchInt32(c.ints)
				if len(ix) != c.ints {
					t.Fatalf("round %d: %d int32s, want %d", round, len(ix), c.ints)
				}
				for i := range ix {
					ix[i] = int32(i)
				}
				tp.Release()
			}
		})
	}
}
