package tensor

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// matMulSizes are the square sizes of the float32 MatMul benchmarks.
var matMulSizes = []int{256, 512, 1024}

func matMulBenchData(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := make([]float32, n*n)
	for i := range s {
		s[i] = float32(2*rng.Float64() - 1)
	}
	return s
}

func reportMatMulGFLOPS(b *testing.B, n int) {
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkMatMul measures C = A*B for square float32 matrices with
// MatMul into a preallocated dst, using every core
// (runtime.GOMAXPROCS). Compare with BenchmarkMatMulGonum in the same run.
func BenchmarkMatMul(b *testing.B) { benchMatMul(b, 0) }

// BenchmarkMatMul1Thread is BenchmarkMatMul on one thread.
func BenchmarkMatMul1Thread(b *testing.B) { benchMatMul(b, 1) }

// benchMatMul runs the MatMul benchmarks with GOMAXPROCS set to procs in
// each sub-benchmark (0: as the testing package sets it). It must be set
// there: the testing package sets GOMAXPROCS (to -test.cpu's value, by
// default the process's) before every benchmark it runs, sub-benchmarks
// included, so a value set by the parent benchmark does not reach them.
func benchMatMul(b *testing.B, procs int) {
	for _, n := range matMulSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			if procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			}
			x := FromFloat32(matMulBenchData(n, 1), n, n)
			y := FromFloat32(matMulBenchData(n, 2), n, n)
			z := New(Float32, n, n)
			for b.Loop() {
				MatMul(z, x, y, false, false)
			}
			reportMatMulGFLOPS(b, n)
		})
	}
}

// BenchmarkMatMulGonum is the baseline: the same products with gonum's
// native (pure Go) blas32.Gemm.
func BenchmarkMatMulGonum(b *testing.B) {
	for _, n := range matMulSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			x := blas32.General{Rows: n, Cols: n, Stride: n, Data: matMulBenchData(n, 1)}
			y := blas32.General{Rows: n, Cols: n, Stride: n, Data: matMulBenchData(n, 2)}
			z := blas32.General{Rows: n, Cols: n, Stride: n, Data: make([]float32, n*n)}
			for b.Loop() {
				blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, z)
			}
			reportMatMulGFLOPS(b, n)
		})
	}
}
