// Package spectral computes graph Laplacians and their low eigenpairs, the
// positional features LG-VAE encodes (docs/design.md, "Pre-processing").
//
// Laplacians (all dense, row-major n x n, built from a *graph.Graph):
//
//   - Laplacian: the combinatorial Laplacian L = D - A;
//   - NormalizedLaplacian: I - D^{-1/2} A D^{-1/2}, with a zero diagonal
//     entry for isolated nodes (as networkx);
//   - MagneticLaplacian: the Hermitian L_q = D_s - A_s ⊙ exp(iΘ) with
//     A_s = A ∨ Aᵀ and Θ = 2πq(A - Aᵀ), returned as real and imaginary parts;
//   - PageRankLaplacian: Chung's directed Laplacian of the PageRank walk,
//     I - (Π^{1/2} P Π^{-1/2} + Π^{-1/2} Pᵀ Π^{1/2})/2 (docs/design.md,
//     "DAG metrics").
//
// Directed graphs are symmetrised (A ∨ Aᵀ) for the combinatorial and
// normalised Laplacians.
//
// Eigen returns the k lowest eigenpairs of one of these operators in
// ascending order, with eigenvalues clamped to be ≥ 0, unit eigenvectors
// under a fixed sign (or, for the magnetic Laplacian, phase) convention,
// and a slot mask when the graph has fewer than k nodes. Graphs with up to
// Options.DenseLimit nodes (600 by default) are solved densely: when
// k ≤ n/2 by Householder tridiagonalisation, tridiagonal eigenvalues and
// inverse iteration for the k wanted vectors only (the LAPACK Dsyevx
// recipe, self-checked, falling back to Dsyev), otherwise by Dsyev. Larger
// graphs use Chebyshev-filtered block subspace iteration with full
// reorthogonalisation on the sparse operator (a block of k plus guard
// vectors, so repeated eigenvalues are resolved). The Hermitian magnetic
// Laplacian H = R + iI is solved through its real symmetric embedding
// [[R, -I], [I, R]] of size 2n, whose spectrum is that of H with every
// eigenvalue doubled; one complex vector x + iy is extracted per
// eigenvalue (per cluster of equal eigenvalues, a complex-orthonormal
// basis of the cluster's span).
//
// Preprocess runs Eigen and graph.WLOrbits over a whole data set on all
// cores and returns float32 features ready to batch.
//
// Sign and phase conventions. A real eigenvector is flipped so that its
// entry of largest magnitude is positive; entries within a relative 1e-9 of
// the largest count as ties, and the lowest index among them wins. A complex
// eigenvector is multiplied by the unit phase that makes that entry (chosen
// the same way) real and positive. Within an eigenspace of dimension > 1
// the basis itself is whatever the solver returns (deterministic for a
// given solver and input, but not canonical); compare such eigenvectors by
// their projectors.
package spectral
