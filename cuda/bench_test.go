package cuda

import (
	"fmt"
	"os"
	"testing"

	"lgflow/tensor"
)

// Benchmarks need a GPU (they skip without one). LGFLOW_BENCH_CPU=1 adds the
// CPU backend as a baseline where it would take long.

// BenchmarkGemm4096 times a 4096×4096×4096 product (2·4096³ flop) and
// reports TFLOP/s: float32 (full precision), float32 with TF32 tensor cores,
// and float64.
func BenchmarkGemm4096(b *testing.B) {
	g := gpuBackend(b)
	const n = 4096
	cases := []struct {
		name string
		be   tensor.Backend
		dt   tensor.DType
		tf32 bool
	}{
		{"f32", g, tensor.Float32, false},
		{"tf32", g, tensor.Float32, true},
		{"f64", g, tensor.Float64, false},
	}
	if os.Getenv("LGFLOW_BENCH_CPU") == "1" {
		cases = append(cases, struct {
			name string
			be   tensor.Backend
			dt   tensor.DType
			tf32 bool
		}{"cpu-f32", tensor.CPU, tensor.Float32, false})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r := tensor.NewRNG(1)
			x := tensor.FillUniform(tensor.New(c.dt, n, n), r, -1, 1).ToBackend(c.be)
			y := tensor.FillUniform(tensor.New(c.dt, n, n), r, -1, 1).ToBackend(c.be)
			out := tensor.NewOn(c.be, c.dt, n, n)
			g.SetTF32(c.tf32)
			defer g.SetTF32(false)
			tensor.MatMul(out, x, y, false, false) // warm-up
			must(g.Synchronize())
			b.ResetTimer()
			for range b.N {
				tensor.MatMul(out, x, y, false, false)
			}
			must(g.Synchronize())
			b.StopTimer()
			b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
	}
}

// BenchmarkAttentionDiT times the attention core at the DiT sizes of the
// paper's configurations, on q, k, v viewed in place from a fused (B, N, 3,
// H, Dh) qkv projection: "fwd" is Attention, "fwd+bwd" adds
// AttentionBackward, and the "flash" variants run FlashAttention and
// FlashAttentionBackward instead (no (B, H, N, N) probabilities; the
// backward recomputes them, so its flop count is the same). It reports
// ms/op and GFLOP/s (4·B·H·N²·Dh forward, 8·B·H·N²·Dh backward). The CPU
// runs the small configuration as a baseline (both with LGFLOW_BENCH_CPU=1).
func BenchmarkAttentionDiT(b *testing.B) {
	g := gpuBackend(b)
	configs := []struct {
		name          string
		bsz, n, h, dh int
	}{
		{"DiT-T-planar-B256-N64-H6", 256, 64, 6, 64},
		{"DiT-B-moses-B2048-N38-H12", 2048, 38, 12, 64},
	}
	for ci, c := range configs {
		backends := []tensor.Backend{g}
		if ci == 0 || os.Getenv("LGFLOW_BENCH_CPU") == "1" {
			backends = append(backends, tensor.CPU)
		}
		for _, be := range backends {
			for _, variant := range []int{0, 1, 2, 3} {
				bwd, flash := variant%2 == 1, variant >= 2
				mode := "fwd"
				if bwd {
					mode = "fwd+bwd"
				}
				if flash {
					mode = "flash-" + mode
				}
				b.Run(fmt.Sprintf("%s/%s/%s", c.name, be.Name(), mode), func(b *testing.B) {
					r := tensor.NewRNG(2)
					shape := []int{c.bsz, c.n, 3, c.h, c.dh}
					qkv := tensor.FillUniform(tensor.New(tensor.Float32, shape...), r, -1, 1).ToBackend(be)
					view := func(x *tensor.Tensor, i int) *tensor.Tensor {
						return x.Slice(2, i, i+1).Squeeze(2).Permute(0, 2, 1, 3)
					}
					q, k, v := view(qkv, 0), view(qkv, 1), view(qkv, 2)
					mask := tensor.NewOn(be, tensor.Float32, c.bsz, c.n).Fill(1)
					out := tensor.NewOn(be, tensor.Float32, c.bsz, c.n, c.h, c.dh).Permute(0, 2, 1, 3)
					var probs, lse *tensor.Tensor
					if flash {
						lse = tensor.NewOn(be, tensor.Float32, c.bsz, c.h, c.n)
					} else {
						probs = tensor.NewOn(be, tensor.Float32, c.bsz, c.h, c.n, c.n)
					}
					dqkv := tensor.NewOn(be, tensor.Float32, shape...)
					dq, dk, dv := view(dqkv, 0), view(dqkv, 1), view(dqkv, 2)
					gout := tensor.FillUniform(tensor.New(tensor.Float32, c.bsz, c.h, c.n, c.dh), r, -1, 1).ToBackend(be)
					scale := 1 / 8.0
					step := func() {
						switch {
						case flash:
							tensor.FlashAttention(out, lse, q, k, v, mask, scale)
							if bwd {
								tensor.FlashAttentionBackward(dq, dk, dv, gout, q, k, v, out, lse, mask, scale)
							}
						default:
							tensor.Attention(out, probs, q, k, v, mask, scale)
							if bwd {
								tensor.AttentionBackward(dq, dk, dv, gout, q, k, v, probs, scale)
							}
						}
					}
					step() // warm-up
					must(g.Synchronize())
					b.ResetTimer()
					for range b.N {
						step()
					}
					must(g.Synchronize())
					b.StopTimer()
					flop := 4.0 * float64(c.bsz*c.h*c.n*c.n*c.dh)
					if bwd {
						flop *= 3
					}
					sec := b.Elapsed().Seconds() / float64(b.N)
					b.ReportMetric(sec*1e3, "ms/op")
					b.ReportMetric(flop/sec/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkOpOverhead times a small elementwise op (a 256-element Add, so
// launch-bound) and a 4M-element one, on the GPU and on the CPU as the
// baseline, reporting µs/op and GB/s (12 bytes moved per element).
func BenchmarkOpOverhead(b *testing.B) {
	g := gpuBackend(b)
	for _, n := range []int{256, 1 << 22} {
		for _, be := range []tensor.Backend{g, tensor.CPU} {
			b.Run(fmt.Sprintf("n%d/%s", n, be.Name()), func(b *testing.B) {
				r := tensor.NewRNG(3)
				x := tensor.FillUniform(tensor.New(tensor.Float32, n), r, -1, 1).ToBackend(be)
				y := tensor.FillUniform(tensor.New(tensor.Float32, n), r, -1, 1).ToBackend(be)
				out := tensor.NewOn(be, tensor.Float32, n)
				tensor.Add(out, x, y)
				must(g.Synchronize())
				b.ResetTimer()
				for range b.N {
					tensor.Add(out, x, y)
				}
				must(g.Synchronize())
				b.StopTimer()
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(sec*1e6, "µs/op")
				b.ReportMetric(12*float64(n)/sec/1e9, "GB/s")
			})
		}
	}
}
