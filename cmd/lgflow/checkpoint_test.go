package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/internal/damage"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// TestDamagedCheckpoints runs lgflow sample and lgflow recon on damaged
// and foreign checkpoints (built in a temporary directory from freshly
// saved tiny models) and checks that each exits with status 1 and prints
// the loader's error, which names the file and the problem.
func TestDamagedCheckpoints(t *testing.T) {
	dir := t.TempDir()
	tmp := func(name string) string { return filepath.Join(dir, name) }
	vc := vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}
	ae, err := vae.New(vc, 1)
	require.NoError(t, err)
	fc, err := flow.Preset("", "tiny", vc.Latent)
	require.NoError(t, err)
	net, err := dit.New(fc.DiT, tensor.NewRNG(1))
	require.NoError(t, err)
	goodVAE, goodFlow := tmp("vae.safetensors"), tmp("flow.safetensors")
	require.NoError(t, ae.Save(goodVAE, nil))
	require.NoError(t, (&flow.Model{Cfg: fc, VAE: ae, Net: net, Scale: 1, NodeCounts: []int{0, 0, 0, 1, 1}}).Save(goodFlow, nil))
	other, err := vae.New(vc, 2)
	require.NoError(t, err)
	otherVAE := tmp("other-vae.safetensors")
	require.NoError(t, other.Save(otherVAE, nil))

	// The undamaged pair samples.
	code, out, errOut := run(t, "sample", "-vae", goodVAE, "-flow", goodFlow, "-n", "2", "-sampler", "steps=2")
	require.Equal(t, 0, code, errOut)
	assert.Len(t, bytes.Split(bytes.TrimSpace([]byte(out)), []byte("\n")), 2)

	variant := func(src, name string, edit func(f *damage.File)) string {
		f, err := damage.Read(src)
		require.NoError(t, err)
		edit(f)
		require.NoError(t, f.Write(tmp(name)))
		return tmp(name)
	}
	raw, err := os.ReadFile(goodVAE)
	require.NoError(t, err)
	truncVAE := tmp("trunc-vae.safetensors")
	require.NoError(t, os.WriteFile(truncVAE, raw[:100], 0o644)) // inside the header
	rawFlow, err := os.ReadFile(goodFlow)
	require.NoError(t, err)
	truncFlow := tmp("trunc-flow.safetensors")
	require.NoError(t, os.WriteFile(truncFlow, rawFlow[:len(rawFlow)-5], 0o644))
	halfVAE := variant(goodVAE, "f16-vae", func(f *damage.File) { f.Half(safetensors.BF16) })
	badCfgVAE := variant(goodVAE, "cfg-vae", func(f *damage.File) { f.Metadata[trainer.MetaConfig] = "{" })
	shapeFlow := variant(goodFlow, "shape-flow", func(f *damage.File) { f.Reshape("t_embed.2.weight", 16, 64) })
	missingFlow := variant(goodFlow, "missing-flow", func(f *damage.File) { f.Drop("final.bias") })

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"sample: truncated LG-VAE", []string{"sample", "-vae", truncVAE, "-flow", goodFlow}, []string{truncVAE, "invalid header length"}},
		// Half-precision files load (safetensors.LoadModel), but an LG-VAE
		// rounded to BF16 is not the one the flow was trained with.
		{"sample: BF16 LG-VAE", []string{"sample", "-vae", halfVAE, "-flow", goodFlow}, []string{goodFlow, "different weights"}},
		{"sample: truncated flow", []string{"sample", "-vae", goodVAE, "-flow", truncFlow}, []string{truncFlow, "tensor data past end of file"}},
		{"sample: misshapen flow tensor", []string{"sample", "-vae", goodVAE, "-flow", shapeFlow}, []string{shapeFlow, `"t_embed.2.weight": shape [16 64], module has [32 32]`}},
		{"sample: flow tensor missing", []string{"sample", "-vae", goodVAE, "-flow", missingFlow}, []string{missingFlow, `missing "final.bias"`}},
		{"sample: files swapped", []string{"sample", "-vae", goodFlow, "-flow", goodVAE}, []string{goodFlow, "not an LG-VAE checkpoint", `"lgflow.flow"`}},
		{"sample: LG-VAE file as the flow", []string{"sample", "-vae", goodVAE, "-flow", goodVAE}, []string{"not an LG-Flow checkpoint", `"lgflow.vae"`}},
		{"sample: another autoencoder", []string{"sample", "-vae", otherVAE, "-flow", goodFlow}, []string{goodFlow, "different weights"}},
		{"sample: missing file", []string{"sample", "-vae", goodVAE, "-flow", tmp("nope")}, []string{"nope", "no such file"}},
		{"recon: truncated LG-VAE", []string{"recon", "-vae", truncVAE, "-dataset", "planar"}, []string{truncVAE, "invalid header length"}},
		{"recon: corrupted config", []string{"recon", "-vae", badCfgVAE, "-dataset", "planar"}, []string{badCfgVAE, `bad "config" metadata`}},
		{"recon: flow file", []string{"recon", "-vae", goodFlow, "-dataset", "planar"}, []string{goodFlow, "not an LG-VAE checkpoint"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			assert.Equal(t, 1, code, "stderr: %s", errOut)
			assert.Empty(t, out)
			for _, w := range tc.want {
				assert.Contains(t, errOut, w)
			}
		})
	}
}
