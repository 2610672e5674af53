// Package vae implements LG-VAE, the Laplacian autoencoder of LG-Flow: a
// permutation-equivariant variational autoencoder that maps every node of a
// graph to a Latent-dimensional vector and decodes the latents back to the
// graph, near-losslessly.
//
// # Encoder
//
// For every node i and each of the K lowest Laplacian eigenpairs (u_j, λ_j)
// (the magnetic Laplacian for DAGs, whose complex eigenvectors enter as
// real and imaginary parts), phi maps (u_ij, λ_j + ε_j) to a vector, and
// the vectors are summed over the eigen-slots; slots a small graph does not
// have are masked out. ε is a learned eigenvalue offset. Node-label
// embeddings are added, then rho, a stack of residual GINE layers
// (DirGNN-wrapped for DAGs, with categorical edge labels as a per-class
// table), produces node states; two heads give the posterior mean and
// log-variance. Training may flip eigenvector signs and, with Eta > 0,
// perturbs the eigenvector rows of nodes in non-trivial 1-WL orbits.
//
// # Decoder
//
// Node labels come from a linear head. For edges, a linear map splits each
// latent into per-class query and key vectors (class 0 meaning "no edge");
// their scaled dot products, symmetrised for undirected graphs (combined
// with the magnetic factor for DAGs), pass through a row-wise DeepSet, and
// the argmax over classes decides each ordered pair. Undirected graphs keep
// an edge where either direction predicts one.
//
// # Choices that differ from the reference code
//
// See docs/design.md, "Departures from the reference code": padded
// eigen-slots are masked; in
// evaluation mode a graph's latents never depend on the rest of its batch
// (GraphNorm, per-graph statistics, where the reference's BatchNorm uses the
// batch's; orbit noise seeded from the graph itself); q is
// one value per model; the score scale is 1/sqrt(d). Three options, off in
// the paper presets and on in the cpu presets, make small models learn
// much faster on two cores (the Config fields say why): ScaleEigvecs,
// LogVarInit and PhiGate (a multiplicative path u·g(λ) inside phi, which
// stays a per-(node, slot) function summed over slots).
//
// # Use
//
// Train with Train (resumable, cancellable, with progress callbacks),
// measure with Reconstruct, and use a trained model through Load,
// EncodeGraphs and DecodeGraphs. The lgflow command wraps all of it
// (train-vae, recon).
package vae
