package metrics

import (
	"math"

	"lgflow/graph"
	"lgflow/graph/orca"
	"lgflow/spectral"
)

// Histogram settings of the GRAN/SPECTRE statistics (docs/design.md,
// "Evaluation" and "DAG metrics").
const (
	ClusteringBins = 100
	SpectralBins   = 200
	SpectralLow    = -1e-5
	SpectralHigh   = 2.0
	WaveletBins    = 100
	WaveletFilters = 12
)

// Kernel widths σ of the statistics (docs/design.md, "Evaluation").
const (
	SigmaDegree     = 1.0
	SigmaClustering = 0.1
	SigmaOrbit      = 30.0
	SigmaSpectral   = 1.0
	SigmaWavelet    = 1.0
)

// DegreeHistogram returns networkx's degree_histogram: entry d counts the
// nodes of degree d, for d = 0..max degree (an empty slice for a graph
// without nodes). Directed graphs use in-degree + out-degree.
func DegreeHistogram(g *graph.Graph) []float64 {
	return countHistogram(g.N(), g.Degree)
}

// OutDegreeHistogram counts the nodes of each out-degree 0..max.
func OutDegreeHistogram(g *graph.Graph) []float64 {
	return countHistogram(g.N(), g.OutDegree)
}

// InDegreeHistogram counts the nodes of each in-degree 0..max.
func InDegreeHistogram(g *graph.Graph) []float64 {
	return countHistogram(g.N(), g.InDegree)
}

func countHistogram(n int, deg func(int) int) []float64 {
	top := -1
	for u := 0; u < n; u++ {
		top = max(top, deg(u))
	}
	h := make([]float64, top+1)
	for u := 0; u < n; u++ {
		h[deg(u)]++
	}
	return h
}

// OutDegreeSequence returns the out-degrees in node order, the per-graph
// vector of Directo's serial degree code (not a histogram).
func OutDegreeSequence(g *graph.Graph) []float64 { return sequence(g.N(), g.OutDegree) }

// InDegreeSequence returns the in-degrees in node order.
func InDegreeSequence(g *graph.Graph) []float64 { return sequence(g.N(), g.InDegree) }

func sequence(n int, deg func(int) int) []float64 {
	s := make([]float64, n)
	for u := range s {
		s[u] = float64(deg(u))
	}
	return s
}

// ClusteringHistogram returns the histogram of the local clustering
// coefficients graph.Clustering(g) (networkx clustering; the Fagiolo
// directed version for directed graphs) with ClusteringBins bins on [0, 1],
// numpy semantics.
func ClusteringHistogram(g *graph.Graph) []float64 {
	return Histogram(graph.Clustering(g), ClusteringBins, 0, 1)
}

// OrbitVector returns the 15 ORCA node-orbit counts summed over the nodes
// and divided by n (GRAN's orbit statistic; not a histogram, not
// renormalised). A graph without nodes gives the zero vector (the
// reference code would divide by zero).
func OrbitVector(g *graph.Graph) []float64 {
	v := make([]float64, orca.NumOrbits)
	n := g.N()
	if n == 0 {
		return v
	}
	var sum [orca.NumOrbits]int64
	for _, row := range orca.NodeOrbits(g) {
		for k, c := range row {
			sum[k] += c
		}
	}
	for k, c := range sum {
		v[k] = float64(c) / float64(n)
	}
	return v
}

// snapSpectrum moves eigenvalues that rounding pushed just outside the
// known range [0, 2] of a normalised Laplacian back onto it. Without this,
// the eigenvalue 2 of a bipartite graph (every tree) lands above the last
// bin edge for about one graph in five, and numpy.histogram drops it (the
// reference code's results depend on the LAPACK build there).
func snapSpectrum(vals []float64) {
	for i, v := range vals {
		if v > 2 && v < 2+1e-9 {
			vals[i] = 2
		}
	}
}

// spectralPMF histograms eigenvalues into SpectralBins bins on
// (SpectralLow, SpectralHigh) and divides by the count (GRAN's
// spectral_worker). An all-zero histogram stays zero.
func spectralPMF(vals []float64) []float64 {
	h := Histogram(vals, SpectralBins, SpectralLow, SpectralHigh)
	s := 0.0
	for _, c := range h {
		s += c
	}
	if s > 0 {
		for i := range h {
			h[i] /= s
		}
	}
	return h
}

// SpectralHistogram returns the spectral statistic of g (docs/design.md,
// "Evaluation"):
// all eigenvalues of the normalised Laplacian (spectral.NormalizedLaplacian),
// histogrammed into 200 bins on (-1e-5, 2) and divided by their count.
// Eigenvalues within 1e-9 above 2 are counted as 2 (see the package
// documentation).
func SpectralHistogram(g *graph.Graph) ([]float64, error) {
	return spectralHistogram(spectral.NewSolver(), g)
}

func spectralHistogram(s *spectral.Solver, g *graph.Graph) ([]float64, error) {
	n := g.N()
	if n == 0 {
		return make([]float64, SpectralBins), nil
	}
	vals, _, err := s.SymmetricEigen(spectral.NormalizedLaplacian(g), n, false)
	if err != nil {
		return nil, err
	}
	snapSpectrum(vals)
	return spectralPMF(vals), nil
}

