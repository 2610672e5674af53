package moses

import (
	"context"
	"fmt"
	"math"
	"math/bits"

	"gonum.org/v1/gonum/mat"
)

func popcount(x uint64) int { return bits.OnesCount64(x) }

// Embedder maps SMILES to fixed-length feature vectors. The Fréchet
// ChemNet Distance needs ChemNet's penultimate-layer activations (fcd_torch
// / the fcd package); its weights are not available to this project, so
// FCD works with any model plugged in here and reports a distance in that
// model's feature space. Invalid SMILES may be skipped by the embedder but
// every returned vector must have the same length.
type Embedder interface {
	Embed(ctx context.Context, smiles []string) ([][]float64, error)
}

// FCD returns the Fréchet distance between Gaussians fitted to the
// embeddings of gen and ref:
//
//	d = |mu_g - mu_r|^2 + Tr(S_g + S_r - 2 (S_g S_r)^(1/2))
//
// with unbiased covariances, as fcd_torch computes it, and 0 where
// rounding leaves a tiny negative value. It needs at least two vectors on
// each side.
func FCD(ctx context.Context, e Embedder, gen, ref []string) (float64, error) {
	eg, err := e.Embed(ctx, gen)
	if err != nil {
		return 0, fmt.Errorf("moses: FCD: embedding generated set: %w", err)
	}
	er, err := e.Embed(ctx, ref)
	if err != nil {
		return 0, fmt.Errorf("moses: FCD: embedding reference set: %w", err)
	}
	return FrechetDistance(eg, er)
}

// FrechetDistance returns the Fréchet distance between Gaussians fitted to
// two sets of vectors (see FCD).
func FrechetDistance(a, b [][]float64) (float64, error) {
	if len(a) < 2 || len(b) < 2 {
		return 0, fmt.Errorf("moses: Fréchet distance needs at least 2 vectors per set, got %d and %d", len(a), len(b))
	}
	d := len(a[0])
	for _, set := range [][][]float64{a, b} {
		for i, v := range set {
			if len(v) != d {
				return 0, fmt.Errorf("moses: embedding %d has length %d, want %d", i, len(v), d)
			}
		}
	}
	mu1, s1 := meanCov(a, d)
	mu2, s2 := meanCov(b, d)
	diff := 0.0
	for k := range mu1 {
		x := mu1[k] - mu2[k]
		diff += x * x
	}
	// Tr((S1 S2)^(1/2)) = sum sqrt(eig(S1^(1/2) S2 S1^(1/2)))
	var es mat.EigenSym
	if !es.Factorize(s1, true) {
		return 0, fmt.Errorf("moses: eigendecomposition of the covariance failed")
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	sq := mat.NewDense(d, d, nil)
	for k, v := range vals {
		if v < 0 {
			v = 0
		}
		r := math.Sqrt(v)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				sq.Set(i, j, sq.At(i, j)+r*vecs.At(i, k)*vecs.At(j, k))
			}
		}
	}
	var t1, t2 mat.Dense
	t1.Mul(sq, s2)
	t2.Mul(&t1, sq)
	sym := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			sym.SetSym(i, j, 0.5*(t2.At(i, j)+t2.At(j, i)))
		}
	}
	if !es.Factorize(sym, false) {
		return 0, fmt.Errorf("moses: eigendecomposition of the covariance product failed")
	}
	trSqrt := 0.0
	for _, v := range es.Values(nil) {
		if v > 0 {
			trSqrt += math.Sqrt(v)
		}
	}
	tr := 0.0
	for i := 0; i < d; i++ {
		tr += s1.At(i, i) + s2.At(i, i)
	}
	// A distance is not negative: for close sets the trace terms cancel, and
	// rounding (which depends on the build: GOAMD64=v3 fuses products) can
	// leave a remainder of either sign, which the square roots of a
	// near-singular covariance's eigenvalues amplify to ~1e-7 of the trace.
	return max(diff+tr-2*trSqrt, 0), nil
}

func meanCov(x [][]float64, d int) ([]float64, *mat.SymDense) {
	n := float64(len(x))
	mu := make([]float64, d)
	for _, v := range x {
		for k, e := range v {
			mu[k] += e
		}
	}
	for k := range mu {
		mu[k] /= n
	}
	c := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			s := 0.0
			for _, v := range x {
				s += (v[i] - mu[i]) * (v[j] - mu[j])
			}
			c.SetSym(i, j, s/(n-1))
		}
	}
	return mu, c
}
