// Package torchref holds reference tests of lgflow's models against an
// independent PyTorch implementation (the project's issue 18): the LG-VAE
// encoder, decoder and loss with every parameter gradient, and the DiT
// denoiser's forward pass (and the gradients of a fixed linear probe of its
// output), all in float64.
//
// The package has no API; everything is in its tests and testdata:
//
//   - testdata/*.in.safetensors: small models with fixed seeds (weights
//     under "param.<name>", the names of the models' Params), their
//     configuration as JSON in the metadata, and fixed inputs (graphs,
//     their vae.Features, DiT tokens, times, masks, self-conditioning);
//   - testdata/lgvae_dit.py: the PyTorch implementation, written from
//     lgflow's semantics, which reads every *.in.safetensors (parsing the
//     format itself) and writes the matching *.out.safetensors;
//   - testdata/*.out.safetensors: PyTorch's outputs, committed, so the
//     tests need neither Python nor PyTorch.
//
// The tests accept |lgflow − PyTorch| ≤ 1e-5 + 1e-5·|PyTorch| per entry,
// the tolerance of issue 18; the two agree to about 1e-15 absolute and
// 1e-11 relative. Not covered: directed models (magnetic Laplacian,
// DirGNN, magnetic decoder), orbit noise (Eta), BatchNorm, the refinement
// network, and training mode (sign flips, sampled latents).
//
// To regenerate everything (needs Python 3 with torch and numpy; PYTHON
// names the interpreter, python3 by default):
//
//	go test -tags reference -run TestGenerate ./internal/torchref
package torchref
