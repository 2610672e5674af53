package tensor

import (
	"fmt"
	"testing"
)

const benchN = 1 << 20

func reportGBs(b *testing.B, bytesPerOp float64) {
	b.ReportMetric(bytesPerOp*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkAdd measures dst = a + b on 1M float32 elements (12 bytes moved
// per element) against a plain single-goroutine Go loop.
func BenchmarkAdd(b *testing.B) {
	r := NewRNG(1)
	x, y, z := RandN(r, Float32, benchN), RandN(r, Float32, benchN), New(Float32, benchN)
	b.Run("tensor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Add(z, x, y)
		}
		reportGBs(b, 12*benchN)
	})
	b.Run("rowbroadcast", func(b *testing.B) {
		x2, row, z2 := x.Reshape(4096, 256), RandN(r, Float32, 256), z.Reshape(4096, 256)
		b.ReportAllocs()
		for b.Loop() {
			Add(z2, x2, row)
		}
		reportGBs(b, 8*benchN)
	})
	b.Run("loop", func(b *testing.B) {
		xd, yd, zd := x.Data32(), y.Data32(), z.Data32()
		for b.Loop() {
			for i := range zd {
				zd[i] = xd[i] + yd[i]
			}
		}
		reportGBs(b, 12*benchN)
	})
}

// BenchmarkSum measures SumAll and a row reduction on 1M float32 elements
// against a plain single-goroutine loop.
func BenchmarkSum(b *testing.B) {
	x := RandN(NewRNG(2), Float32, benchN)
	b.Run("SumAll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			SumAll(x)
		}
		reportGBs(b, 4*benchN)
	})
	b.Run("rows", func(b *testing.B) {
		x2, d := x.Reshape(4096, 256), New(Float32, 4096)
		b.ReportAllocs()
		for b.Loop() {
			Sum(d, x2, 1, false)
		}
		reportGBs(b, 4*benchN)
	})
	b.Run("cols", func(b *testing.B) {
		x2, d := x.Reshape(4096, 256), New(Float32, 256)
		b.ReportAllocs()
		for b.Loop() {
			Sum(d, x2, 0, false)
		}
		reportGBs(b, 4*benchN)
	})
	b.Run("loop", func(b *testing.B) {
		xd := x.Data32()
		var s float32
		for b.Loop() {
			s = 0
			for _, v := range xd {
				s += v
			}
		}
		_ = s
		reportGBs(b, 4*benchN)
	})
}

// BenchmarkGELU measures the exact GELU on 1M float32 elements.
func BenchmarkGELU(b *testing.B) {
	x, z := RandN(NewRNG(3), Float32, benchN), New(Float32, benchN)
	b.ReportAllocs()
	for b.Loop() {
		GELU(z, x)
	}
	b.ReportMetric(float64(benchN)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

// BenchmarkSoftmax measures a row softmax of (4096, 256) float32.
func BenchmarkSoftmax(b *testing.B) {
	x, z := RandN(NewRNG(4), Float32, 4096, 256), New(Float32, 4096, 256)
	b.ReportAllocs()
	for b.Loop() {
		Softmax(z, x, -1)
	}
	reportGBs(b, 8*benchN)
}

// BenchmarkLayerNorm measures LayerNorm forward and backward on (4096, 256)
// float32 with affine parameters.
func BenchmarkLayerNorm(b *testing.B) {
	r := NewRNG(5)
	x, gy := RandN(r, Float32, 4096, 256), RandN(r, Float32, 4096, 256)
	y, dx := New(Float32, 4096, 256), New(Float32, 4096, 256)
	gamma, beta, dg, db := RandN(r, Float32, 256), RandN(r, Float32, 256), New(Float32, 256), New(Float32, 256)
	mean, rstd := New(Float32, 4096), New(Float32, 4096)
	b.Run("forward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			LayerNorm(y, mean, rstd, x, gamma, beta, 1e-5)
		}
		reportGBs(b, 8*benchN)
	})
	b.Run("backward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			LayerNormBackward(dx, dg, db, gy, x, mean, rstd, gamma)
		}
		reportGBs(b, 12*benchN)
	})
}

