//go:build amd64 && !noasm

package tensor

import (
	"math"
	"slices"
	"testing"
)

// TestGELUAVX512 checks that the AVX-512 GELU kernels give the AVX2
// kernels' bits on every lane, in the 16-lane loop and in every tail
// length, for ordinary, extreme and special inputs, and that they write
// nothing past n.
func TestGELUAVX512(t *testing.T) {
	if !cpuHasAVX512 {
		t.Skip("the CPU lacks AVX-512F/DQ")
	}
	r := NewRNG(512)
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-45, -1e-45, 14.44, 14.46, -14.46, 30, -30,
		1e30, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -float32(math.NaN()), 3.4e38, -3.4e38}
	const pad = 17
	sentinel := float32(-12345.5)
	for _, n := range append([]int{0, 1, 7, 15, 16, 17, 31, 32, 33, 40, 1000}, len(specials)) {
		x := make([]float32, n)
		for i := range x {
			switch {
			case n == len(specials):
				x[i] = specials[i]
			case i%5 == 0:
				x[i] = float32(r.Normal() * 8)
			default:
				x[i] = float32(r.Normal() * 2)
			}
		}
		gy := make([]float32, n)
		for i := range gy {
			gy[i] = float32(r.Normal())
		}
		for _, grad := range []bool{false, true} {
			want := make([]float32, n)
			got := make([]float32, n+pad)
			for i := range got {
				got[i] = sentinel
			}
			switch {
			case n == 0:
			case grad:
				geluGradAVX2(&want[0], &x[0], &gy[0], n)
				geluGradAVX512(&got[0], &x[0], &gy[0], n)
			default:
				geluAVX2(&want[0], &x[0], n)
				geluAVX512(&got[0], &x[0], n)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("grad %v n %d: element %d (x = %v): AVX-512 %v, AVX2 %v", grad, n, i, x[i], got[i], want[i])
				}
			}
			for i := n; i < n+pad; i++ {
				if got[i] != sentinel {
					t.Fatalf("grad %v n %d: element %d past the end was written", grad, n, i)
				}
			}
		}
	}
}

// TestSoftmaxRowAVX512 checks that the fused AVX-512 softmax row gives the
// bits (row, maximum and sum) of maskedSoftmaxRow's AVX2 path (masked
// maximum, exponentials with their float64 sum, scaling), for every row
// length up to 70 and the attention's 64, with masks that keep all, some
// and none of the entries, and with large, tiny and infinite scores; and
// that it writes nothing past n.
func TestSoftmaxRowAVX512(t *testing.T) {
	if !cpuHasAVX512 || !useSIMD {
		t.Skip("the CPU lacks AVX-512F/DQ, or LGFLOW_MATHF=go")
	}
	old := useAVX512
	defer func() { useAVX512 = old }()
	r := NewRNG(513)
	const pad = 17
	sentinel := float32(-777.25)
	inf := float32(math.Inf(1))
	for n := 16; n <= 70; n++ {
		for trial := range 6 {
			row := make([]float32, n)
			keep := make([]float32, n)
			for j := range row {
				row[j] = float32(r.Normal() * 3)
				keep[j] = 1
				switch trial {
				case 1: // a padded set: the last entries masked
					if j >= n-n/3 {
						keep[j] = 0
					}
				case 2: // scattered mask, extreme scores
					if r.Intn(3) == 0 {
						keep[j] = 0
					}
					row[j] *= 40
				case 3: // nothing kept
					keep[j] = 0
				case 4: // -Inf scores among kept ones, one huge
					if j%5 == 1 {
						row[j] = -inf
					}
					if j == n/2 {
						row[j] = 1e30
					}
				case 5: // only one entry kept
					if j != n-1 {
						keep[j] = 0
					}
				}
			}
			want := slices.Clone(row)
			useAVX512 = false
			wm, ws := maskedSoftmaxRow(want, keep)
			got := make([]float32, n+pad)
			copy(got, row)
			for j := n; j < len(got); j++ {
				got[j] = sentinel
			}
			useAVX512 = true
			gm, gs := maskedSoftmaxRow(got[:n], keep)
			if math.Float32bits(gm) != math.Float32bits(wm) || math.Float64bits(gs) != math.Float64bits(ws) {
				t.Fatalf("n %d trial %d: m, sum = %v, %v; want %v, %v", n, trial, gm, gs, wm, ws)
			}
			for j := range want {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("n %d trial %d: row[%d] = %v, want %v", n, trial, j, got[j], want[j])
				}
			}
			for j := n; j < len(got); j++ {
				if got[j] != sentinel {
					t.Fatalf("n %d trial %d: element %d past the end was written", n, trial, j)
				}
			}
		}
	}
}

// TestSoftmaxRows checks that softmaxRows, which sends rows four at a time
// through softmaxRows4AVX512, gives each row, and each log-sum-exp, the bits
// of maskedSoftmaxRow on that row alone: row lengths 16 to 70 and 128,
// 4 to 11 rows at a stride wider than a row, masks keeping all, some and
// none of the keys, a row whose kept scores are all -Inf among ordinary
// ones (the four-row call gives up and the rows finish one at a time), and
// extreme scores; the gaps between rows must stay untouched.
func TestSoftmaxRows(t *testing.T) {
	if !cpuHasAVX512 || !useSIMD || !useAVX512 {
		t.Skip("the CPU lacks AVX-512F/DQ, or LGFLOW_MATHF is set")
	}
	r := NewRNG(514)
	const gap = 5
	sentinel := float32(-777.25)
	inf := float32(math.Inf(1))
	lengths := []int{128}
	for n := 16; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for trial := range 5 {
			rows := 4 + (n+trial)%8
			ld := n + gap
			p := make([]float32, rows*ld)
			for i := range p {
				p[i] = sentinel
			}
			keep := make([]float32, n)
			for j := range keep {
				keep[j] = 1
				switch trial {
				case 1:
					if j >= n-n/3 {
						keep[j] = 0
					}
				case 2:
					if r.Intn(3) == 0 {
						keep[j] = 0
					}
				case 3:
					keep[j] = 0
				}
			}
			for i := range rows {
				for j := range n {
					v := float32(r.Normal() * 3)
					if trial == 2 {
						v *= 40
					}
					if trial == 4 && i == rows/2 {
						v = -inf // every kept score -Inf
					}
					if trial == 4 && i == 1 && j == n/2 {
						v = 1e30
					}
					p[i*ld+j] = v
				}
			}
			want := slices.Clone(p)
			wantLSE := make([]float32, rows)
			for i := range rows {
				m, s := maskedSoftmaxRow(want[i*ld:i*ld+n], keep)
				wantLSE[i] = float32(float64(m) + math.Log(s))
			}
			lse := make([]float32, rows)
			softmaxRows(p, ld, rows, n, keep, lse)
			for i := range p {
				if math.Float32bits(p[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d trial %d: element (%d, %d) = %v, want %v", n, trial, i/ld, i%ld, p[i], want[i])
				}
			}
			for i := range lse {
				if math.Float32bits(lse[i]) != math.Float32bits(wantLSE[i]) {
					t.Fatalf("n %d trial %d: lse[%d] = %v, want %v", n, trial, i, lse[i], wantLSE[i])
				}
			}
		}
	}
}
