package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/flow"
	"lgflow/vae"
)

// TestResumeKeepsCheckpointConfig checks the training commands' resume
// rule: a run into a directory with a training state continues it with
// its checkpoint's configuration (not the preset's or the defaults),
// -config settings given override it and are listed, and a -preset of
// another architecture is refused.
func TestResumeKeepsCheckpointConfig(t *testing.T) {
	t.Run("train-vae", func(t *testing.T) {
		dir := t.TempDir()
		code, _, errOut := run(t, tinyVAE(dir, 4)...)
		require.Equal(t, 0, code, errOut)
		// No model settings and no lr: the preset's width and learning
		// rate must not come back.
		base := []string{"train-vae", "-dataset", "tree", "-train-split", "val", "-val-split", "test", "-max-train", "16", "-out", dir}
		code, _, errOut = run(t, append(base, "-config", "steps=6")...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, "steps: 4 → 6")
		assert.NotContains(t, errOut, "lr:")
		p, err := vae.CheckpointConfig(filepath.Join(dir, vae.StateFile))
		require.NoError(t, err)
		assert.Equal(t, 8, p.Model.Width)
		assert.Equal(t, 0.05, p.Train.LR)
		assert.Equal(t, 6, p.Train.Steps)

		code, _, errOut = run(t, append(base, "-config", "steps=7,lr=0.01")...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, "lr: 0.05 → 0.01")
		p, err = vae.CheckpointConfig(filepath.Join(dir, vae.StateFile))
		require.NoError(t, err)
		assert.Equal(t, 0.01, p.Train.LR)

		code, _, errOut = run(t, append(base, "-preset", "cpu")...)
		assert.Equal(t, 2, code, errOut)
		assert.Contains(t, errOut, "another model")
	})
	t.Run("train-flow", func(t *testing.T) {
		data, v := tinyTPU(t)
		out := t.TempDir()
		base := []string{"train-flow", "-vae", v, "-dataset", "tpu", "-data", data, "-train-split", "val", "-out", out}
		code, _, errOut := run(t, append(base, "-preset", "tiny", "-config", "steps=2,lr=0.003,time_mean=0.5")...)
		require.Equal(t, 0, code, errOut)
		code, _, errOut = run(t, append(base, "-config", "steps=3")...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, "steps: 2 → 3")
		assert.False(t, strings.Contains(errOut, "lr:") || strings.Contains(errOut, "time_mean:"), errOut)
		saved := func() flow.Config {
			c, _, err := flow.CheckpointConfig(filepath.Join(out, flow.StateFile))
			require.NoError(t, err)
			return c
		}
		c := saved()
		assert.Equal(t, 0.003, c.LR)
		assert.Equal(t, 0.5, c.TimeMean)
		assert.Equal(t, 3, c.Steps)

		code, _, errOut = run(t, append(base, "-config", "steps=4", "-config", "time_mean=1")...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, "time_mean: 0.5 → 1")

		// A data-end expert's settings: a narrower time band and the
		// decoder loss, switched on when resuming.
		code, _, errOut = run(t, append(base, "-config", "steps=5,time_std=0.35,decoder_weight=100")...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, "time_std: unset → 0.35")
		assert.Contains(t, errOut, "decoder_weight: unset → 100")
		c = saved()
		assert.Equal(t, 0.35, c.TimeStd)
		assert.Equal(t, 100.0, c.DecoderWeight)
		assert.Equal(t, 5, c.Steps)
		code, _, errOut = run(t, append(base, "-config", "steps=6,decoder_weight=-1")...)
		assert.Equal(t, 2, code, errOut)
		assert.Contains(t, errOut, "DecoderWeight")

		code, _, errOut = run(t, append(base, "-preset", "cpu")...)
		assert.Equal(t, 2, code, errOut)
		assert.Contains(t, errOut, "another denoiser")
	})
}
