package gemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

func randSlice32(n int, rng *rand.Rand) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(2*rng.Float64() - 1)
	}
	return s
}

func reportGFLOPS(b *testing.B, m, n, k int) {
	b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkMicroKernel measures one core's peak: each float32 kernel
// multiplies L1-resident packed panels (kc = 256) into an L1-resident tile.
func BenchmarkMicroKernel(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, kn := range sgemmKernels() {
		b.Run(kn.name, func(b *testing.B) {
			const kc = 256
			ap, bp := randSlice32(kc*kn.mr, rng), randSlice32(kc*kn.nr, rng)
			c := make([]float32, kn.mr*kn.nr)
			for b.Loop() {
				kn.fn(kc, &ap[0], &bp[0], &c[0], kn.nr, 1, 1, nil)
			}
			reportGFLOPS(b, kn.mr, kn.nr, kc)
		})
	}
}

// BenchmarkMicroKernelAllCores runs the best kernel as in
// BenchmarkMicroKernel on every core at once: the machine's practical peak.
func BenchmarkMicroKernelAllCores(b *testing.B) {
	kn := sKern
	const kc = 256
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(1, 1))
		ap, bp := randSlice32(kc*kn.mr, rng), randSlice32(kc*kn.nr, rng)
		c := make([]float32, kn.mr*kn.nr)
		for pb.Next() {
			kn.fn(kc, &ap[0], &bp[0], &c[0], kn.nr, 1, 1, nil)
		}
	})
	reportGFLOPS(b, kn.mr, kn.nr, kc)
}

// benchShapes are square sizes and the shapes the models multiply: node
// features (64 graphs x 64 nodes, width 256) by a 256x256 weight, and DiT
// tokens (256 graphs x 64 tokens, width 384) by the 384x1152 QKV weight.
var benchShapes = []struct {
	name    string
	m, n, k int
}{
	{"256", 256, 256, 256},
	{"512", 512, 512, 512},
	{"1024", 1024, 1024, 1024},
	{"4096x256x256", 64 * 64, 256, 256},
	{"16384x1152x384", 256 * 64, 1152, 384},
}

// BenchmarkSgemm measures Sgemm with 1 and all threads, and gonum's
// blas32.Gemm in the same run as the baseline.
func BenchmarkSgemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, s := range benchShapes {
		a, bb := randSlice32(s.m*s.k, rng), randSlice32(s.k*s.n, rng)
		c := make([]float32, s.m*s.n)
		for _, threads := range []int{1, 0} {
			name := fmt.Sprintf("%s/threads=%d", s.name, threads)
			if threads == 0 {
				name = s.name + "/threads=all"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					gemm(&sState, sKern, threads, "Sgemm", false, false, s.m, s.n, s.k, 1, a, s.k, bb, s.n, 0, nil, c, s.n)
				}
				reportGFLOPS(b, s.m, s.n, s.k)
			})
		}
		b.Run(s.name+"/gonum", func(b *testing.B) {
			ga := blas32.General{Rows: s.m, Cols: s.k, Stride: s.k, Data: a}
			gb := blas32.General{Rows: s.k, Cols: s.n, Stride: s.n, Data: bb}
			gc := blas32.General{Rows: s.m, Cols: s.n, Stride: s.n, Data: c}
			for b.Loop() {
				blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, ga, gb, 0, gc)
			}
			reportGFLOPS(b, s.m, s.n, s.k)
		})
	}
}

// BenchmarkSgemmTrans measures the transposed layouts at 512^3.
func BenchmarkSgemmTrans(b *testing.B) {
	const n = 512
	rng := rand.New(rand.NewPCG(3, 3))
	a, bb, c := randSlice32(n*n, rng), randSlice32(n*n, rng), make([]float32, n*n)
	for _, tr := range [][2]bool{{false, true}, {true, false}, {true, true}} {
		b.Run(fmt.Sprintf("tA=%v,tB=%v", tr[0], tr[1]), func(b *testing.B) {
			for b.Loop() {
				Sgemm(tr[0], tr[1], n, n, n, 1, a, n, bb, n, 0, c, n)
			}
			reportGFLOPS(b, n, n, n)
		})
	}
}

// BenchmarkDgemm measures Dgemm at 256^3 and 512^3.
func BenchmarkDgemm(b *testing.B) {
	for _, n := range []int{256, 512} {
		a, bb, c := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
		for i := range a {
			a[i], bb[i] = float64(i%13)-6, float64(i%7)-3
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				Dgemm(false, false, n, n, n, 1, a, n, bb, n, 0, c, n)
			}
			reportGFLOPS(b, n, n, n)
		})
	}
}

