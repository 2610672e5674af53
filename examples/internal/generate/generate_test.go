package generate

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestCommandLine checks the command line's exit statuses and messages.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		name, dataset string
		args          []string
		code          int
		stderr        string
	}{
		{"help", "", []string{"-h"}, 0, "-dataset"},
		{"planar help has no -dataset", "planar", []string{"-h"}, 0, "-sampler"},
		{"bad flag", "", []string{"-nope"}, 2, "flag provided but not defined"},
		{"no dataset", "", nil, 2, "unknown dataset"},
		{"unknown dataset", "", []string{"-dataset", "nope"}, 2, "unknown dataset \"nope\""},
		{"extra argument", "planar", []string{"x"}, 2, "unexpected argument"},
		{"bad device", "planar", []string{"-device", "tpu"}, 2, "unknown device"},
		{"unknown sampler key", "planar", []string{"-sampler", "edge_rules=and"}, 2, `unknown key "edge_rules"`},
		{"bad edge rule", "planar", []string{"-sampler", "edge_rule=xor", "-out", "OUT"}, 1, "xor"},
		{"unknown recipe", "planar", []string{"-recipe", "nope", "-out", "OUT"}, 1, `no alternative "nope"`},
	} {
		var stdout, stderr strings.Builder
		args := c.args
		for i, a := range args {
			if a == "OUT" {
				args = slices.Clone(args)
				args[i] = t.TempDir()
			}
		}
		code := Main(context.Background(), "test", c.dataset, args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", c.name, code, stderr.String(), c.code, c.stderr)
		}
		if c.name == "planar help has no -dataset" && strings.Contains(stderr.String(), "-dataset") {
			t.Errorf("%s: -dataset offered", c.name)
		}
	}
}
