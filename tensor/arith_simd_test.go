package tensor

import (
	"fmt"
	"math"
	"testing"
)

// arithGo is binaryVec's Go path for the ops the AVX2 kernels cover.
func arithGo(op BinaryOp, d, a, b []float32, alpha float32) {
	for i := range d {
		switch op {
		case BinaryAdd:
			d[i] = a[i] + b[i]
		case BinarySub:
			d[i] = a[i] - b[i]
		case BinaryMul:
			d[i] = a[i] * b[i]
		case BinaryAddScaled:
			d[i] = a[i] + float32(alpha*b[i])
		}
	}
}

// TestArithSIMD checks the AVX2 add, sub, mul and add-scaled kernels
// against the Go loops bit for bit, at every length from 0 to 40 (all tail
// sizes), with NaN, ±Inf, signed zeros, subnormals and values that
// overflow, and in place (d = a).
func TestArithSIMD(t *testing.T) {
	if !cpuHasSIMD {
		t.Skipf("SIMD kernels not available (built: %v)", simdBuilt)
	}
	r := NewRNG(3)
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		1e-40, -1e-40, 3e38, -3e38, 1, -1}
	for _, op := range []BinaryOp{BinaryAdd, BinarySub, BinaryMul, BinaryAddScaled} {
		for n := 0; n <= 40; n++ {
			a, b := make([]float32, n), make([]float32, n)
			for i := range a {
				a[i], b[i] = float32(r.Normal()*100), float32(r.Normal())
				if i%5 == 0 {
					a[i] = special[(i+n)%len(special)]
				}
				if i%7 == 0 {
					b[i] = special[(2*i+n)%len(special)]
				}
			}
			for _, alpha := range []float32{1, -0.37, 3e30} {
				want, got := make([]float32, n), make([]float32, n)
				arithGo(op, want, a, b, alpha)
				if !arithVec32SIMD(op, got, a, b, alpha) {
					t.Fatalf("op %d not handled", op)
				}
				inPlace := append([]float32(nil), a...)
				arithVec32SIMD(op, inPlace, inPlace, b, alpha)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(want[i] != want[i] && got[i] != got[i]) {
						t.Fatalf("op %d, n %d, alpha %v, [%d]: %v op %v = %v, want %v", op, n, alpha, i, a[i], b[i], got[i], want[i])
					}
					if math.Float32bits(inPlace[i]) != math.Float32bits(got[i]) && !(got[i] != got[i] && inPlace[i] != inPlace[i]) {
						t.Fatalf("op %d, n %d: in place [%d] = %v, want %v", op, n, i, inPlace[i], got[i])
					}
				}
				if op != BinaryAddScaled {
					break
				}
			}
		}
	}
	if arithVec32SIMD(BinaryMax, make([]float32, 8), make([]float32, 8), make([]float32, 8), 1) {
		t.Error("BinaryMax claimed by the arithmetic kernels")
	}
}

// BenchmarkArithKernels times d = a op b on 64K float32 elements (in cache,
// one thread) with the Go loop and the AVX2 kernel, reporting ns/elem and,
// for AVX2, the speed-up over the Go loop measured in the same run.
func BenchmarkArithKernels(b *testing.B) {
	const n = 1 << 16
	r := NewRNG(9)
	x, y, d := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(r.Normal()), float32(r.Normal())
	}
	for _, c := range []struct {
		name string
		op   BinaryOp
	}{{"add", BinaryAdd}, {"mul", BinaryMul}, {"addScaled", BinaryAddScaled}} {
		var goNs float64
		for _, simd := range []bool{false, true} {
			if simd && !cpuHasSIMD {
				continue
			}
			impl := map[bool]string{false: "go", true: "avx2"}[simd]
			b.Run(fmt.Sprintf("%s/%s", c.name, impl), func(b *testing.B) {
				b.SetBytes(12 * n)
				for b.Loop() {
					if simd {
						arithVec32SIMD(c.op, d, x, y, 0.5)
					} else {
						arithGo(c.op, d, x, y, 0.5)
					}
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / n
				b.ReportMetric(ns, "ns/elem")
				if simd {
					b.ReportMetric(goNs/ns, "speedup")
				} else {
					goNs = ns
				}
			})
		}
	}
}

// softmaxRowGo is maskedSoftmaxRow with its max and scaling passes as Go
// loops (the exponentials as expSub computes them).
func softmaxRowGo(row, keep []float32) {
	m := float32(math.Inf(-1))
	if keep == nil {
		m = maxVec(row)
	} else {
		for j, v := range row {
			if keep[j] == 0 {
				row[j] = float32(math.Inf(-1))
			} else if v > m {
				m = v
			}
		}
	}
	if math.IsInf(float64(m), -1) {
		clear(row)
		return
	}
	inv := float32(1 / expSub(row, row, m))
	for j := range row {
		row[j] *= inv
	}
}

// TestMaskedSoftmaxRowSIMD runs maskedSoftmaxRow, whose max and scaling
// passes use the AVX2 kernels, against its Go loops on rows of every length
// up to 40 with random masks, NaNs, infinities and fully masked rows, and
// requires the same bits.
func TestMaskedSoftmaxRowSIMD(t *testing.T) {
	if !cpuHasSIMD {
		t.Skipf("SIMD kernels not available (built: %v)", simdBuilt)
	}
	r := NewRNG(5)
	for n := 0; n <= 40; n++ {
		for trial := range 6 {
			row, keep := make([]float32, n), make([]float32, n)
			for i := range row {
				row[i] = float32(r.Normal() * 4)
				if r.Uniform() < 0.7 || trial == 0 {
					keep[i] = 1
				}
				switch {
				case trial == 3 && i%4 == 1:
					row[i] = float32(math.NaN())
				case trial == 4 && i%5 == 2:
					row[i] = float32(math.Inf(-1))
				case trial == 5:
					keep[i] = 0
				}
			}
			for _, k := range [][]float32{keep, nil} {
				a, b := append([]float32(nil), row...), append([]float32(nil), row...)
				softmaxRowGo(a, k)
				maskedSoftmaxRow(b, k)
				for i := range a {
					if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
						t.Fatalf("n %d, trial %d, mask %v: [%d] = %v with AVX2, %v without", n, trial, k != nil, i, b[i], a[i])
					}
				}
			}
		}
	}
}

// TestScalarArithSIMD checks binaryVecScalar's AVX2 paths (a·y and a + y
// for a per-row scalar y) against the Go loops bit for bit.
func TestScalarArithSIMD(t *testing.T) {
	if !cpuHasSIMD {
		t.Skipf("SIMD kernels not available (built: %v)", simdBuilt)
	}
	r := NewRNG(7)
	for _, op := range []BinaryOp{BinaryMul, BinaryAdd} {
		for n := 0; n <= 40; n++ {
			a := make([]float32, n)
			for i := range a {
				a[i] = float32(r.Normal() * 50)
				if i%6 == 3 {
					a[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), 3e38, 1e-42}[(i/6)%4]
				}
			}
			for _, y := range []float32{0.5, -3, float32(math.Inf(-1)), 1e30} {
				want, got := make([]float32, n), make([]float32, n)
				for i := range want {
					if op == BinaryMul {
						want[i] = a[i] * y
					} else {
						want[i] = a[i] + y
					}
				}
				if !binaryVecScalar(op, got, a, y, 1) {
					t.Fatalf("op %d not handled", op)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(want[i] != want[i] && got[i] != got[i]) {
						t.Fatalf("op %d, n %d, y %v, [%d]: got %v, want %v", op, n, y, i, got[i], want[i])
					}
				}
			}
		}
	}
}
