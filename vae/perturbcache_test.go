package vae

import (
	"testing"

	"lgflow/tensor"
)

// TestCachePerturbation: a graph is perturbed at most `variants` times,
// whatever batch it comes in and however it is padded; later visits reuse
// a stored result; padding stays zero.
func TestCachePerturbation(t *testing.T) {
	calls, graphs := 0, 0
	p := func(z *tensor.Tensor, sizes []int, r *tensor.RNG) (*tensor.Tensor, error) {
		calls++
		graphs += len(sizes)
		out := tensor.AddScalar(nil, z, r.Uniform()) // a fresh offset per call
		for g, s := range sizes {
			for j := s; j < z.Dim(1); j++ {
				for k := range z.Dim(2) {
					out.Set(0, g, j, k)
				}
			}
		}
		return out, nil
	}
	c := CachePerturbation(p, 2)
	r := tensor.NewRNG(1)
	a := tensor.RandN(r, tensor.Float32, 2, 4, 3) // graph A (4 nodes), graph B (2 nodes)
	for k := range 3 {
		a.Set(0, 1, 2, k)
		a.Set(0, 1, 3, k)
	}
	first := map[int][]float64{}
	for visit := range 5 {
		out, err := c(a, []int{4, 2}, r)
		if err != nil {
			t.Fatal(err)
		}
		for g := range 2 {
			first[g] = append(first[g], out.At(g, 0, 0)-a.At(g, 0, 0))
		}
		if out.At(1, 3, 0) != 0 {
			t.Fatalf("visit %d: padding not zero", visit)
		}
	}
	if calls != 2 || graphs != 4 {
		t.Errorf("%d calls for %d graphs, want 2 calls (two variants of both graphs)", calls, graphs)
	}
	// Graph B alone, padded differently, is recognised.
	b := tensor.New(tensor.Float32, 1, 2, 3)
	for j := range 2 {
		for k := range 3 {
			b.Set(a.At(1, j, k), 0, j, k)
		}
	}
	out, err := c(b, []int{2}, r)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("graph B in another batch was perturbed again (%d calls)", calls)
	}
	off := out.At(0, 0, 0) - b.At(0, 0, 0)
	if d0, d1 := off-first[1][0], off-first[1][1]; d0*d0 > 1e-10 && d1*d1 > 1e-10 {
		t.Errorf("graph B's offset %g is none of its stored ones %v", off, first[1][:2])
	}
}
