package cuda

import (
	"testing"

	"lgflow/tensor/backendtest"
)

// TestEmulatedDiTOps runs the conformance cases of the diffusion
// transformer's fused ops, of LayerNorm whose row statistics they share
// (row_stats) and of the LG-VAE decoder's fused DeepSet on the emulated
// backend (a subset of TestEmulatedConformance, quicker to iterate on).
func TestEmulatedDiTOps(t *testing.T) {
	b := emulatedBackend(t)
	for _, m := range []string{"LayerNorm", "LayerNormBackward", "LayerNormModulate", "LayerNormModulateBackward", "GateResidual",
		"GateResidualBackward", "BiasGELU", "BiasGELUBackward", "FlashAttention", "FlashAttentionBackward",
		"DeepSetScores", "DeepSetScoresBackward"} {
		t.Run(m, func(t *testing.T) { backendtest.RunOne(t, b, m) })
	}
}
