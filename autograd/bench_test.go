package autograd

import (
	"testing"

	"lgflow/tensor"
)

// Benchmarks. Each reports the figure people compare (GFLOP/s, ns per op)
// next to a baseline measured in the same run: the same math written directly
// against the tensor package with preallocated buffers (no tape).

const (
	mlpBatch = 4096
	mlpIn    = 256
	mlpHid   = 256
	mlpOut   = 16
)

// mlpFlops is the multiply-add count ×2 of one training step: forward
// (three GEMMs) and backward (dW for all layers, dx for layers 2 and 3).
func mlpFlops() float64 {
	b := float64(mlpBatch)
	fwd := 2 * b * (mlpIn*mlpHid + mlpHid*mlpHid + mlpHid*mlpOut)
	bwdW := fwd
	bwdX := 2 * b * (mlpHid*mlpHid + mlpHid*mlpOut)
	return fwd + bwdW + bwdX
}

type mlp3 struct {
	w [3]*Var
	b [3]*Var
}

func newMLP3(r *tensor.RNG) *mlp3 {
	m := &mlp3{}
	dims := [4]int{mlpIn, mlpHid, mlpHid, mlpOut}
	for i := 0; i < 3; i++ {
		m.w[i] = NewParam(tensor.FillNormal(tensor.New(tensor.Float32, dims[i+1], dims[i]), r, 0, 0.05))
		m.b[i] = NewParam(tensor.New(tensor.Float32, dims[i+1]))
	}
	return m
}

func (m *mlp3) params() []*Var { return []*Var{m.w[0], m.b[0], m.w[1], m.b[1], m.w[2], m.b[2]} }

func BenchmarkTrainStepMLP(b *testing.B) {
	r := tensor.NewRNG(1)
	x := tensor.RandN(r, tensor.Float32, mlpBatch, mlpIn)
	target := make([]int32, mlpBatch)
	for i := range target {
		target[i] = int32(r.Intn(mlpOut))
	}
	b.Run("autograd", func(b *testing.B) {
		m := newMLP3(r)
		xc := NewConst(x)
		tp := NewTape()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h := tp.ReLU(tp.Linear(xc, m.w[0], m.b[0]))
			h = tp.ReLU(tp.Linear(h, m.w[1], m.b[1]))
			loss := tp.SoftmaxCrossEntropy(tp.Linear(h, m.w[2], m.b[2]), target, nil)
			tp.Backward(loss)
			sgd32(m.params(), 1e-3)
			tp.Release()
		}
		b.ReportMetric(mlpFlops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("tensor-baseline", func(b *testing.B) {
		m := newMLP3(r)
		dims := [4]int{mlpIn, mlpHid, mlpHid, mlpOut}
		var act, pre, grad [4]*tensor.Tensor
		act[0] = x
		for i := 1; i < 4; i++ {
			pre[i] = tensor.New(tensor.Float32, mlpBatch, dims[i])
			act[i] = tensor.New(tensor.Float32, mlpBatch, dims[i])
			grad[i] = tensor.New(tensor.Float32, mlpBatch, dims[i])
		}
		prob := tensor.New(tensor.Float32, mlpBatch, mlpOut)
		gw := [3]*tensor.Tensor{}
		gb := [3]*tensor.Tensor{}
		for i := 0; i < 3; i++ {
			gw[i] = m.w[i].Value.NewLike()
			gb[i] = m.b[i].Value.NewLike()
		}
		b.ReportAllocs()
		b.ResetTimer()
		for it := 0; it < b.N; it++ {
			for i := 1; i < 4; i++ {
				tensor.Copy(pre[i], m.b[i-1].Value)
				tensor.Gemm(pre[i], 1, act[i-1], m.w[i-1].Value, false, true, 1)
				if i < 3 {
					tensor.ReLU(act[i], pre[i])
				}
			}
			tensor.SoftmaxCrossEntropy(prob, pre[3], target, nil)
			tensor.SoftmaxCrossEntropyBackward(grad[3], prob, target, nil, 1/float64(mlpBatch))
			for i := 3; i >= 1; i-- {
				if i < 3 {
					tensor.ReLUGrad(grad[i], pre[i], grad[i])
				}
				tensor.Gemm(gw[i-1], 1, grad[i], act[i-1], true, false, 0)
				tensor.Sum(gb[i-1], grad[i], 0, false)
				if i > 1 {
					tensor.Gemm(grad[i-1], 1, grad[i], m.w[i-1].Value, false, false, 0)
				}
			}
			for i := 0; i < 3; i++ {
				tensor.AddScaled(m.w[i].Value, m.w[i].Value, gw[i], -1e-3)
				tensor.AddScaled(m.b[i].Value, m.b[i].Value, gb[i], -1e-3)
			}
		}
		b.ReportMetric(mlpFlops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

func sgd32(ps []*Var, lr float64) {
	for _, p := range ps {
		tensor.AddScaled(p.Value, p.Value, p.Grad, -lr)
		p.Grad.Zero()
	}
}

// BenchmarkTapeOverhead measures the cost per recorded op on 1-element
// tensors (forward + backward of a chain of Adds), against the same number
// of tensor.Add calls on preallocated tensors.
func BenchmarkTapeOverhead(b *testing.B) {
	const chain = 100
	a := NewParam(tensor.FromFloat32([]float32{1}, 1))
	c := NewConst(tensor.FromFloat32([]float32{2}, 1))
	b.Run("tape-fwd+bwd", func(b *testing.B) {
		tp := NewTape()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			y := a
			for k := 0; k < chain; k++ {
				y = tp.Add(y, c)
			}
			tp.Backward(y)
			tp.Release()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chain), "ns/op-recorded")
	})
	b.Run("tape-nograd", func(b *testing.B) {
		tp := NoGrad()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			y := a
			for k := 0; k < chain; k++ {
				y = tp.Add(y, c)
			}
			tp.Release()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chain), "ns/op-recorded")
	})
	b.Run("tensor-baseline", func(b *testing.B) {
		y := tensor.FromFloat32([]float32{1}, 1)
		g := tensor.FromFloat32([]float32{1}, 1)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for k := 0; k < chain; k++ {
				tensor.Add(y, y, c.Value) // forward
			}
			for k := 0; k < chain; k++ {
				tensor.Add(g, g, c.Value) // one kernel per backward step
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chain), "ns/op-recorded")
	})
}

// BenchmarkGINEAggregate: the fused neighbourhood sum against the same
// computation composed of Gather, Add, ReLU and ScatterAdd (forward +
// backward), on a batch shaped like 64 planar graphs of 64 nodes (4096
// nodes, ~24K directed edges, 128 features, 4 edge classes).
func BenchmarkGINEAggregate(b *testing.B) {
	const nodes, edges, feat, classes = 4096, 24576, 128, 4
	r := tensor.NewRNG(1)
	src, dst, cls := make([]int32, edges), make([]int32, edges), make([]int32, edges)
	for k := range src {
		g := r.Intn(64) * 64
		src[k], dst[k], cls[k] = int32(g+r.Intn(64)), int32(g+r.Intn(64)), int32(r.Intn(classes))
	}
	h := NewParam(tensor.RandN(r, tensor.Float32, nodes, feat))
	table := NewParam(tensor.RandN(r, tensor.Float32, classes, feat))
	run := func(b *testing.B, f func(tp *Tape) *Var) {
		tp := NewTape()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			tp.Backward(tp.SumAll(f(tp)))
			tp.Release()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*edges), "ns/edge")
	}
	b.Run("fused", func(b *testing.B) {
		run(b, func(tp *Tape) *Var { return tp.GINEAggregate(h, table, src, dst, cls) })
	})
	b.Run("composed-baseline", func(b *testing.B) {
		run(b, func(tp *Tape) *Var {
			m := tp.ReLU(tp.Add(tp.Gather(h, src), tp.Gather(table, cls)))
			return tp.ScatterAdd(m, dst, nodes)
		})
	})
}

