package vae

import (
	"context"
	"fmt"
	"slices"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
)

// Save writes the model's weights to path as safetensors, with the model
// configuration (JSON under "config") and the extra metadata. The write is
// atomic.
func (m *Model) Save(path string, extra map[string]string) error {
	meta := map[string]string{trainer.MetaKind: "lgflow.vae", trainer.MetaConfig: trainer.MarshalMeta(m.Cfg)}
	for k, v := range extra {
		meta[k] = v
	}
	return safetensors.Save(path, nn.StateDict(m), meta)
}

// Load reads a model written by Save (or the best-model file of Train), in
// the precision it was saved in (float32 or float64). It returns a clear
// error for a file that is not an LG-VAE checkpoint, is truncated, or
// whose tensors do not match its configuration.
func Load(path string) (*Model, error) {
	f, err := safetensors.LoadModel(path)
	if err != nil {
		return nil, err
	}
	m, err := FromFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// FromFile builds a model from decoded safetensors contents (for example
// a checkpoint embedded with go:embed and decoded by safetensors.Decode).
func FromFile(f *safetensors.File) (*Model, error) {
	if k := f.Metadata[trainer.MetaKind]; k != "lgflow.vae" {
		return nil, fmt.Errorf("not an LG-VAE checkpoint (kind %q)", k)
	}
	var cfg Config
	if err := trainer.UnmarshalMeta(f.Metadata, trainer.MetaConfig, &cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, ok := f.Tensors["model.encoder.eig_eps"]; ok {
		return nil, fmt.Errorf("a training-state checkpoint (weights under \"model.\", with optimiser state), not a model file: load the %s that training writes beside it", ModelFile)
	}
	// Check the sizes the config claims against the file before allocating
	// a model from it, so a tiny hostile header cannot demand gigabytes.
	if err := checkDims(cfg, f); err != nil {
		return nil, err
	}
	// Build the model in the precision the file stores: Save writes a
	// float64 model's weights as F64.
	m, err := New(cfg, 0, nn.WithDType(f.Tensors["encoder.eig_eps"].DType()))
	if err != nil {
		return nil, err
	}
	if err := nn.LoadStateDict(m, f.Tensors); err != nil {
		return nil, err
	}
	return m, nil
}

// EncodeGraphs returns the posterior mean latents of each graph, one
// (N_i, Latent) float32 tensor per graph, computed in evaluation mode in
// batches of batchSize graphs (0 means 64). A graph's latents do not depend
// on the other graphs passed with it.
func (m *Model) EncodeGraphs(ctx context.Context, gs []*graph.Graph, batchSize int) ([]*tensor.Tensor, error) {
	d, err := Prepare(ctx, gs, m.Cfg, nil)
	if err != nil {
		return nil, err
	}
	if batchSize <= 0 {
		batchSize = 64
	}
	out := make([]*tensor.Tensor, 0, len(gs))
	for lo := 0; lo < len(gs); lo += batchSize {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+batchSize, len(gs))
		b := graph.NewBatch(gs[lo:hi])
		tp := autograd.NoGrad()
		mu, _ := m.Encode(tp, b, d.Features[lo:hi], Eval, nil)
		mu32 := mu.Value.To(tensor.Float32)
		for i := range b.Len() {
			out = append(out, mu32.Slice(0, b.NodeOffset[i], b.NodeOffset[i+1]).Clone())
		}
		tp.Release()
	}
	return out, nil
}

// decodeChunk is the number of graphs DecodeGraphs decodes at once: the
// decoder's scores take memory proportional to the number of graphs times
// the square of the largest node count, so decoding 176,000 molecules in
// one pass would need tens of gigabytes.
const decodeChunk = 256

// DecodeGraphs decodes per-graph latents (each (N_i, Latent)) into graphs,
// in chunks of a few hundred graphs, checking ctx between chunks.
func (m *Model) DecodeGraphs(ctx context.Context, latents []*tensor.Tensor, opts ...DecodeOption) ([]*graph.Graph, error) {
	for i, z := range latents {
		if z.Rank() != 2 || z.Dim(1) != m.Cfg.Latent {
			return nil, fmt.Errorf("vae: latent %d has shape %v, want (N, %d)", i, z.Shape(), m.Cfg.Latent)
		}
	}
	var out []*graph.Graph
	for lo := 0; lo < len(latents); lo += decodeChunk {
		chunk := latents[lo:min(lo+decodeChunk, len(latents))]
		n := 0
		sz := make([]int, len(chunk))
		for i, z := range chunk {
			sz[i] = z.Dim(0)
			n = max(n, sz[i])
		}
		z := tensor.New(m.DType(), len(chunk), n, m.Cfg.Latent)
		for i, l := range chunk {
			tensor.Copy(z.Slice(0, i, i+1).Slice(1, 0, sz[i]), l.To(m.DType()).Reshape(1, sz[i], m.Cfg.Latent))
		}
		gs, err := m.DecodePadded(ctx, z, sz, opts...)
		if err != nil {
			return nil, err
		}
		out = append(out, gs...)
	}
	return out, nil
}

// DecodePadded decodes padded latents z (B, N, Latent) of graphs with the
// given node counts into graphs. It decodes a few graphs at a time (as many
// as keep the decoder's intermediates near 8 MB each), releasing each
// group's buffers before the next and checking ctx between groups; the
// graphs are the same as decoding all at once.
func (m *Model) DecodePadded(ctx context.Context, z *tensor.Tensor, sizes []int, opts ...DecodeOption) ([]*graph.Graph, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o, err := m.decodeOptions(opts)
	if err != nil {
		return nil, err
	}
	if z.Rank() != 3 || z.Dim(0) != len(sizes) || z.Dim(2) != m.Cfg.Latent {
		return nil, fmt.Errorf("vae: padded latents of shape %v for %d graphs, want (B, N, %d)", z.Shape(), len(sizes), m.Cfg.Latent)
	}
	for i, s := range sizes {
		if s < 0 || s > z.Dim(1) {
			return nil, fmt.Errorf("vae: graph %d has %d nodes, more than the padded width %d", i, s, z.Dim(1))
		}
	}
	z = z.To(m.DType())
	group := decodeGroup(m.Cfg, z.Dim(1))
	out := make([]*graph.Graph, 0, len(sizes))
	for lo := 0; lo < len(sizes); lo += group {
		if lo > 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		hi := min(lo+group, len(sizes))
		tp := autograd.NoGrad()
		dec := m.DecodeDense(tp, autograd.NewConst(z.Slice(0, lo, hi)), sizes[lo:hi])
		gs, err := m.decodedGraphs(ctx, dec, z.Slice(0, lo, hi), o)
		tp.Release()
		if err != nil {
			return nil, err
		}
		out = append(out, gs...)
	}
	return out, nil
}

// decodeElems bounds the elements of the decoder's largest intermediates,
// the (B, C, N, N, DeepSet) tensors of the row-wise DeepSet, that
// DecodePadded keeps at once: it decodes a few graphs at a time on a tape it
// releases after each group, so a batch of 256 planar graphs (C = 2, N = 64,
// DeepSet 16) needs about 35 MB instead of over 500. A graph's decoded edges do
// not depend on the graphs decoded with it, so the result is the same bit
// for bit.
const decodeElems = 1 << 21

// decodeGroup returns how many graphs of padded width n DecodePadded
// decodes at once with configuration cfg (at least one).
func decodeGroup(cfg Config, n int) int {
	per := (cfg.EdgeClasses + 1) * n * n * max(cfg.DeepSet, 1)
	return max(1, decodeElems/max(per, 1))
}

// checkDims compares the tensor shapes implied by cfg with the file before
// a model is built from it: one tensor for every size the configuration
// sets (K, PhiWidth, Latent, Width, DeepSet, EdgeClasses, NodeClasses,
// RefineWidth) and one square Width x Width (or RefineWidth) tensor for
// every rho layer and refinement block, so a configuration claiming more
// than the file holds is an error before anything of its size is
// allocated.
func checkDims(cfg Config, f *safetensors.File) error {
	in := 2
	mult := 2
	if cfg.Directed {
		in, mult = 3, 4
	}
	h, E, d := cfg.PhiWidth, cfg.Width, cfg.Latent
	type want struct {
		name  string
		shape []int
	}
	ws := []want{
		{"encoder.eig_eps", []int{1, cfg.K}},
		{"encoder.phi.0.weight", []int{2 * h, in}},
		{"encoder.phi.2.weight", []int{h, 2 * h}},
		{"encoder.head.0.weight", []int{E, E}},
		{"encoder.head.2.weight", []int{2 * d, E}},
		{"decoder.proj.weight", []int{mult * (cfg.EdgeClasses + 1) * d, d}},
		{"decoder.deepset.ctx.weight", []int{cfg.DeepSet, cfg.DeepSet}},
	}
	if cfg.PhiGate {
		ws = append(ws, want{"encoder.phi_gate.2.weight", []int{(in - 1) * h, h}})
	}
	if cfg.NodeClasses > 0 {
		ws = append(ws, want{"encoder.node_emb.weight", []int{cfg.NodeClasses, h}},
			want{"decoder.node_head.weight", []int{cfg.NodeClasses, d}})
	}
	if cfg.Refine > 0 {
		ws = append(ws, want{"decoder.refine.in.weight", []int{cfg.RefineWidth, d}})
	}
	check := func(w want) error {
		t, ok := f.Tensors[w.name]
		if !ok {
			return fmt.Errorf("tensor %q missing: the file does not match its configuration", w.name)
		}
		if !slices.Equal(t.Shape(), w.shape) {
			return fmt.Errorf("tensor %q has shape %v, the configuration implies %v", w.name, t.Shape(), w.shape)
		}
		return nil
	}
	for _, w := range ws {
		if err := check(w); err != nil {
			return err
		}
	}
	// The loops stop at the first layer the file lacks, so a huge claimed
	// depth costs no more than the file is long.
	layer := "encoder.rho.%d.conv.mlp.1.weight"
	if cfg.Directed {
		layer = "encoder.rho.%d.conv.conv_in.mlp.1.weight"
	}
	for l := range cfg.Layers {
		if err := check(want{fmt.Sprintf(layer, l), []int{E, E}}); err != nil {
			return err
		}
	}
	for b := range cfg.Refine {
		W := cfg.RefineWidth
		if err := check(want{fmt.Sprintf("decoder.refine.blocks.%d.attn.out.weight", b), []int{W, W}}); err != nil {
			return err
		}
	}
	return nil
}
