package tensor

import (
	"fmt"
	"math"
	"testing"
)

// withSIMD runs f with the SIMD kernels switched on or off.
func withSIMD(on bool, f func()) {
	saved := useSIMD
	useSIMD = on
	defer func() { useSIMD = saved }()
	f()
}

// sameBits fails t unless a and b hold the same float32 bits (NaNs of any
// payload match).
func sameBits(t *testing.T, what string, a, b *Tensor) {
	t.Helper()
	x, y := contig[float32](a.Contiguous()), contig[float32](b.Contiguous())
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) && !(x[i] != x[i] && y[i] != y[i]) {
			t.Fatalf("%s: [%d] SIMD %v, Go %v", what, i, x[i], y[i])
		}
	}
}

// TestLayerNormSIMD checks the AVX2 LayerNorm row kernels against the Go
// loops bit for bit through the public ops: LayerNorm and its backward
// with and without affine parameters, the adaLN-modulated LayerNorm and
// its backward, Sum, and the gated residual and its backward, at widths covering every tail (1-40) and the
// DiT's (128, plus 131), with rows of large mean and spread.
func TestLayerNormSIMD(t *testing.T) {
	if !cpuHasSIMD {
		t.Skipf("SIMD kernels not available (built: %v)", simdBuilt)
	}
	widths := []int{128, 131}
	for d := 1; d <= 40; d++ {
		widths = append(widths, d)
	}
	r := NewRNG(11)
	for _, d := range widths {
		const G, N = 3, 5
		x := RandN(r, Float32, G, N, d)
		xs := contig[float32](x)
		for i := range xs {
			xs[i] = xs[i]*float32(1+i%7) + float32(i%3)*50
		}
		gy := RandN(r, Float32, G, N, d)
		shift, scale := RandN(r, Float32, G, d), RandN(r, Float32, G, d)
		gamma, beta := RandN(r, Float32, d), RandN(r, Float32, d)
		type out struct{ t []*Tensor }
		run := func(on bool) (o out) {
			withSIMD(on, func() {
				for _, affine := range []bool{false, true} {
					var ga, be *Tensor
					if affine {
						ga, be = gamma, beta
					}
					y, mean, rstd := New(Float32, G, N, d), New(Float32, G, N), New(Float32, G, N)
					LayerNorm(y, mean, rstd, x, ga, be, 1e-5)
					dx := New(Float32, G, N, d)
					var dg, db *Tensor
					if affine {
						dg, db = New(Float32, d), New(Float32, d)
					}
					LayerNormBackward(dx, dg, db, gy, x, mean, rstd, ga)
					o.t = append(o.t, y, mean, rstd, dx)
					if affine {
						o.t = append(o.t, dg, db)
					}
				}
				for _, affine := range []bool{false, true} {
					var ga, be, dg, db *Tensor
					if affine {
						ga, be, dg, db = gamma, beta, New(Float32, d), New(Float32, d)
					}
					y, mean, rstd := New(Float32, G, N, d), New(Float32, G, N), New(Float32, G, N)
					LayerNormModulate(y, mean, rstd, x, ga, be, shift, scale, 1e-5)
					dx, dsh, dsc := New(Float32, G, N, d), New(Float32, G, d), New(Float32, G, d)
					LayerNormModulateBackward(dx, dg, db, dsh, dsc, gy, x, mean, rstd, ga, be, scale)
					o.t = append(o.t, y, mean, rstd, dx, dsh, dsc)
					if affine {
						o.t = append(o.t, dg, db)
					}
				}
				s := New(Float32, G, N)
				Sum(s, x, -1, false)
				o.t = append(o.t, s)
				// The DiT's gated residual and its backward (also in place).
				gr := New(Float32, G, N, d)
				GateResidual(gr, x, shift, gy)
				inPlace := x.Clone()
				GateResidual(inPlace, inPlace, shift, gy)
				dh, dgate := New(Float32, G, N, d), New(Float32, G, d)
				GateResidualBackward(dh, dgate, gy, x, scale)
				o.t = append(o.t, gr, inPlace, dh, dgate)
			})
			return o
		}
		simd, scalar := run(true), run(false)
		for i := range simd.t {
			sameBits(t, fmt.Sprintf("width %d, output %d", d, i), simd.t[i], scalar.t[i])
		}
	}
}

// TestColumnSumSIMD checks the column-block kernel of the float32 sums
// over leading axes (a linear layer's bias gradient, SumTo) against the Go
// loop bit for bit: Sum over axis 0 and SumTo over two axes, of contiguous
// inputs and of column slices (rows wider than the sum), at widths that
// cover every tail of the 32- and 4-column blocks, with few and many rows
// (the many split across threads) and values of large spread.
func TestColumnSumSIMD(t *testing.T) {
	if !cpuHasSIMD {
		t.Skipf("SIMD kernels not available (built: %v)", simdBuilt)
	}
	r := NewRNG(77)
	widths := []int{64, 128, 131, 512}
	for d := 1; d <= 40; d++ {
		widths = append(widths, d)
	}
	for _, d := range widths {
		for _, rows := range []int{1, 3, 4096} {
			full := RandN(r, Float32, rows, d+5)
			for i, v := range contig[float32](full) {
				contig[float32](full)[i] = v * float32(math.Pow(10, float64(i%7-3)))
			}
			for _, x := range []*Tensor{full.Slice(1, 2, 2+d).Contiguous(), full.Slice(1, 2, 2+d)} {
				var got, want, got2, want2 *Tensor
				withSIMD(true, func() {
					got = Sum(nil, x, 0, false)
					got2 = SumTo(New(Float32, 1, 1, d), x.Reshape(1, rows, d).Expand(2, rows, d))
				})
				withSIMD(false, func() {
					want = Sum(nil, x, 0, false)
					want2 = SumTo(New(Float32, 1, 1, d), x.Reshape(1, rows, d).Expand(2, rows, d))
				})
				what := fmt.Sprintf("d %d rows %d contiguous %v", d, rows, x.IsContiguous())
				sameBits(t, what+": Sum", got, want)
				sameBits(t, what+": SumTo", got2, want2)
			}
		}
	}
}

// TestAdamWSIMD checks the AVX2 AdamW update against the Go loop bit for
// bit (parameters, first and second moments) at lengths covering every
// tail, with gradients of large spread and zeros, over a few steps.
func TestAdamWSIMD(t *testing.T) {
	if !cpuHasSIMD {
		t.Skipf("SIMD kernels not available (built: %v)", simdBuilt)
	}
	r := NewRNG(91)
	for _, n := range []int{1, 3, 4, 5, 7, 8, 33, 1000, 70001} {
		p0 := RandN(r, Float32, n)
		g := RandN(r, Float32, n)
		for i, x := range contig[float32](g) {
			switch i % 5 {
			case 0:
				contig[float32](g)[i] = 0
			case 1:
				contig[float32](g)[i] = x * 1e4
			case 2:
				contig[float32](g)[i] = x * 1e-6
			}
		}
		type state struct{ p, m, v *Tensor }
		run := func(on bool) state {
			s := state{p0.Clone(), New(Float32, n), New(Float32, n)}
			withSIMD(on, func() {
				for step := 1; step <= 3; step++ {
					AdamWStep(s.p, g, s.m, s.v, 1e-3, 0.9, 0.95, 1e-8, 0.01, step)
				}
			})
			return s
		}
		got, want := run(true), run(false)
		what := fmt.Sprintf("n %d", n)
		sameBits(t, what+": param", got.p, want.p)
		sameBits(t, what+": m", got.m, want.m)
		sameBits(t, what+": v", got.v, want.v)
	}
}