// BenchmarkSgemmLinear measures the three products of a linear layer
// y = x·wᵀ as the DiT's training step runs them: the forward pass (op(B) =
// wᵀ), the input gradient dy·w and the weight gradient dyᵀ·x (op(A) = dyᵀ),
// for widths in → out of 128 → 512 and 512 → 128, on 4096 tokens (64 sets of
// 64) and 16384 (256 sets), with one thread and with every thread
// (GOMAXPROCS). gonum's blas32.Gemm on the same products is the baseline.
// The weight gradient, a deep product with a small C, is the one split
// into k slices (kSlices).
func BenchmarkSgemmLinear(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, rows := range []int{64 * 64, 256 * 64} {
		for _, d := range [][2]int{{128, 512}, {512, 128}} {
			benchLinear(b, rng, rows, d[0], d[1])
		}
	}
}

func benchLinear(b *testing.B, rng *rand.Rand, rows, in, out int) {
	x, w, dy := randSlice32(rows*in, rng), randSlice32(out*in, rng), randSlice32(rows*out, rng)
	y, dx, dw := make([]float32, rows*out), make([]float32, rows*in), make([]float32, out*in)
	products := []struct {
		name           string
		transA, transB bool
		m, n, k        int
		a              []float32
		lda            int
		b              []float32
		ldb            int
		c              []float32
	}{
		{"forward", false, true, rows, out, in, x, in, w, in, y},
		{"dx", false, false, rows, in, out, dy, out, w, in, dx},
		{"dw", true, false, out, in, rows, dy, out, x, in, dw},
	}
	for _, p := range products {
		name := fmt.Sprintf("rows%d/%dx%d/%s", rows, in, out, p.name)
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/threads%d", name, threads), func(b *testing.B) {
				for b.Loop() {
					gemm(&sState, sKern, threads, "Sgemm", p.transA, p.transB, p.m, p.n, p.k, 1, p.a, p.lda, p.b, p.ldb, 0, nil, p.c, p.n)
				}
				reportGFLOPS(b, p.m, p.n, p.k)
			})
		}
		b.Run(name+"/gonum", func(b *testing.B) {
			ta, tb := blas.NoTrans, blas.NoTrans
			ar, ac, br, bc := p.m, p.k, p.k, p.n
			if p.transA {
				ta, ar, ac = blas.Trans, p.k, p.m
			}
			if p.transB {
				tb, br, bc = blas.Trans, p.n, p.k
			}
			ga := blas32.General{Rows: ar, Cols: ac, Stride: p.lda, Data: p.a}
			gb := blas32.General{Rows: br, Cols: bc, Stride: p.ldb, Data: p.b}
			gc := blas32.General{Rows: p.m, Cols: p.n, Stride: p.n, Data: p.c}
			for b.Loop() {
				blas32.Gemm(ta, tb, 1, ga, gb, 0, gc)
			}
			reportGFLOPS(b, p.m, p.n, p.k)
		})
	}
}

// BenchmarkSgemmDirectA compares, in the same run and on one thread,
// packing op(A) ("packed") with reading it in place through the kernel's
// direct form ("direct"), on the shapes of the DiT's linear layers during
// sampling (2,048 tokens: the attention projections, the MLP's two
// products) and on a wide product.
func BenchmarkSgemmDirectA(b *testing.B) {
	if sKern.direct == nil {
		b.Skipf("the %s kernel has no direct form", sKern.name)
	}
	defer func(u bool) { useDirectA = u }(useDirectA)
	rng := rand.New(rand.NewPCG(4, 4))
	for _, s := range []struct{ m, n, k int }{{2048, 384, 128}, {2048, 128, 128}, {2048, 512, 128}, {2048, 128, 512}, {16384, 1152, 384}} {
		a, bb := randSlice32(s.m*s.k, rng), randSlice32(s.k*s.n, rng)
		c := make([]float32, s.m*s.n)
		for _, direct := range []bool{false, true} {
			name := fmt.Sprintf("%dx%dx%d/packed", s.m, s.n, s.k)
			if direct {
				name = fmt.Sprintf("%dx%dx%d/direct", s.m, s.n, s.k)
			}
			b.Run(name, func(b *testing.B) {
				useDirectA = direct
				for b.Loop() {
					gemm(&sState, sKern, 1, "Sgemm", false, true, s.m, s.n, s.k, 1, a, s.k, bb, s.k, 0, nil, c, s.n)
				}
				reportGFLOPS(b, s.m, s.n, s.k)
			})
		}
	}
}
