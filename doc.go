// Package lgflow generates graphs with latent diffusion: LG-VAE, a
// permutation-equivariant Laplacian autoencoder that maps every node of a
// graph to a latent vector and back near-losslessly, and LG-Flow, flow
// matching with a Diffusion Transformer in that latent space.
//
// The library is layered one way:
//
//	tensor <- autograd <- nn <- {vae, dit} <- flow <- {cmd/lgflow, examples}
//
// with graph, spectral and metrics beside it needing no ML stack, and cuda
// plugging a GPU backend into tensor at run time: vae.TrainOptions.Backend,
// flow.TrainOptions.Backend and flow.Model.ToBackend put training and
// sampling on it (lgflow train-vae, train-flow and sample -device cuda).
// See README.md.
package lgflow
