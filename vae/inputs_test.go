package vae

import (
	"math"
	"runtime"
	"slices"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/tensor"
)

// refEncoderInput is encoderInput as it was written before it was split by
// graphs: one pass in node order, in float64, converted at the end.
func refEncoderInput(m *Model, feats []*Features, nodes int, mode Mode, r *tensor.RNG) (vec, vals, slot *tensor.Tensor) {
	K := m.Cfg.K
	parts := 1
	if m.Cfg.Directed {
		parts = 2
	}
	v := make([]float64, nodes*K*parts)
	lam := make([]float64, nodes*K)
	sl := make([]float64, nodes*K)
	sign := make([]float64, K)
	for j := range sign {
		sign[j] = 1
		if mode == Training && m.Cfg.SignFlips && r.Uniform() < 0.5 {
			sign[j] = -1
		}
	}
	row := 0
	for _, f := range feats {
		var gr *tensor.RNG
		if m.Cfg.Eta > 0 {
			gr = r
			if mode != Training {
				gr = tensor.NewRNG(featureHash(f))
			}
		}
		rms := 1.0
		if m.Cfg.ScaleEigvecs {
			rms = math.Sqrt(float64(f.N))
		}
		for i := range f.N {
			scale := rms
			if gr != nil && f.Orbits[i] != 0 {
				scale = rms * (1 + m.Cfg.Eta*gr.Normal())
			}
			for j := range min(f.N, K) {
				s, at := sign[j]*scale, row*K+j
				v[at*parts] = s * float64(f.Vectors[i*K+j])
				if parts == 2 {
					v[at*parts+1] = s * float64(f.Imag[i*K+j])
				}
				lam[at] = float64(f.Values[j])
				sl[at] = 1
			}
			row++
		}
	}
	dt := m.DType()
	return tensor.FromFloat64(v, nodes, K, parts).To(dt), tensor.FromFloat64(lam, nodes, K, 1).To(dt), tensor.FromFloat64(sl, nodes*K, 1).To(dt)
}

// refPairMask is pairMask written serially in float64.
func refPairMask(dt tensor.DType, sizes []int, n int) (mask, count *tensor.Tensor) {
	B := len(sizes)
	m := make([]float64, B*n*n)
	c := make([]float64, B*n)
	for g, k := range sizes {
		for i := range n {
			c[g*n+i] = float64(max(k-1, 1))
			if i >= k {
				c[g*n+i] = 1
				continue
			}
			row := m[(g*n+i)*n : (g*n+i)*n+k]
			for j := range row {
				row[j] = 1
			}
			row[i] = 0
		}
	}
	return tensor.FromFloat64(m, B, 1, n, n).To(dt), tensor.FromFloat64(c, B, 1, n, 1).To(dt)
}

// sameTensor fails t unless a and b have the same dtype, shape and bits.
func sameTensor(t *testing.T, name string, a, b *tensor.Tensor) {
	t.Helper()
	if a.DType() != b.DType() || !slices.Equal(a.Shape(), b.Shape()) {
		t.Fatalf("%s: %v %v, want %v %v", name, a.DType(), a.Shape(), b.DType(), b.Shape())
	}
	x, y := a.To(tensor.Float64).Data64(), b.To(tensor.Float64).Data64()
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			t.Fatalf("%s: element %d is %v, want %v", name, i, x[i], y[i])
		}
	}
}

// TestHostInputs checks the host-side inputs built graph by graph on all
// cores against serial references, bit for bit, on one and two threads.
func TestHostInputs(t *testing.T) {
	planar := datasets.Planar(64, 16, 3)
	mixed := append(datasets.Planar(40, 10, 4), datasets.Tree(60, 12, 5)...)
	for _, tc := range []struct {
		name   string
		gs     []*graph.Graph
		cfg    Config
		dt     tensor.DType
		mode   Mode
		signs  bool
		eta    float64
		scaled bool
	}{
		{name: "planar/train", gs: planar, dt: tensor.Float32, mode: Training, signs: true},
		{name: "planar/eval", gs: planar, dt: tensor.Float32, mode: Eval},
		{name: "mixed/eta/train", gs: mixed, dt: tensor.Float32, mode: Training, signs: true, eta: 0.1},
		{name: "mixed/eta/eval", gs: mixed, dt: tensor.Float64, mode: Eval, eta: 0.1, scaled: true},
		{name: "mixed/float64", gs: mixed, dt: tensor.Float64, mode: Training, signs: true, scaled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{K: 16, Latent: 4, PhiWidth: 8, Layers: 1, Width: 8, DeepSet: 4, EdgeClasses: 1, Norm: GraphNorm,
				SignFlips: tc.signs, Eta: tc.eta, ScaleEigvecs: tc.scaled}
			m, err := New(cfg, 1, nn.WithDType(tc.dt))
			if err != nil {
				t.Fatal(err)
			}
			feats := make([]*Features, len(tc.gs))
			for i, g := range tc.gs {
				if feats[i], err = Featurize(g, cfg, nil); err != nil {
					t.Fatal(err)
				}
			}
			b := graph.NewBatch(tc.gs)
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
			for _, procs := range []int{1, 2} {
				runtime.GOMAXPROCS(procs)
				r1, r2 := tensor.NewRNG(7), tensor.NewRNG(7)
				// Scratch buffers come back dirty: leave junk in them first.
				junk := autograd.NoGrad()
				jv, jl, js := m.encoderInput(junk, feats, b.NumNodes(), tc.mode, tensor.NewRNG(1))
				jm, jc := pairMask(junk, tc.dt, sizes(b), b.MaxN)
				for _, x := range []*tensor.Tensor{jv, jl, js, jm, jc} {
					x.Fill(7)
				}
				je, _ := targets(junk, b)
				for i := range je {
					je[i] = 7
				}
				junk.Release()

				tp := autograd.NoGrad()
				v, l, s := m.encoderInput(tp, feats, b.NumNodes(), tc.mode, r1)
				rv, rl, rs := refEncoderInput(m, feats, b.NumNodes(), tc.mode, r2)
				sameTensor(t, "vec", v, rv)
				sameTensor(t, "vals", l, rl)
				sameTensor(t, "slot", s, rs)
				if r1.Uint64() != r2.Uint64() {
					t.Fatal("the generators differ after encoderInput")
				}
				mask, count := pairMask(tp, tc.dt, sizes(b), b.MaxN)
				rm, rc := refPairMask(tc.dt, sizes(b), b.MaxN)
				sameTensor(t, "mask", mask, rm)
				sameTensor(t, "count", count, rc)
				edge, _ := targets(tp, b)
				if want := b.DenseEdgeClasses(nil); !slices.Equal(edge, want) {
					t.Fatal("targets differ from DenseEdgeClasses")
				}
				tp.Release()
			}
		})
	}
}