// BenchmarkAttention: forward + backward of masked attention at DiT size
// (B=64, H=4, N=64, Dh=32): key padding through tensor.FlashAttention and
// tensor.Attention, and the GEMM + masked-softmax path used for SameGroup,
// on the same mask.
func BenchmarkAttention(b *testing.B) {
	const bs, h, n, dh = 64, 4, 64, 32
	r := tensor.NewRNG(1)
	q := NewParam(tensor.RandN(r, tensor.Float32, bs, h, n, dh))
	k := NewParam(tensor.RandN(r, tensor.Float32, bs, h, n, dh))
	v := NewParam(tensor.RandN(r, tensor.Float32, bs, h, n, dh))
	mask := tensor.New(tensor.Float32, bs, n)
	for i := 0; i < bs; i++ {
		for j := 0; j < n*3/4; j++ {
			mask.Set(1, i, j)
		}
	}
	for _, c := range []struct {
		name         string
		fused, flash bool
		mode         MaskMode
	}{{"KeyPadding-tensor-flash", true, true, KeyPadding}, {"KeyPadding-tensor-fused", true, false, KeyPadding},
		{"KeyPadding-gemm", false, false, KeyPadding}, {"SameGroup-gemm", false, false, SameGroup}} {
		b.Run(c.name, func(b *testing.B) {
			useFusedAttention, useFlashAttention, flashCPUTraining = c.fused, c.flash, c.flash
			defer func() { useFusedAttention, useFlashAttention, flashCPUTraining = true, true, false }()
			tp := NewTape()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tp.Backward(tp.SumAll(tp.Attention(q, k, v, mask, c.mode, 0.17)))
				tp.Release()
			}
			flops := 3 * 2 * 2 * float64(bs*h*n*n*dh)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
