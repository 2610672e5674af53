package optim

import (
	"math"
	"testing"

	"lgflow/tensor"
)

const benchParams = 10_000_000

// naiveAdamW is a single-threaded scalar Go loop doing the AdamW update,
// the baseline the fused tensor.AdamWStep is compared with.
func naiveAdamW(p, g, m, v []float32, lr, b1, b2, eps, wd float64, t int) {
	bc1 := 1 - math.Pow(b1, float64(t))
	bc2 := math.Sqrt(1 - math.Pow(b2, float64(t)))
	decay := float32(1 - lr*wd)
	step := float32(lr / bc1)
	fb1, fb2, feps, fbc2 := float32(b1), float32(b2), float32(eps), float32(bc2)
	for i := range p {
		gi := g[i]
		m[i] = fb1*m[i] + (1-fb1)*gi
		v[i] = fb2*v[i] + (1-fb2)*gi*gi
		p[i] = p[i]*decay - step*m[i]/(float32(math.Sqrt(float64(v[i])))/fbc2+feps)
	}
}

func benchSetup() []Param {
	v := tensor.New(tensor.Float32, benchParams)
	g := tensor.New(tensor.Float32, benchParams)
	tensor.FillNormal(v, tensor.NewRNG(1), 0, 0.02)
	tensor.FillNormal(g, tensor.NewRNG(2), 0, 1e-3)
	return []Param{{Name: "w", Value: v, Grad: g, Decay: true}}
}

// reportAdamW reports ns/param and GB/s counting 7 float32 accesses per
// parameter (read p, g, m, v; write p, m, v).
func reportAdamW(b *testing.B) {
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec*1e9/benchParams, "ns/param")
	b.ReportMetric(7*4*benchParams/sec/1e9, "GB/s")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkAdamWStep10M(b *testing.B) {
	ps := benchSetup()
	opt, err := NewAdamW(ps, DefaultAdamWConfig())
	if err != nil {
		b.Fatal(err)
	}
	opt.Step() // fault in the moment buffers
	b.SetBytes(7 * 4 * benchParams)
	b.ResetTimer()
	for range b.N {
		opt.Step()
	}
	reportAdamW(b)
}

func BenchmarkAdamWNaiveLoop10M(b *testing.B) {
	ps := benchSetup()
	p, g := ps[0].Value.Data32(), ps[0].Grad.Data32()
	m, v := make([]float32, benchParams), make([]float32, benchParams)
	c := DefaultAdamWConfig()
	naiveAdamW(p, g, m, v, c.LR, c.Beta1, c.Beta2, c.Eps, c.WeightDecay, 1)
	b.SetBytes(7 * 4 * benchParams)
	b.ResetTimer()
	for i := range b.N {
		naiveAdamW(p, g, m, v, c.LR, c.Beta1, c.Beta2, c.Eps, c.WeightDecay, i+2)
	}
	reportAdamW(b)
}

func BenchmarkEMAUpdate10M(b *testing.B) {
	ps := benchSetup()
	ema, err := NewEMA(ps, DefaultEMAConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(3 * 4 * benchParams)
	b.ResetTimer()
	for i := range b.N {
		ema.Update(2000 + i)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec*1e9/benchParams, "ns/param")
}

// manyParams returns n small parameters (a DiT's mix of 64×64 matrices and
// 64-vectors, alternating), as separate tensors or as views of one flat
// tensor laid out as nn.Flatten does.
func manyParams(n int, flat bool) []Param {
	shapes := make([][]int, n)
	total := 0
	for i := range shapes {
		shapes[i] = []int{64, 64}
		if i%2 == 1 {
			shapes[i] = []int{64}
		}
		total += 64 * (1 + 63*(1-i%2))
	}
	var fv, fg *tensor.Tensor
	if flat {
		fv, fg = tensor.New(tensor.Float32, total), tensor.New(tensor.Float32, total)
	}
	ps := make([]Param, n)
	off := 0
	for _, decay := range []bool{true, false} {
		for i, s := range shapes {
			if DefaultDecay("", s) != decay {
				continue
			}
			k := 64 * (1 + 63*(1-i%2))
			p := Param{Name: string(rune('a'+i%26)) + string(rune('A'+i/26)), Decay: decay}
			if flat {
				p.Value, p.Grad = fv.Slice(0, off, off+k).Reshape(s...), fg.Slice(0, off, off+k).Reshape(s...)
			} else {
				p.Value, p.Grad = tensor.New(tensor.Float32, s...), tensor.New(tensor.Float32, s...)
			}
			tensor.FillNormal(p.Grad, tensor.NewRNG(uint64(i)), 0, 1e-3)
			ps[i] = p
			off += k
		}
	}
	return ps
}

// BenchmarkAdamWStepMany is one AdamW step over 400 small parameters,
// updated one by one (separate) or in two runs (flat, nn.Flatten's layout).
func BenchmarkAdamWStepMany(b *testing.B) {
	for _, flat := range []bool{false, true} {
		name := "separate"
		if flat {
			name = "flat"
		}
		b.Run(name, func(b *testing.B) {
			opt, err := NewAdamW(manyParams(400, flat), DefaultAdamWConfig())
			if err != nil {
				b.Fatal(err)
			}
			opt.Step()
			b.ResetTimer()
			for range b.N {
				opt.Step()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/step")
		})
	}
}
