package vae_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"lgflow/internal/damage"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// loadNoPanic calls vae.Load, turning a panic into a test failure that
// names the case.
func loadNoPanic(t *testing.T, path string) (m *vae.Model, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("vae.Load panicked: %v", r)
		}
	}()
	return vae.Load(path)
}

// TestLoadDamaged is the table of damaged and foreign checkpoints vae.Load
// must reject with an error that names the problem (checked with
// errors.Is against the safetensors causes where there is one, and by
// message substrings), never a panic. Every file is built in a temporary
// directory from freshly saved tiny models.
func TestLoadDamaged(t *testing.T) {
	dir := t.TempDir()
	tmp := func(name string) string { return filepath.Join(dir, name) }
	cfg := smallConfig()
	m := newModel(t, cfg, 1)
	good := tmp("good.safetensors")
	if err := m.Save(good, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	base, err := damage.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	headerEnd := 8 + int(uint64(raw[0])|uint64(raw[1])<<8|uint64(raw[2])<<16|uint64(raw[3])<<24)

	// write saves a variant of the good file made by edit.
	write := func(name string, edit func(f *damage.File)) string {
		f := base.Clone()
		edit(f)
		if err := f.Write(tmp(name)); err != nil {
			t.Fatal(err)
		}
		return tmp(name)
	}
	// writeHeader saves the good file with its header bytes edited.
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

	// A flow-like file: another kind, another set of tensors.
	flowFile := write("flow.safetensors", func(f *damage.File) {
		f.Metadata = map[string]string{trainer.MetaKind: "lgflow.flow", trainer.MetaConfig: `{"dit":{"dim":4}}`}
	})
	// A training-state file: the same kind, weights under "model.".
	state := write("state.safetensors", func(f *damage.File) {
		for i := range f.Tensors {
			f.Tensors[i].Name = "model." + f.Tensors[i].Name
		}
		f.Add("opt.m.encoder.eig_eps", 1, cfg.K)
	})
	// Another architecture's weights under this file's configuration.
	mismatched := mismatchedFile(t, tmp("other.safetensors"), tmp("mismatched.safetensors"), base, cfg)

	for _, tc := range []struct {
		name, path string
		is         error    // a safetensors cause the error must wrap, or nil
		want       []string // substrings of the error
	}{
		{"missing file", tmp("nope.safetensors"), os.ErrNotExist, []string{"nope.safetensors"}},
		{"empty file", cut("empty", 0), safetensors.ErrTooShort, []string{"empty"}},
		{"truncated length prefix", cut("cut4", 4), safetensors.ErrTooShort, nil},
		{"truncated header", cut("cuthdr", headerEnd/2), safetensors.ErrHeaderLength, []string{"past the end"}},
		{"header only", cut("cutdata0", headerEnd), safetensors.ErrTruncated, nil},
		{"truncated data", cut("cutdata", len(raw)-3), safetensors.ErrTruncated, []string{"data buffer holds"}},
		{"trailing bytes", write2(t, tmp("trailing"), append(append([]byte(nil), raw...), 0, 0, 0, 0)), safetensors.ErrGap, nil},
		{"corrupted header JSON", writeHeader("badhdr", `"dtype"`, `"dtype`), safetensors.ErrHeaderJSON, nil},
		{"unknown dtype", writeHeader("f12", `"F32"`, `"F12"`), safetensors.ErrDType, []string{"F12"}},
		{"integer tensor", writeHeader("i32", `"F32"`, `"I32"`), safetensors.ErrUnsupported, []string{"I32"}},
		{"flow checkpoint", flowFile, nil, []string{"not an LG-VAE checkpoint", `"lgflow.flow"`}},
		{"no kind", write("nokind", func(f *damage.File) { delete(f.Metadata, trainer.MetaKind) }), nil, []string{"not an LG-VAE checkpoint", `""`}},
		{"training state", state, nil, []string{"training-state checkpoint", vae.ModelFile}},
		{"no config", write("nocfg", func(f *damage.File) { delete(f.Metadata, trainer.MetaConfig) }), nil, []string{`missing "config"`}},
		{"corrupted config JSON", write("badcfg", setMeta(trainer.MetaConfig, `{"k": 6, "latent"`)), nil, []string{`bad "config" metadata`, "unexpected end"}},
		{"config of the wrong type", write("typecfg", setMeta(trainer.MetaConfig, `{"k": "six"}`)), nil, []string{`bad "config" metadata`, "k"}},
		{"config failing validation", write("zerocfg", setMeta(trainer.MetaConfig, `{"k": 6}`)), nil, []string{"must be positive"}},
		{"missing checked tensor", write("noeps", func(f *damage.File) { f.Drop("encoder.eig_eps") }), nil, []string{`"encoder.eig_eps" missing`}},
		{"missing tensor", write("nobias", func(f *damage.File) { f.Drop("decoder.deepset.out.bias") }), nil, []string{`missing "decoder.deepset.out.bias"`}},
		{"extra tensor", write("extra", func(f *damage.File) { f.Add("decoder.bonus.weight", 2, 2) }), nil, []string{`unexpected "decoder.bonus.weight"`}},
		{"transposed tensor", write("transposed", func(f *damage.File) { f.Reshape("decoder.deepset.out.weight", cfg.DeepSet, 1) }), nil, []string{`"decoder.deepset.out.weight": shape [4 1], module has [1 4]`}},
		{"checked tensor resized", write("eps5", func(f *damage.File) { f.Resize("encoder.eig_eps", 1, 5) }), nil, []string{`"encoder.eig_eps" has shape [1 5], the configuration implies [1 6]`}},
		{"weights of another architecture", mismatched, nil, []string{`"decoder.deepset.ctx.weight" has shape [6 6], the configuration implies [4 4]`}},
		{"F32 and F64 weights mixed", mixedFile(t, tmp("mixed"), base, cfg), nil, []string{`"decoder.proj.weight": dtype float32, module has float64`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := loadNoPanic(t, tc.path)
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
		})
	}
}

// write2 writes b to path and returns path.
func write2(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// mismatchedFile saves, at path, the weights of another architecture
// (configuration c with a wider DeepSet, saved first at otherPath) under
// the configuration of base.
func mismatchedFile(t *testing.T, otherPath, path string, base *damage.File, c vae.Config) string {
	t.Helper()
	other := c
	other.DeepSet = 6
	if err := newModel(t, other, 1).Save(otherPath, nil); err != nil {
		t.Fatal(err)
	}
	otherFile, err := damage.Read(otherPath)
	if err != nil {
		t.Fatal(err)
	}
	otherFile.Metadata[trainer.MetaConfig] = base.Metadata[trainer.MetaConfig]
	if err := otherFile.Write(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// mixedFile saves a float64 model of configuration c with one tensor
// replaced by its float32 counterpart from f32.
func mixedFile(t *testing.T, path string, f32 *damage.File, c vae.Config) string {
	t.Helper()
	m, err := vae.New(c, 2, nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Save(path, nil); err != nil {
		t.Fatal(err)
	}
	f, err := damage.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range f.Tensors {
		if x.Name == "decoder.proj.weight" {
			for _, y := range f32.Tensors {
				if y.Name == x.Name {
					f.Tensors[i] = y
				}
			}
		}
	}
	if err := f.Write(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadHostileConfig gives Load files whose configuration claims far
// larger layers than the file holds (a 4096-wide DeepSet, a million rho
// layers, 10^5 edge classes, a thousand refinement blocks): each must be
// rejected with the shape or missing tensor that disagrees, after
// allocating about as much as the file itself, not what the configuration
// claims (a 4096 x 4096 DeepSet alone is 64 MB).
func TestLoadHostileConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	if err := newModel(t, smallConfig(), 1).Save(good, nil); err != nil {
		t.Fatal(err)
	}
	base, err := damage.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *vae.Config)
		want string
	}{
		{"wide deepset", func(c *vae.Config) { c.DeepSet = 4096 }, `"decoder.deepset.ctx.weight" has shape [4 4], the configuration implies [4096 4096]`},
		{"deep rho", func(c *vae.Config) { c.Layers = 1 << 20 }, `"encoder.rho.2.conv.mlp.1.weight" missing`},
		{"deep rho without norm", func(c *vae.Config) { c.Layers, c.Norm = 1<<20, vae.NoNorm }, `"encoder.rho.2.conv.mlp.1.weight" missing`},
		{"many edge classes", func(c *vae.Config) { c.EdgeClasses = 100000 }, `"decoder.proj.weight" has shape [16 4]`},
		{"many node classes", func(c *vae.Config) { c.NodeClasses = 1 << 22 }, `"encoder.node_emb.weight" missing`},
		{"refinement network", func(c *vae.Config) { c.Refine, c.RefineWidth, c.RefineHeads = 1000, 4096, 8 }, `"decoder.refine.in.weight" missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig()
			tc.edit(&c)
			f := base.Clone()
			f.Metadata[trainer.MetaConfig] = trainer.MarshalMeta(c)
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := f.Write(path); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := loadNoPanic(t, path)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %s", err, tc.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("rejecting the file allocated %d MB", alloc>>20)
			}
		})
	}
}

// TestLoadRoundTripArchitectures saves and loads every architecture
// variant (directed, BatchNorm, GraphNorm, no norm, node labels, phi gate, several
// edge classes, refinement network) so that Load's shape checks are shown
// to agree with what New builds, and a float64 model, which must load in
// float64.
func TestLoadRoundTripArchitectures(t *testing.T) {
	dir := t.TempDir()
	for i, edit := range []func(c *vae.Config){
		func(c *vae.Config) {},
		func(c *vae.Config) { c.Directed, c.Q = true, 0.05 },
		func(c *vae.Config) { c.Norm, c.NodeClasses, c.EdgeClasses, c.PhiGate = vae.BatchNorm, 3, 4, true },
		func(c *vae.Config) { c.Norm = vae.GraphNorm },
		func(c *vae.Config) { c.Norm, c.Layers = vae.NoNorm, 3 },
		func(c *vae.Config) {
			c.Directed, c.Q, c.PhiGate, c.NodeClasses = true, 0.05, true, 2
			c.Refine, c.RefineWidth, c.RefineHeads = 2, 8, 2
		},
		func(c *vae.Config) { c.Refine, c.RefineWidth, c.RefineHeads, c.SymmetricLogits = 1, 6, 3, true },
	} {
		c := smallConfig()
		edit(&c)
		path := filepath.Join(dir, fmt.Sprintf("m%d.safetensors", i))
		if err := newModel(t, c, 3).Save(path, nil); err != nil {
			t.Fatal(err)
		}
		l, err := vae.Load(path)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if l.Cfg != c {
			t.Errorf("loaded %+v, saved %+v", l.Cfg, c)
		}
	}
	// A float64 model loads as float64 with the same weights.
	m, err := vae.New(smallConfig(), 4, nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f64.safetensors")
	if err := m.Save(path, nil); err != nil {
		t.Fatal(err)
	}
	l, err := vae.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.DType() != tensor.Float64 || nn.Fingerprint(l) != nn.Fingerprint(m) {
		t.Errorf("float64 model loaded as %v with fingerprint %.12s, saved %.12s", l.DType(), nn.Fingerprint(l), nn.Fingerprint(m))
	}
}
