package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadInput runs every subcommand on bad input: usage errors (a
// missing or unknown flag, a bad value) must exit with status 2 and say
// what is wrong, failures on the input itself (a missing or malformed
// file, a file of the wrong kind) with status 1 and name it. Deeper cases
// (damaged checkpoints, graph files, datasets) have their own tests.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	v, f := tinyModels(t, dir, tinyVAEConfig())
	missing := filepath.Join(dir, "missing.safetensors")
	notSafetensors := filepath.Join(dir, "notes.safetensors")
	require.NoError(t, os.WriteFile(notSafetensors, []byte("not a checkpoint\n"), 0o644))
	smiles := filepath.Join(dir, "in.smi")
	require.NoError(t, os.WriteFile(smiles, []byte("CCO\nc1ccccc1\n"), 0o644))
	out := t.TempDir()

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"train-vae: no -out", []string{"train-vae", "-dataset", "tree"}, 2, "need -dataset and -out"},
		{"train-vae: unknown preset", []string{"train-vae", "-dataset", "tree", "-preset", "huge", "-out", out}, 2, `no preset "huge"`},
		{"train-vae: unknown device", []string{"train-vae", "-dataset", "tree", "-device", "tpu", "-out", out}, 1, "tpu"},
		{"train-vae: bad -init", []string{"train-vae", "-dataset", "tree", "-init", notSafetensors, "-out", out}, 1, notSafetensors},
		{"train-vae: perturb.flow alone", []string{"train-vae", "-dataset", "tree", "-config", "perturb.flow=" + f, "-out", out, "-max-train", "4", "-train-split", "test"}, 2, "-config perturb.flow needs -init and freeze_encoder=true"},
		{"train-vae: unknown setting", []string{"train-vae", "-dataset", "tree", "-config", "widht=8", "-out", out}, 2, `unknown key "widht"`},
		{"train-vae: setting of the wrong type", []string{"train-vae", "-dataset", "tree", "-config", "steps=many", "-out", out}, 2, "steps=many: not an integer"},
		{"train-vae: extra seeds of Ego", []string{"train-vae", "-dataset", "ego", "-extra-train-seeds", "1", "-out", out}, 2, "-extra-train-seeds is for synthetic datasets (ego is not)"},
		{"train-vae: extra seed repeats -data-seed", []string{"train-vae", "-dataset", "tree", "-data-seed", "3", "-extra-train-seeds", "1,3", "-out", out}, 2, "seed 3 is the run's -data-seed"},
		{"train-vae: extra seed twice", []string{"train-vae", "-dataset", "tree", "-extra-train-seeds", "1,2,1", "-out", out}, 2, "seed 1 given twice"},
		{"train-vae: extra seed not a number", []string{"train-vae", "-dataset", "tree", "-extra-train-seeds", "1,two", "-out", out}, 2, `"two" is not a seed`},
		{"train-flow: no -vae", []string{"train-flow", "-dataset", "tree", "-out", out}, 2, "need -vae, -dataset and -out"},
		{"train-flow: missing LG-VAE", []string{"train-flow", "-vae", missing, "-dataset", "tree", "-out", out}, 1, missing},
		{"train-flow: flow as LG-VAE", []string{"train-flow", "-vae", f, "-dataset", "tree", "-out", out}, 1, "not an LG-VAE checkpoint"},
		{"train-flow: removed flag", []string{"train-flow", "-vae", v, "-dataset", "tree", "-init-vae", v, "-out", out}, 2, "-init-vae"},
		{"train-flow: missing -init", []string{"train-flow", "-vae", v, "-dataset", "tree", "-init", missing, "-out", out}, 1, missing},
		{"train-flow: unknown preset", []string{"train-flow", "-vae", v, "-dataset", "tree", "-preset", "XL", "-out", out}, 2, "XL"},
		{"train-flow: EMA decay above 1", []string{"train-flow", "-vae", v, "-dataset", "tree", "-preset", "tiny", "-config", "steps=10,ema_beta=1.5", "-out", out}, 2, "EMABeta must be in [0, 1]"},
		{"train-flow: cooldown longer than the run", []string{"train-flow", "-vae", v, "-dataset", "tree", "-preset", "tiny", "-config", "steps=10,cooldown=11", "-out", out}, 2, "Cooldown must be in [0, Steps = 10], got 11"},
		{"train-flow: a key of its own flag", []string{"train-flow", "-vae", v, "-dataset", "tree", "-config", "cond_drop=0.5", "-out", out}, 2, `unknown key "cond_drop"`},
		{"sample: no -flow", []string{"sample", "-vae", v}, 2, "need -model, or -vae and -flow"},
		{"sample: -model and -flow", []string{"sample", "-model", dir, "-flow", f}, 2, "-model and -flow exclude each other"},
		{"sample: -recipe without -model", []string{"sample", "-vae", v, "-flow", f, "-recipe", "constrained"}, 2, "-recipe needs -model"},
		{"sample: missing bundle", []string{"sample", "-model", filepath.Join(dir, "nowhere")}, 1, "nowhere"},
		{"sample: no such recipe", []string{"sample", "-model", dir, "-recipe", "constrained"}, 1, "has no recipe"},
		{"sample: unknown format", []string{"sample", "-vae", v, "-flow", f, "-format", "sdf"}, 2, "unknown format"},
		{"sample: unknown sampler key", []string{"sample", "-vae", v, "-flow", f, "-sampler", "constraint=planar"}, 2, `unknown key "constraint"`},
		{"sample: sampler value of the wrong type", []string{"sample", "-vae", v, "-flow", f, "-sampler", "steps=1.5"}, 2, "steps=1.5: not an integer"},
		{"sample: not KEY=VALUE", []string{"sample", "-vae", v, "-flow", f, "-sampler", "planar"}, 2, "want KEY=VALUE"},
		{"sample: unknown constraint", []string{"sample", "-vae", v, "-flow", f, "-sampler", "constraints=chordal"}, 1, `"chordal"`},
		{"sample: unknown constraint in a list", []string{"sample", "-vae", v, "-flow", f, "-sampler", "constraints=planar,chordal"}, 1, `"chordal"`},
		{"sample: fill without constraints", []string{"sample", "-vae", v, "-flow", f, "-sampler", "fill=-2"}, 1, "fill: an edge fill needs a planar, forest or dag constraint, or complete"},
		{"sample: completion and constraints", []string{"sample", "-vae", v, "-flow", f, "-sampler", "constraints=planar,complete=planar,fill=-4"}, 1, "completion and constraints exclude each other"},
		{"sample: unknown edge rule", []string{"sample", "-vae", v, "-flow", f, "-sampler", "edge_rule=xor"}, 1, "xor"},
		{"sample: not a checkpoint", []string{"sample", "-vae", v, "-flow", notSafetensors}, 1, notSafetensors},
		{"sample: bad -n", []string{"sample", "-vae", v, "-flow", f, "-n", "-3"}, 1, "-3"},
		{"sample: final jump out of range", []string{"sample", "-vae", v, "-flow", f, "-sampler", "final_jump=1.5"}, 1, "final_jump: 1.5 is outside (0.01, 1]"},
		{"sample: negative temperature", []string{"sample", "-vae", v, "-flow", f, "-sampler", "temperature=-1"}, 1, "temperature: -1 is outside"},
		{"sample: expert not a checkpoint", []string{"sample", "-vae", v, "-flow", f, "-sampler", `experts=[{"file":"` + notSafetensors + `","from":0.95}]`}, 1, notSafetensors},
		{"sample: experts not JSON", []string{"sample", "-vae", v, "-flow", f, "-sampler", "experts=" + f}, 2, "not JSON"},
		{"sample: expert time out of range", []string{"sample", "-vae", v, "-flow", f, "-sampler", `experts=[{"file":"` + f + `","from":0}]`}, 1, "experts[0].from: 0 is outside (0, 1]"},
		{"sample: two experts in one band", []string{"sample", "-vae", v, "-flow", f, "-sampler", `experts=[{"file":"` + f + `","from":0.9},{"file":"` + f + `","from":0.9}]`}, 1, "inside the band of experts[0]"},
		{"sample: removed flag", []string{"sample", "-vae", v, "-flow", f, "-steps", "5"}, 2, "-steps"},
		{"sample: negative time shift", []string{"sample", "-vae", v, "-flow", f, "-sampler", "time_shift=-2"}, 1, "time_shift: -2 is outside"},
		{"recon: no -dataset", []string{"recon", "-vae", v}, 2, "need -vae and one of -dataset and -graphs"},
		{"recon: negative noise", []string{"recon", "-vae", v, "-dataset", "tree", "-noise", "-1"}, 2, "-noise must be >= 0"},
		{"recon: unknown constraint", []string{"recon", "-vae", v, "-dataset", "tree", "-sampler", "constraints=chordal"}, 2, `"chordal"`},
		{"recon: fill without constraints", []string{"recon", "-vae", v, "-dataset", "tree", "-sampler", "fill=-2"}, 2, "fill: an edge fill needs"},
		{"recon: fill NaN", []string{"recon", "-vae", v, "-dataset", "planar", "-sampler", "constraints=planar,fill=NaN"}, 2, "fill=NaN: not a number"},
		{"recon: missing LG-VAE", []string{"recon", "-vae", missing, "-dataset", "tree"}, 1, missing},
		{"mol: no -i", []string{"mol"}, 2, "-i is required"},
		{"mol: missing input", []string{"mol", "-i", filepath.Join(dir, "none.smi")}, 1, "none.smi"},
		{"mol: missing training set", []string{"mol", "-i", smiles, "-stats", "-train", filepath.Join(dir, "none-train.smi")}, 1, "none-train.smi"},
		{"convert: no -o", []string{"convert", "-i", v}, 2, "need -o"},
		{"convert: bad dtype", []string{"convert", "-i", v, "-o", filepath.Join(out, "x.safetensors"), "-dtype", "f8"}, 2, `-dtype "f8"`},
		{"convert: not a checkpoint", []string{"convert", "-i", notSafetensors, "-o", filepath.Join(out, "y.safetensors")}, 1, notSafetensors},
		{"eval: no -gen", []string{"eval", "-ref", smiles}, 2, "-gen"},
		{"data: unknown flag", []string{"data", "-dataset", "tree", "-bogus"}, 2, "-bogus"},
		{"unknown command", []string{"train-gan"}, 2, "train-gan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.want)
		})
	}
}