// BenchmarkAttention measures Attention forward and backward at the DiT's
// shape B=64, H=4, N=64, Dh=32 in float32, in GFLOP/s of the matrix
// products (forward 2 products, backward 4).
func BenchmarkAttention(b *testing.B) {
	const B, H, N, D = 64, 4, 64, 32
	r := NewRNG(6)
	q, k, v := RandN(r, Float32, B, H, N, D), RandN(r, Float32, B, H, N, D), RandN(r, Float32, B, H, N, D)
	mask := Full(Float32, 1, B, N)
	for bi := range B {
		for j := N - bi%16; j < N; j++ {
			mask.Set(0, bi, j)
		}
	}
	out, probs := New(Float32, B, H, N, D), New(Float32, B, H, N, N)
	dq, dk, dv := q.NewLike(), k.NewLike(), v.NewLike()
	flops := 2.0 * B * H * N * N * D
	b.Run("forward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Attention(out, probs, q, k, v, mask, 0.17)
		}
		b.ReportMetric(2*flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("backward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			AttentionBackward(dq, dk, dv, out, q, k, v, probs, 0.17)
		}
		b.ReportMetric(4*flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// BenchmarkScatterAdd measures message aggregation: 65536 edge rows of
// width 64 added into 8192 node rows (float32), in GB/s of source read.
func BenchmarkScatterAdd(b *testing.B) {
	const E, N, D = 1 << 16, 8192, 64
	r := NewRNG(7)
	src, dst := RandN(r, Float32, E, D), New(Float32, N, D)
	idx := make([]int32, E)
	for i := range idx {
		idx[i] = int32(r.Intn(N))
	}
	b.Run("ScatterAdd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ScatterAdd(dst, src, idx)
		}
		reportGBs(b, 4*E*D)
	})
	b.Run("loop", func(b *testing.B) {
		d, s := dst.Data32(), src.Data32()
		for b.Loop() {
			for i, r := range idx {
				dr, sr := d[int(r)*D:int(r)*D+D], s[i*D:i*D+D]
				for c := range dr {
					dr[c] += sr[c]
				}
			}
		}
		reportGBs(b, 4*E*D)
	})
	b.Run("Gather", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Gather(src, dst, idx)
		}
		reportGBs(b, 4*E*D)
	})
	sorted := append([]int32(nil), idx...)
	sortInt32Fast(sorted)
	b.Run("SegmentSumSorted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			SegmentSum(dst, src, sorted, N)
		}
		reportGBs(b, 4*E*D)
	})
}

func sortInt32Fast(s []int32) {
	counts := make([]int, 1<<16)
	for _, v := range s {
		counts[v]++
	}
	i := 0
	for v, c := range counts {
		for range c {
			s[i] = int32(v)
			i++
		}
	}
}

// BenchmarkLayerNormModulate measures the DiT's LayerNorm with adaLN
// modulation (no affine parameters) forward and backward at its training
// shape: 64 sets of 64 tokens of width 128, float32.
func BenchmarkLayerNormModulate(b *testing.B) {
	const G, N, D = 64, 64, 128
	r := NewRNG(7)
	x, gy := RandN(r, Float32, G, N, D), RandN(r, Float32, G, N, D)
	shift, scale := RandN(r, Float32, G, D), RandN(r, Float32, G, D)
	y, dx := New(Float32, G, N, D), New(Float32, G, N, D)
	dshift, dscale := New(Float32, G, D), New(Float32, G, D)
	mean, rstd := New(Float32, G, N), New(Float32, G, N)
	b.Run("forward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			LayerNormModulate(y, mean, rstd, x, nil, nil, shift, scale, 1e-5)
		}
		reportGBs(b, 8*G*N*D)
	})
	b.Run("backward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			LayerNormModulateBackward(dx, nil, nil, dshift, dscale, gy, x, mean, rstd, nil, nil, scale)
		}
		reportGBs(b, 12*G*N*D)
	})
}

// BenchmarkFlashAttentionSample measures FlashAttention as a DiT's sampling
// step calls it: no log-sum-exp, q, k and v strided views into one (B, N,
// 3, H, Dh) projection, a (B, N) token mask of ones, N=64, H=4, Dh=32, in
// GFLOP/s of its two matrix products and wall-clock ns per head (heads
// run in parallel: with GOMAXPROCS=1 it is the CPU time of one head). B=32
// is one of the sampler's token groups (2,048 tokens, a 3 MB projection);
// B=2 fits in L2.
func BenchmarkFlashAttentionSample(b *testing.B) {
	const H, N, D = 4, 64, 32
	for _, B := range []int{2, 32} {
		b.Run(fmt.Sprintf("B=%d", B), func(b *testing.B) {
			r := NewRNG(6)
			qkv := RandN(r, Float32, B, N, 3, H, D).Permute(2, 0, 3, 1, 4)
			q, k, v := qkv.Slice(0, 0, 1).Squeeze(0), qkv.Slice(0, 1, 2).Squeeze(0), qkv.Slice(0, 2, 3).Squeeze(0)
			out := New(Float32, B, N, H, D).Permute(0, 2, 1, 3)
			mask := Full(Float32, 1, B, N)
			b.ReportAllocs()
			for b.Loop() {
				FlashAttention(out, nil, q, k, v, mask, 0.17)
			}
			b.ReportMetric(float64(4*B*H*N*N*D)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(B*H)*1e9, "ns/head")
		})
	}
}
