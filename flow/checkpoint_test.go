package flow_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/internal/damage"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// untrainedFlow returns a flow model with a fresh "tiny" DiT bound to ae:
// loading does not care whether the weights were trained.
func untrainedFlow(t *testing.T, ae *vae.Model, opts ...nn.Option) *flow.Model {
	t.Helper()
	cfg, err := flow.Preset("", "tiny", ae.Cfg.Latent)
	if err != nil {
		t.Fatal(err)
	}
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 0.5, NodeCounts: []int{0, 0, 0, 2, 5, 1}}
}

// newVAE returns an untrained LG-VAE in evaluation mode.
func newVAE(t *testing.T, c vae.Config, seed uint64) *vae.Model {
	t.Helper()
	m, err := vae.New(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// loadFlowNoPanic calls flow.Load, turning a panic into a test failure.
func loadFlowNoPanic(t *testing.T, path string, ae *vae.Model) (m *flow.Model, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("flow.Load panicked: %v", r)
		}
	}()
	return flow.Load(path, ae)
}

// TestLoadDamaged is the table of damaged and foreign checkpoints
// flow.Load must reject with an error that names the problem (checked with
// errors.Is against the safetensors causes where there is one, and by
// message substrings) and the file, never a panic: truncations, header
// and metadata corruption, half-precision and unknown dtypes, missing,
// extra and misshapen tensors, an LG-VAE file, a training-state file, and
// autoencoders other than the one the flow was trained with. Every file is
// built in a temporary directory from freshly saved tiny models.
func TestLoadDamaged(t *testing.T) {
	dir := t.TempDir()
	tmp := func(name string) string { return filepath.Join(dir, name) }
	ae := newVAE(t, vaeConfig(), 1)
	m := untrainedFlow(t, ae)
	good := tmp("good.safetensors")
	if err := m.Save(good, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Load(good, ae); err != nil {
		t.Fatalf("the undamaged file: %v", err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	headerEnd := 8 + int(uint64(raw[0])|uint64(raw[1])<<8|uint64(raw[2])<<16|uint64(raw[3])<<24)
	base, err := damage.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, edit func(f *damage.File)) string {
		f := base.Clone()
		edit(f)
		if err := f.Write(tmp(name)); err != nil {
			t.Fatal(err)
		}
		return tmp(name)
	}
	writeHeader := func(name, old, new string) string {
		err := base.WriteEdited(tmp(name), func(h []byte) []byte {
			if !bytes.Contains(h, []byte(old)) {
				t.Fatalf("%s: header lacks %q", name, old)
			}
			return bytes.Replace(h, []byte(old), []byte(new), 1)
		})
		if err != nil {
			t.Fatal(err)
		}
		return tmp(name)
	}
	cut := func(name string, n int) string {
		if err := os.WriteFile(tmp(name), raw[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		return tmp(name)
	}
	setMeta := func(key, value string) func(f *damage.File) {
		return func(f *damage.File) { f.Metadata[key] = value }
	}
	configKeys := func(keys string) func(f *damage.File) {
		return func(f *damage.File) {
			f.Metadata[trainer.MetaConfig] = "{" + keys + "," + trainer.MarshalMeta(m.Cfg)[1:]
		}
	}
	editConfig := func(edit func(c *flow.Config)) func(f *damage.File) {
		return func(f *damage.File) {
			c := m.Cfg
			edit(&c)
			f.Metadata[trainer.MetaConfig] = trainer.MarshalMeta(c)
		}
	}

	vaePath := tmp("vae.safetensors")
	if err := ae.Save(vaePath, nil); err != nil {
		t.Fatal(err)
	}
	state := write("state.safetensors", func(f *damage.File) {
		f.Metadata[trainer.MetaKind] = "lgflow.flow.state"
		for i := range f.Tensors {
			f.Tensors[i].Name = "model." + f.Tensors[i].Name
		}
	})
	wider := vaeConfig()
	wider.Width = 10
	otherWeights := newVAE(t, vaeConfig(), 99)
	otherConfig := newVAE(t, wider, 1)

	for _, tc := range []struct {
		name, path string
		ae         *vae.Model // nil: the flow's own autoencoder
		is         error
		want       []string
	}{
		{"missing file", tmp("nope.safetensors"), nil, os.ErrNotExist, nil},
		{"empty file", cut("empty", 0), nil, safetensors.ErrTooShort, nil},
		{"truncated header", cut("cuthdr", headerEnd-1), nil, safetensors.ErrHeaderLength, []string{"past the end"}},
		{"header only", cut("hdronly", headerEnd), nil, safetensors.ErrTruncated, nil},
		{"truncated data", cut("cutdata", len(raw)-1), nil, safetensors.ErrTruncated, nil},
		{"corrupted header JSON", writeHeader("badhdr", `"data_offsets"`, `"data_offsets`), nil, safetensors.ErrHeaderJSON, nil},
		{"unknown dtype", writeHeader("f12", `"F32"`, `"F12"`), nil, safetensors.ErrDType, []string{"F12"}},
		{"LG-VAE file", vaePath, nil, nil, []string{"not an LG-Flow checkpoint", `"lgflow.vae"`}},
		{"training state", state, nil, nil, []string{"not an LG-Flow checkpoint", `"lgflow.flow.state"`}},
		{"autoencoder with other weights", good, otherWeights, nil, []string{"different weights", "use the autoencoder the flow was trained with"}},
		{"autoencoder with another configuration", good, otherConfig, nil, []string{"trained with LG-VAE config"}},
		{"corrupted config JSON", write("badcfg", setMeta(trainer.MetaConfig, `{"dit": {`)), nil, nil, []string{`bad "config" metadata`}},
		{"velocity target", write("target", configKeys(`"target": "velocity"`)), nil, nil, []string{`target "velocity": velocity prediction was removed`}},
		{"standardised latents", write("standardize", configKeys(`"standardize": true`)), nil, nil, []string{"standardises latents per dimension", "removed"}},
		{"DiT config failing validation", write("heads", editConfig(func(c *flow.Config) { c.DiT.Heads = 3 })), nil, nil, []string{"not divisible by Heads"}},
		{"DiT for another latent size", write("dim", editConfig(func(c *flow.Config) { c.DiT.Dim = 6 })), nil, nil, []string{"6-dimensional tokens", "4 dimensions"}},
		{"corrupted latent scale", write("scale", setMeta("latent_scale", "0.5.1")), nil, nil, []string{`bad "latent_scale" metadata`}},
		{"negative latent scale", write("negscale", setMeta("latent_scale", "-1")), nil, nil, []string{"latent scale -1 is not positive"}},
		{"missing node counts", write("nocounts", func(f *damage.File) { delete(f.Metadata, "node_counts") }), nil, nil, []string{`missing "node_counts"`}},
		{"empty node counts", write("zerocounts", setMeta("node_counts", "[0,0]")), nil, nil, []string{"empty node-count distribution"}},
		{"negative node count", write("negcounts", setMeta("node_counts", "[0,3,-1]")), nil, nil, []string{"negative count -1 (for 2 nodes)"}},
		{"corrupted VAE config", write("vaecfg", setMeta("vae_config", "{")), nil, nil, []string{`bad "vae_config" metadata`}},
		{"missing checked tensor", write("noembed", func(f *damage.File) { f.Drop("x_embed.weight") }), nil, nil, []string{`"x_embed.weight" missing`}},
		{"missing tensor", write("nobias", func(f *damage.File) { f.Drop("final.bias") }), nil, nil, []string{`missing "final.bias"`}},
		{"extra tensor", write("extra", func(f *damage.File) { f.Add("blocks.9.adaLN.weight", 2, 2) }), nil, nil, []string{`unexpected "blocks.9.adaLN.weight"`}},
		{"transposed tensor", write("transposed", func(f *damage.File) { f.Reshape("t_embed.2.weight", 16, 64) }), nil, nil, []string{`"t_embed.2.weight": shape [16 64], module has [32 32]`}},
		{"checked tensor resized", write("final", func(f *damage.File) { f.Resize("final.weight", 4, 16) }), nil, nil, []string{`"final.weight" has shape [4 16], the configuration implies [4 32]`}},
		{"wide DiT claimed", write("wide", editConfig(func(c *flow.Config) { c.DiT.Width = 4096 })), nil, nil, []string{`"x_embed.weight" has shape [32 8], the configuration implies [4096 8]`}},
		{"deep DiT claimed", write("deep", editConfig(func(c *flow.Config) { c.DiT.Depth = 1 << 20 })), nil, nil, []string{`"blocks.2.attn.out.weight" missing`}},
		{"huge MLP claimed", write("mlp", editConfig(func(c *flow.Config) { c.DiT.MLPRatio = 1e6 })), nil, nil, []string{`"blocks.0.mlp.0.weight" has shape [128 32], the configuration implies [32000000 32]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.ae
			if a == nil {
				a = ae
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			l, err := loadFlowNoPanic(t, tc.path, a)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("loaded %+v", l.Cfg)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name the file", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("rejecting the file allocated %d MB", alloc>>20)
			}
		})
	}
}

// TestLoadRemovedSettings loads a checkpoint whose configuration holds
// the settings of earlier versions at the values that change nothing for
// sampling (x0 prediction, global scaling, and the training points of OT
// coupling and path following, whatever their values): it loads as the
// file without them, and the configuration written back has none of them.
func TestLoadRemovedSettings(t *testing.T) {
	ae := newVAE(t, vaeConfig(), 1)
	m := untrainedFlow(t, ae)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	if err := m.Save(good, nil); err != nil {
		t.Fatal(err)
	}
	f, err := damage.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	f.Metadata[trainer.MetaConfig] = `{"target": "x0", "standardize": false, "ot_coupling": true, "path_lead": 0.05, "path_steps": 2,` + f.Metadata[trainer.MetaConfig][1:]
	old := filepath.Join(dir, "old.safetensors")
	if err := f.Write(old); err != nil {
		t.Fatal(err)
	}
	l, err := flow.Load(old, ae)
	if err != nil {
		t.Fatal(err)
	}
	if l.Cfg != m.Cfg {
		t.Errorf("configuration %+v, want %+v", l.Cfg, m.Cfg)
	}
	if s := trainer.MarshalMeta(l.Cfg); strings.Contains(s, "target") || strings.Contains(s, "ot_coupling") {
		t.Errorf("the configuration is written with removed settings: %s", s)
	}
}

// TestLoadFloat64 saves a flow whose denoiser is float64 and checks it
// loads as float64 with the same weights.
func TestLoadFloat64(t *testing.T) {
	ae := newVAE(t, vaeConfig(), 1)
	m := untrainedFlow(t, ae, nn.WithDType(tensor.Float64))
	path := filepath.Join(t.TempDir(), "f64.safetensors")
	if err := m.Save(path, nil); err != nil {
		t.Fatal(err)
	}
	l, err := flow.Load(path, ae)
	if err != nil {
		t.Fatal(err)
	}
	if nn.Fingerprint(l.Net) != nn.Fingerprint(m.Net) {
		t.Error("float64 denoiser changed in the round trip")
	}
}
