package flow

import "testing"

// TestPreset checks the per-dataset recipes against the reference's
// training configurations (docs/design.md, "LG-Flow recipes per dataset")
// and the cpu variants.
func TestPreset(t *testing.T) {
	for _, c := range []struct {
		dataset, size       string
		depth, heads, width int
		batch, steps        int
		timeMean, wd        float64
	}{
		{"planar", "paper", 6, 6, 384, 256, 500000, 0, 1e-12},
		{"planar-512", "paper", 6, 6, 384, 128, 500000, 0, 1e-12},
		{"tree", "paper", 12, 8, 512, 256, 500000, 0, 1e-12},
		{"ego", "paper", 12, 6, 384, 128, 300000, 0, 1e-12},
		{"price", "paper", 6, 6, 384, 256, 100000, 0, 1e-12},
		{"tpu", "paper", 6, 6, 384, 256, 300000, 0, 1e-12},
		{"moses", "paper", 12, 12, 768, 2048, 600000, 0, 0.1},
		{"planar", "cpu", 4, 4, 128, 64, 40000, 1, 1e-12},
		{"planar-256", "cpu", 4, 4, 128, 16, 40000, 1, 1e-12},
		{"planar-512", "cpu", 4, 4, 128, 8, 40000, 1, 1e-12},
		{"ego", "cpu", 4, 4, 128, 16, 40000, 1, 1e-12},
		{"tpu", "cpu", 4, 4, 128, 32, 40000, 1, 1e-12},
		{"", "T", 6, 6, 384, 256, 500000, 0, 1e-12},
		{"", "paper", 6, 6, 384, 256, 500000, 0, 1e-12},
		{"planar", "T", 6, 6, 384, 256, 500000, 0, 1e-12},
	} {
		cfg, err := Preset(c.dataset, c.size, 16)
		if err != nil {
			t.Fatalf("%s/%s: %v", c.dataset, c.size, err)
		}
		d := cfg.DiT
		if d.Depth != c.depth || d.Heads != c.heads || d.Width != c.width || d.Dim != 16 {
			t.Errorf("%s/%s: DiT %d x %d heads x %d (dim %d), want %d x %d x %d", c.dataset, c.size, d.Depth, d.Heads, d.Width, d.Dim, c.depth, c.heads, c.width)
		}
		if cfg.BatchSize != c.batch || cfg.Steps != c.steps || cfg.TimeMean != c.timeMean || cfg.WeightDecay != c.wd {
			t.Errorf("%s/%s: batch %d steps %d time mean %g wd %g, want %d %d %g %g", c.dataset, c.size,
				cfg.BatchSize, cfg.Steps, cfg.TimeMean, cfg.WeightDecay, c.batch, c.steps, c.timeMean, c.wd)
		}
	}
	for _, c := range []struct{ dataset, size string }{{"nope", "cpu"}, {"nope", "paper"}, {"nope", "T"}, {"planar", "huge"}, {"", "huge"}} {
		if _, err := Preset(c.dataset, c.size, 16); err == nil {
			t.Errorf("%s/%s accepted", c.dataset, c.size)
		}
	}
}
