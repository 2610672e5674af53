package vae

import (
	"context"
	"errors"
	"slices"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/tensor"
)

// TestDecodeGroup checks how many graphs DecodePadded decodes at once.
func TestDecodeGroup(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		n    int
		want int
	}{
		{"planar (C 2, N 64, DeepSet 16)", Config{EdgeClasses: 1, DeepSet: 16}, 64, 16},
		{"moses (C 5, N 27, DeepSet 16)", Config{EdgeClasses: 4, NodeClasses: 7, DeepSet: 16}, 27, 35},
		{"huge graphs: one at a time", Config{EdgeClasses: 1, DeepSet: 16}, 1000, 1},
		{"empty graphs", Config{EdgeClasses: 1, DeepSet: 16}, 0, 1 << 21},
	}
	for _, c := range cases {
		if got := decodeGroup(c.cfg, c.n); got != c.want {
			t.Errorf("%s: %d graphs at once, want %d", c.name, got, c.want)
		}
	}
}

// TestDecodePaddedGroups checks that DecodePadded, which decodes large
// batches a group at a time, gives the graphs of one pass over the whole
// batch, node labels included.
func TestDecodePaddedGroups(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		B, N int
		rule EdgeRule
	}{
		{"plain, or", Config{EdgeClasses: 1}, 70, 64, EitherDirection},
		{"plain, mean", Config{EdgeClasses: 1}, 70, 64, MeanLogits},
		{"labelled", Config{EdgeClasses: 4, NodeClasses: 7}, 70, 40, EitherDirection},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, EdgeClasses: c.cfg.EdgeClasses,
				NodeClasses: c.cfg.NodeClasses, Norm: LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}
			if g := decodeGroup(cfg, c.N); c.B <= g {
				t.Fatalf("%d graphs fit in one group of %d: nothing to compare", c.B, g)
			}
			m, err := New(cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			r := tensor.NewRNG(5)
			z := tensor.RandN(r, tensor.Float32, c.B, c.N, cfg.Latent)
			tensor.MulScalar(z, z, 3)
			sizes := make([]int, c.B)
			for i := range sizes {
				sizes[i] = c.N - i%9
			}
			got, err := m.DecodePadded(context.Background(), z, sizes, WithEdgeRule(c.rule))
			if err != nil {
				t.Fatal(err)
			}
			tp := autograd.NoGrad()
			want := m.graphs(m.DecodeDense(tp, autograd.NewConst(z), sizes), decodeOptions{rule: c.rule})
			tp.Release()
			if len(got) != len(want) {
				t.Fatalf("%d graphs, want %d", len(got), len(want))
			}
			edges := 0
			for i := range want {
				if graph.FormatGraph6(got[i]) != graph.FormatGraph6(want[i]) || !slices.Equal(got[i].NodeLabels, want[i].NodeLabels) ||
					!slices.Equal(got[i].Edges(), want[i].Edges()) {
					t.Fatalf("graph %d differs from the one-pass decoding", i)
				}
				edges += want[i].M()
			}
			if edges == 0 {
				t.Error("no edges decoded at all: the comparison is vacuous")
			}
		})
	}
}

func TestDecodePaddedCancelled(t *testing.T) {
	m, err := New(Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, EdgeClasses: 1,
		Norm: LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.DecodePadded(ctx, tensor.New(tensor.Float32, 2, 3, 4), []int{3, 2}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v, want context.Canceled", err)
	}
}
