package flow

import (
	"math"
	"testing"

	"lgflow/tensor"
)

// TestStandardizeRoundTrip: fromFlow inverts toFlow on real rows, zeroes
// padding, and the standardised training latents have zero mean and unit
// spread per dimension.
func TestStandardizeRoundTrip(t *testing.T) {
	r := tensor.NewRNG(2)
	const B, N, d = 2, 4, 3
	z := tensor.RandN(r, tensor.Float64, B, N, d)
	mask := tensor.FromFloat64([]float64{1, 1, 1, 1, 1, 1, 0, 0}, B, N)
	for _, tc := range []struct {
		name string
		m    *Model
	}{
		{"global scale", &Model{Scale: 0.25}},
		{"per dimension", &Model{Cfg: Config{Standardize: true}, Scale: 1, Mean: []float64{1, -2, 3}, Std: []float64{0.5, 2, 4}}},
	} {
		x := z.Clone()
		tc.m.toFlow(x, mask)
		tc.m.fromFlow(x, mask)
		for b := range B {
			for j := range N {
				for k := range d {
					want := z.At(b, j, k) * mask.At(b, j)
					if math.Abs(x.At(b, j, k)-want) > 1e-12 {
						t.Fatalf("%s: (%d, %d, %d) = %g, want %g", tc.name, b, j, k, x.At(b, j, k), want)
					}
				}
			}
		}
		if err := tc.m.checkNorm(d); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	lat := &Latents{}
	for range 3 {
		mu := tensor.RandN(r, tensor.Float32, 5, d)
		for i := range 5 {
			mu.Set(10+3*mu.At(i, 1), i, 1) // dimension 1: mean 10, std 3
		}
		lat.Mu = append(lat.Mu, mu)
	}
	mean, std := lat.latentStats()
	m := &Model{Cfg: Config{Standardize: true}, Scale: 1, Mean: mean, Std: std}
	if math.Abs(mean[1]-10) > 3 || std[1] < 1 {
		t.Errorf("dimension 1: mean %g, std %g, want about 10 and 3", mean[1], std[1])
	}
	var s, s2 float64
	n := 0
	for _, mu := range lat.Mu {
		x := mu.To(tensor.Float64).Reshape(1, 5, d).Clone()
		m.toFlow(x, tensor.FromFloat64([]float64{1, 1, 1, 1, 1}, 1, 5))
		for i := range 5 {
			s += x.At(0, i, 1)
			s2 += x.At(0, i, 1) * x.At(0, i, 1)
			n++
		}
	}
	if mu, v := s/float64(n), s2/float64(n); math.Abs(mu) > 1e-6 || math.Abs(v-1) > 1e-6 {
		t.Errorf("standardised dimension 1: mean %g, second moment %g", mu, v)
	}
	for _, bad := range []*Model{
		{Cfg: Config{Standardize: true}, Mean: []float64{0, 0}, Std: []float64{1, 1}},
		{Cfg: Config{Standardize: true}, Mean: []float64{0, 0, 0}, Std: []float64{1, 0, 1}},
		{Cfg: Config{Standardize: true}, Mean: []float64{0, math.NaN(), 0}, Std: []float64{1, 1, 1}},
		{Mean: []float64{0, 0, 0}, Std: []float64{1, 1, 1}},
	} {
		if err := bad.checkNorm(d); err == nil {
			t.Errorf("checkNorm accepted %+v", bad)
		}
	}
}
