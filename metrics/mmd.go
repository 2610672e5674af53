package metrics

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// Kernel is a positive-definite kernel on histogram or feature vectors of
// equal length (MMD pads them with zeros first). It must not modify its
// arguments and must be safe for concurrent use.
type Kernel func(x, y []float64) float64

// GaussianTV returns the kernel K(x, y) = exp(-TV(x, y)² / (2σ²)) with the
// total-variation distance TV(x, y) = ½ Σ_i |x_i - y_i| (GRAN's
// gaussian_tv, used by every graph MMD in the paper).
func GaussianTV(sigma float64) Kernel {
	s2 := 2 * sigma * sigma
	return func(x, y []float64) float64 {
		d := 0.0
		for i, v := range x {
			d += math.Abs(v - y[i])
		}
		d /= 2
		return math.Exp(-d * d / s2)
	}
}

// GaussianL2 returns the kernel K(x, y) = exp(-‖x - y‖² / (2σ²)) (GRAN's
// gaussian, used by the orbit MMD when the EMD option is on).
func GaussianL2(sigma float64) Kernel {
	s2 := 2 * sigma * sigma
	return func(x, y []float64) float64 {
		d := 0.0
		for i, v := range x {
			t := v - y[i]
			d += t * t
		}
		return math.Exp(-d / s2)
	}
}

// GaussianEMD returns the kernel K(x, y) = exp(-EMD(x, y)² / (2σ²)) where
// EMD is the earth mover's distance between the histograms x and y with
// ground distance |i - j| / scaling between bins i and j (GRAN's
// gaussian_emd with pyemd).
//
// In one dimension the transport cost of equal masses is Σ_k |X_k - Y_k|
// over the cumulative sums X, Y. When the masses differ (after the
// v/(Σv + 1e-6) normalisation they differ by at most about 1e-6), the
// excess is charged as pyemd does by default, at the largest ground
// distance, and the common mass is transported after scaling both
// histograms to it; for such tiny excesses this matches pyemd to far
// below printed precision.
func GaussianEMD(sigma, scaling float64) Kernel {
	s2 := 2 * sigma * sigma
	return func(x, y []float64) float64 {
		e := EMD1D(x, y, scaling)
		return math.Exp(-e * e / s2)
	}
}

// EMD1D returns the one-dimensional earth mover's distance between the
// histograms x and y (equal lengths) with ground distance |i - j|/scaling;
// see GaussianEMD for unequal masses.
func EMD1D(x, y []float64, scaling float64) float64 {
	mx, my := 0.0, 0.0
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	common := min(mx, my)
	fx, fy := 1.0, 1.0
	if mx > 0 {
		fx = common / mx
	}
	if my > 0 {
		fy = common / my
	}
	cost, cx, cy := 0.0, 0.0, 0.0
	for i := 0; i+1 < len(x); i++ {
		cx += x[i] * fx
		cy += y[i] * fy
		cost += math.Abs(cx - cy)
	}
	cost /= scaling
	if len(x) > 1 {
		cost += math.Abs(mx-my) * float64(len(x)-1) / scaling
	}
	return cost
}

// NormalizeHist returns v / (Σv + 1e-6) as a new slice: the pmf
// normalisation GRAN's compute_mmd applies to histogram statistics.
func NormalizeHist(v []float64) []float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / (s + 1e-6)
	}
	return out
}

// ErrEmptySet is returned (wrapped) by MMD when a sample set is empty.
var ErrEmptySet = errors.New("metrics: empty sample set")

// MMD returns the biased estimator of the squared maximum mean discrepancy
// between the samples x and y (docs/design.md, "Evaluation"):
//
//	MMD² = mean_{x,x'} K(x,x') + mean_{y,y'} K(y,y') - 2 mean_{x,y} K(x,y),
//
// all pairs including the diagonal, no square root. When hist is true
// every vector is first normalised by NormalizeHist. Vectors of different
// lengths are zero-padded to the longest. The kernel matrices are computed
// on all cores. The inputs are not modified.
func MMD(x, y [][]float64, k Kernel, hist bool) (float64, error) {
	if len(x) == 0 || len(y) == 0 {
		return 0, fmt.Errorf("%w (%d and %d samples)", ErrEmptySet, len(x), len(y))
	}
	width := 0
	for _, v := range x {
		width = max(width, len(v))
	}
	for _, v := range y {
		width = max(width, len(v))
	}
	prep := func(s [][]float64) [][]float64 {
		out := make([][]float64, len(s))
		store := make([]float64, len(s)*width)
		for i, v := range s {
			if hist {
				v = NormalizeHist(v)
			}
			out[i] = store[i*width : (i+1)*width]
			copy(out[i], v)
		}
		return out
	}
	px, py := prep(x), prep(y)
	kxx := meanKernel(px, px, k, true)
	kyy := meanKernel(py, py, k, true)
	kxy := meanKernel(px, py, k, false)
	return kxx + kyy - 2*kxy, nil
}

// meanKernel returns the mean of K(a_i, b_j) over all pairs, computing
// rows in parallel; when sym (a == b) only the upper triangle is
// evaluated.
func meanKernel(a, b [][]float64, k Kernel, sym bool) float64 {
	rows := make([]float64, len(a))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(a)))
	var wg sync.WaitGroup
	next := make(chan int, len(a))
	for i := range a {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s := 0.0
				if sym {
					s = k(a[i], b[i])
					for j := i + 1; j < len(b); j++ {
						s += 2 * k(a[i], b[j])
					}
				} else {
					for j := range b {
						s += k(a[i], b[j])
					}
				}
				rows[i] = s
			}
		}()
	}
	wg.Wait()
	s := 0.0
	for _, r := range rows {
		s += r
	}
	return s / float64(len(a)*len(b))
}
