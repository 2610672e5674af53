package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/vae"
)

// TestConvert converts a flow-like checkpoint to half-precision shards and
// back, checks what LoadModel reads, the refusal to halve an LG-VAE, -meta
// and the argument errors.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	ts := map[string]*tensor.Tensor{}
	r := tensor.NewRNG(1)
	for _, name := range []string{"a.weight", "b.weight", "c.weight"} {
		ts[name] = tensor.FillUniform(tensor.New(tensor.Float32, 100, 100), r, -1, 1)
	}
	flowPath := filepath.Join(dir, "flow.safetensors")
	require.NoError(t, safetensors.Save(flowPath, ts, map[string]string{"kind": "lgflow.flow", "step": "1234"}))
	vaePath := filepath.Join(dir, "vae.safetensors")
	require.NoError(t, safetensors.Save(vaePath, ts, map[string]string{"kind": "lgflow.vae"}))

	cases := []struct {
		name   string
		args   []string
		code   int
		out    string // in stdout
		errOut string // in stderr
		shards int    // files expected for -o (0: not checked)
		kind   string // the converted checkpoint's kind
		tol    float64
	}{
		{"f16 shards", []string{"-i", flowPath, "-o", filepath.Join(dir, "h", "flow.safetensors"), "-dtype", "f16", "-shard-size", "25KiB"}, 0, "", "wrote", 3, "lgflow.flow", 1e-3},
		{"f32 whole", []string{"-i", flowPath, "-o", filepath.Join(dir, "w", "flow.safetensors"), "-dtype", "f32"}, 0, "", "wrote", 1, "lgflow.flow", 0},
		{"meta", []string{"-i", flowPath, "-meta", "step"}, 0, "1234", "", 0, "", 0},
		{"missing meta", []string{"-i", flowPath, "-meta", "nope"}, 1, "", "no metadata", 0, "", 0},
		{"VAE in half", []string{"-i", vaePath, "-o", filepath.Join(dir, "v", "vae.safetensors"), "-dtype", "bf16"}, 1, "", "fingerprint", 0, "", 0},
		{"bad dtype", []string{"-i", flowPath, "-o", filepath.Join(dir, "x.safetensors"), "-dtype", "f8"}, 2, "", "-dtype", 0, "", 0},
		{"bad size", []string{"-i", flowPath, "-o", filepath.Join(dir, "x.safetensors"), "-shard-size", "big"}, 2, "", "-shard-size", 0, "", 0},
		{"no input", []string{"-o", filepath.Join(dir, "x.safetensors")}, 2, "", "need -i", 0, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// convert makes -o's folder (dir/v, dir/s do not exist yet).
			code, out, errOut := run(t, append([]string{"convert"}, c.args...)...)
			assert.Equal(t, c.code, code, errOut)
			assert.Contains(t, out, c.out)
			assert.Contains(t, errOut, c.errOut)
			if c.shards > 0 {
				o := c.args[indexOf(c.args, "-o")+1]
				assert.Equal(t, c.shards, strings.Count(errOut, "wrote ")-boolInt(c.shards > 1), errOut)
				f, err := safetensors.LoadModel(o)
				require.NoError(t, err)
				assert.Equal(t, c.kind, f.Metadata["kind"])
				for name, w := range ts {
					got, want := f.Tensors[name].Float64s(), w.Float64s()
					for i := range want {
						if d := got[i] - want[i]; d > c.tol || d < -c.tol {
							t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], want[i])
						}
					}
				}
			}
		})
	}
	for _, c := range []struct {
		in   string
		want int64
	}{{"15MiB", 15 << 20}, {"500KiB", 500 << 10}, {"2G", 2 << 30}, {"16000000", 16000000}, {"1.5M", 3 << 19}} {
		got, err := parseBytes(c.in)
		assert.NoError(t, err)
		assert.Equal(t, c.want, got, c.in)
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestConvertModelsLoad converts an LG-VAE to f32 shards and an LG-Flow
// sampling model to f16 shards, and loads both with vae.Load and
// flow.Load, which read every form LoadModel reads: the LG-VAE comes back
// exactly (so the flow's fingerprint check passes), the flow's weights
// rounded to half precision.
func TestConvertModelsLoad(t *testing.T) {
	dir := t.TempDir()
	ae, err := vae.New(vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}, 1)
	require.NoError(t, err)
	cfg, err := flow.Preset("", "tiny", 4)
	require.NoError(t, err)
	net, err := dit.New(cfg.DiT, tensor.NewRNG(2))
	require.NoError(t, err)
	fm := &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 0.5, NodeCounts: []int{0, 0, 3, 1}}
	vaePath, flowPath := filepath.Join(dir, "vae.safetensors"), filepath.Join(dir, "flow.safetensors")
	require.NoError(t, ae.Save(vaePath, nil))
	require.NoError(t, fm.Save(flowPath, nil))

	outVAE, outFlow := filepath.Join(dir, "out", "vae.safetensors"), filepath.Join(dir, "out", "flow.safetensors")
	require.NoError(t, os.MkdirAll(filepath.Dir(outVAE), 0o755))
	code, _, errOut := run(t, "convert", "-i", vaePath, "-o", outVAE, "-shard-size", "3KiB")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = run(t, "convert", "-i", flowPath, "-o", outFlow, "-dtype", "f16", "-shard-size", "30KiB")
	require.Equal(t, 0, code, errOut)
	for _, p := range []string{outVAE, outFlow} {
		_, err := os.Stat(p + safetensors.IndexSuffix)
		require.NoError(t, err, "%s was not sharded", p)
	}

	ae2, err := vae.Load(outVAE)
	require.NoError(t, err)
	assert.Equal(t, nn.Fingerprint(ae), nn.Fingerprint(ae2), "the LG-VAE changed in f32 shards")
	fm2, err := flow.Load(outFlow, ae2)
	require.NoError(t, err)
	assert.Equal(t, fm.Scale, fm2.Scale)
	want, got := nn.StateDict(fm.Net), nn.StateDict(fm2.Net)
	for name, w := range want {
		wv, gv := w.Float64s(), got[name].Float64s()
		for i := range wv {
			if d := math.Abs(gv[i] - wv[i]); d > 1e-3*math.Abs(wv[i])+1e-7 {
				t.Fatalf("%s[%d] = %v, want %v within half-precision rounding", name, i, gv[i], wv[i])
			}
		}
	}
}
