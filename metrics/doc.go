// Package metrics evaluates sets of generated graphs against reference
// graphs with the statistics of GRAN, SPECTRE, DeFoG and Directo as used
// in the LG-Flow paper (docs/design.md, "Evaluation" and "DAG metrics"),
// reproducing the reference code's
// numbers.
//
// MMD. MMD returns the biased estimator of the squared maximum mean
// discrepancy with a Gaussian kernel on the total-variation distance
// (GaussianTV) or, as an option, on the earth mover's distance
// (GaussianEMD). Histogram statistics are normalised to v/(Σv + 1e-6) and
// zero-padded to equal length first, exactly as GRAN's compute_mmd.
//
// Undirected statistics (per graph): DegreeHistogram (σ = 1),
// ClusteringHistogram (100 bins on [0, 1], σ = 0.1), OrbitVector (ORCA
// orbit counts summed over nodes / n, not normalised, σ = 30) and
// SpectralHistogram (normalised-Laplacian eigenvalues in 200 bins on
// (-1e-5, 2), σ = 1). Histograms follow numpy.histogram (Histogram,
// BinEdges): bin i holds edges[i] ≤ v < edges[i+1], the last bin is closed.
//
// DAG statistics: out- and in-degree (histograms, or with
// Options.DirectoCompat the swapped per-node degree sequences of Directo's
// code), directed clustering, the spectrum of the PageRank directed
// Laplacian (PageRankSpectralHistogram) and the wavelet statistic with
// PyGSP's 12-filter Abspline bank (WaveletHistogram).
//
// Validity, uniqueness, novelty and V.U.N. follow SPECTRE/DeFoG (VUN),
// with isomorphism look-ups bucketed by iso.Index. Evaluate runs the set
// of metrics for a Kind (Planar, Tree, Ego, DAG, Generic) and returns a
// Report that prints like the paper's tables and marshals to JSON.
//
// One deliberate difference from the reference code: eigenvalues that
// rounding puts just above 2 (the top eigenvalue of the normalised
// Laplacian of a bipartite graph, e.g. every tree) are counted in the last
// bin. numpy.histogram drops them, which in the reference happens for
// about one 64-node tree in five depending on the LAPACK build.
package metrics