// PageRankSpectralHistogram returns the DAG spectral statistic
// (docs/design.md, "DAG metrics"): the eigenvalues of
// spectral.PageRankLaplacian(g, 0.95)
// histogrammed like SpectralHistogram.
func PageRankSpectralHistogram(g *graph.Graph) ([]float64, error) {
	vals, _, err := pageRankEigen(spectral.NewSolver(), g, false)
	if err != nil {
		return nil, err
	}
	return spectralPMF(vals), nil
}

func pageRankEigen(s *spectral.Solver, g *graph.Graph, vectors bool) ([]float64, []float64, error) {
	n := g.N()
	if n == 0 {
		return nil, nil, nil
	}
	l, err := spectral.PageRankLaplacian(g, spectral.DefaultAlpha)
	if err != nil {
		return nil, nil, err
	}
	vals, vecs, err := s.SymmetricEigen(l, n, vectors)
	if err != nil {
		return nil, nil, err
	}
	snapSpectrum(vals)
	return vals, vecs, nil
}

// Abspline filter bank of PyGSP (pygsp.filters.Abspline with 12 filters on
// a graph with λ_max = 2), used by the wavelet statistic.

// AbsplineGamma is γ = 1 + 2/(3√3) ≈ 1.38490, the maximum on [1, 2] of
// the spline AbsplineKernel, reached at x = 2 - 1/√3. PyGSP finds it
// numerically; it scales the low-pass filter g₀ and bounds the wavelet
// histograms.
var AbsplineGamma = 1 + 2/(3*math.Sqrt(3))

// AbsplineKernel is PyGSP's cubic-spline band-pass kernel with α = β = 2,
// t₁ = 1, t₂ = 2: s(x) = x² for x ≤ 1, -5 + 11x - 6x² + x³ on (1, 2), and
// 4/x² for x ≥ 2.
func AbsplineKernel(x float64) float64 {
	switch {
	case x < 1:
		return x * x
	case x < 2:
		return -5 + 11*x - 6*x*x + x*x*x
	}
	return 4 / (x * x)
}

// AbsplineScales returns the 11 band-pass scales a_i =
// exp(linspace(ln 20, ln 0.5, 11)) of the filter bank (t₂/λ_min down to
// t₁/λ_max with λ_max = 2, λ_min = λ_max/20).
func AbsplineScales() []float64 {
	const num = WaveletFilters - 1
	lo, hi := math.Log(20), math.Log(0.5)
	a := make([]float64, num)
	step := (hi - lo) / float64(num-1)
	for i := range a {
		a[i] = math.Exp(float64(float64(i)*step) + lo)
	}
	a[num-1] = math.Exp(hi)
	return a
}

// Abspline evaluates the 12 filters of the bank at x into dst (length 12):
// dst[0] = γ·exp(-(x/0.06)⁴) (the low-pass filter, 0.06 = 0.6·λ_min) and
// dst[i+1] = AbsplineKernel(a_i·x) for the scales a_i of AbsplineScales.
func Abspline(dst []float64, x float64, scales []float64) {
	const lminfac = 0.6 * 0.1
	t := x / lminfac
	t *= t
	dst[0] = AbsplineGamma * math.Exp(-t*t)
	for i, a := range scales {
		dst[i+1] = AbsplineKernel(a * x)
	}
}

// WaveletHistogram returns the wavelet statistic of a directed graph
// (docs/design.md, "DAG metrics"): with L = UΛUᵀ the PageRank directed
// Laplacian, for each
// of the 12 Abspline filters g the row-wise sums of squares of
// U·diag(g(λ))·Uᵀ (equal to Σ_j U_ij² g(λ_j)²), histogrammed into 100 bins
// on [0, γ]; the 12 histograms concatenated (1200 counts).
func WaveletHistogram(g *graph.Graph) ([]float64, error) {
	return waveletHistogram(spectral.NewSolver(), g)
}

func waveletHistogram(s *spectral.Solver, g *graph.Graph) ([]float64, error) {
	out := make([]float64, WaveletFilters*WaveletBins)
	n := g.N()
	if n == 0 {
		return out, nil
	}
	vals, vecs, err := pageRankEigen(s, g, true)
	if err != nil {
		return nil, err
	}
	scales := AbsplineScales()
	gv := make([]float64, n*WaveletFilters) // g_f(λ_j)² at [j*12+f]
	tmp := make([]float64, WaveletFilters)
	for j, l := range vals {
		Abspline(tmp, l, scales)
		for f, v := range tmp {
			gv[j*WaveletFilters+f] = v * v
		}
	}
	edges := BinEdges(WaveletBins, 0, AbsplineGamma)
	norms := make([]float64, WaveletFilters*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			u := vecs[i*n+j]
			u *= u
			for f := 0; f < WaveletFilters; f++ {
				norms[f*n+i] += u * gv[j*WaveletFilters+f]
			}
		}
	}
	for f := 0; f < WaveletFilters; f++ {
		histogramEdges(out[f*WaveletBins:(f+1)*WaveletBins], norms[f*n:(f+1)*n], edges)
	}
	return out, nil
}
