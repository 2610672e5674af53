package vae

// Presets for the "moses" molecule dataset (package graph/mol): 7 node
// classes (atom types C, N, S, O, F, Cl, Br) and 4 edge classes (bond
// types single, double, triple, aromatic; the decoder adds "no bond").
//
//   - "moses/paper" is the configuration of the paper's code
//     (docs/design.md, "Training recipes"): k 16, d 24, h 384, rho 8 x 384,
//     DeepSet 24, eta 0.05; AdamW
//     2e-4 -> 1e-4 over 20,000 steps, warmup 400, batch 512. The paper's
//     table says h 256, rho 16 x 256, eta 0.005 instead; the code's values
//     are the ones that produced its numbers.
//   - "moses/cpu" is a small model that trains on two cores, with the
//     optimisation aids of the other cpu presets (LogVarInit, ScaleEigvecs,
//     PhiGate, gradient clipping).
//
// Both read the 10 atom and 6 bond features the reference's encoder reads
// (graph.Attrs, attached by mol's dataset loaders) and normalise with
// GraphNorm, like every other preset.
func init() {
	RegisterPreset("moses", "paper", Preset{
		Model: Config{K: 16, Latent: 24, PhiWidth: 384, Layers: 8, Width: 384, DeepSet: 24, Eta: 0.05,
			NodeClasses: 7, EdgeClasses: 4, NodeAttrs: 10, EdgeAttrs: 6, Norm: GraphNorm, KLWeight: 1e-6, SignFlips: true},
		Train: paperTrain(2e-4, 1e-4, 20000, 400, 512),
	})
	RegisterPreset("moses", "cpu", Preset{
		Model: Config{K: 16, Latent: 16, PhiWidth: 64, Layers: 6, Width: 64, DeepSet: 16, Eta: 0.05,
			NodeClasses: 7, EdgeClasses: 4, NodeAttrs: 10, EdgeAttrs: 6, Norm: GraphNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true},
		Train: TrainConfig{Steps: 20000, BatchSize: 64, LR: 1e-3, MinLR: 1e-4, Warmup: 200, WeightDecay: 1e-4,
			Beta1: 0.9, Beta2: 0.95, ValEvery: 500, CheckpointEvery: 250, ClipNorm: 1},
	})
}
