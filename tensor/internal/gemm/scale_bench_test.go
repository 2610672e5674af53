package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSgemmScaling measures Sgemm (A and B not transposed, beta 0) on
// one thread and on all, for the square sizes and the shapes training
// multiplies: the ratio of the two is the parallel speed-up.
func BenchmarkSgemmScaling(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	shapes := []struct{ m, n, k int }{
		{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024},
		{2048, 64, 64}, {64, 64, 2048}, {16384, 128, 512},
	}
	for _, s := range shapes {
		a, bb := randSlice32(s.m*s.k, rng), randSlice32(s.k*s.n, rng)
		c := make([]float32, s.m*s.n)
		for _, threads := range []int{1, 0} {
			b.Run(fmt.Sprintf("%dx%dx%d/threads=%d", s.m, s.n, s.k, threads), func(b *testing.B) {
				for b.Loop() {
					gemm(&sState, sKern, threads, "Sgemm", false, false, s.m, s.n, s.k, 1, a, s.k, bb, s.n, 0, nil, c, s.n)
				}
				reportGFLOPS(b, s.m, s.n, s.k)
			})
		}
	}
}
