package cuda

import (
	"context"
	"fmt"
	"os"
	"testing"

	"lgflow/autograd"
	"lgflow/graph/datasets"
	"lgflow/tensor"
	"lgflow/tensor/backendtest"
	"lgflow/vae"
)

// TestEmulatedGINE runs the conformance cases of the GINE methods on the
// emulated GPU in both summation modes (the GINE kernels use no atomics,
// so both must give the CPU's results); the whole suite runs them too, in
// TestEmulatedConformance.
func TestEmulatedGINE(t *testing.T) {
	b := emulatedBackend(t)
	defer b.SetDeterministic(true)
	for _, det := range []bool{true, false} {
		b.SetDeterministic(det)
		for _, m := range []string{"GINEAggregate", "GINEAggregateBackward"} {
			t.Run(fmt.Sprintf("deterministic=%v/%s", det, m), func(t *testing.T) { backendtest.RunOne(t, b, m) })
		}
	}
}

// TestEmulatedVAEStepUploads counts the host-to-device copies and kernel
// launches of LG-VAE training steps on the emulated GPU (the figures of
// cuda/GPU_TODO.md).
func TestEmulatedVAEStepUploads(t *testing.T) {
	b := emulatedBackend(t)
	up, bytes, launches := vaeStepCounts(t, b)
	t.Logf("per LG-VAE training step (2 GINE layers, batch of 4): %d uploads, %d bytes uploaded, %d launches", up, bytes, launches)
}

// vaeStepCounts trains a small LG-VAE on b for a few steps and returns the
// uploads, uploaded bytes and launches of the last step.
func vaeStepCounts(t *testing.T, b *Backend) (uploads, bytes, launches int) {
	t.Helper()
	ctx := context.Background()
	cfg := vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, NodeClasses: 2, EdgeClasses: 2,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true, LatentNoise: 0.01}
	gs := append(datasets.Tree(7, 4, 1), datasets.Planar(9, 4, 1)...)
	for i, g := range gs {
		g.NodeLabels = make([]int, g.N())
		for v := range g.NodeLabels {
			g.NodeLabels[v] = (v + i) % 2
		}
		for _, e := range g.Edges() {
			g.AddLabeledEdge(e.From, e.To, (e.From+e.To)%2)
		}
	}
	data, err := vae.Prepare(ctx, gs, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := vae.TrainConfig{Steps: 3, BatchSize: 4, LR: 3e-3, MinLR: 1e-3, Warmup: 2, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95, Seed: 3}
	var u, by, l []int
	_, err = vae.Train(ctx, cfg, tc, data, nil, vae.TrainOptions{Backend: tensor.Backend(b), LogEvery: 1,
		Progress: func(vae.Progress) {
			u = append(u, fakeCall(t, "fakecuda_uploads"))
			by = append(by, fakeCall(t, "fakecuda_upload_bytes"))
			l = append(l, fakeCall(t, "fakecuda_launches"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	n := len(u)
	if n < 2 {
		t.Fatalf("%d progress reports", n)
	}
	return u[n-1] - u[n-2], by[n-1] - by[n-2], l[n-1] - l[n-2]
}

// TestEmulatedGINEIndexUploadedOnce checks that GINE layers sharing an
// EdgeIndex upload it once for the forward and backward passes of all of
// them, and that releasing the tape that owns it frees its device copy.
func TestEmulatedGINEIndexUploadedOnce(t *testing.T) {
	b := emulatedBackend(t)
	r := tensor.NewRNG(3)
	const nodes, edges, f, classes = 40, 150, 16, 3
	src, dst, cls := make([]int32, edges), make([]int32, edges), make([]int32, edges)
	for k := range src {
		src[k], dst[k], cls[k] = int32(r.Intn(nodes)), int32(r.Intn(nodes)), int32(r.Intn(classes))
	}
	g, err := tensor.NewEdgeIndex(src, dst, cls, nodes, classes)
	if err != nil {
		t.Fatal(err)
	}
	h := autograd.NewParam(tensor.RandN(r, tensor.Float32, nodes, f).ToBackend(b))
	e := autograd.NewParam(tensor.RandN(r, tensor.Float32, classes, f).ToBackend(b))
	run := func(indexed bool) (uploads int, y []float64, held uint64) {
		h.ZeroGrad()
		e.ZeroGrad()
		before := b.MemStats().InUse
		u0 := fakeCall(t, "fakecuda_uploads")
		tp := autograd.NewTape()
		x := h
		for range 3 {
			if indexed {
				x = tp.Add(tp.GINEAggregateIndexed(x, e, tp.OwnIndex(g)), tp.GINEAggregateIndexed(x, e, g.Flip()))
			} else {
				x = tp.Add(tp.GINEAggregate(x, e, src, dst, cls), tp.GINEAggregate(x, e, dst, src, cls))
			}
		}
		tp.Backward(tp.SumAll(tp.Mul(x, x)))
		uploads = fakeCall(t, "fakecuda_uploads") - u0
		y = append(x.Value.Float64s(), h.Grad.Float64s()...)
		y = append(y, e.Grad.Float64s()...)
		tp.Release()
		return uploads, y, b.MemStats().InUse - before
	}
	up0, y0, _ := run(false)
	up1, y1, held := run(true)
	t.Logf("uploads for 3 layers of 2 GINE aggregations, forward and backward: %d per call, %d with one shared EdgeIndex", up0, up1)
	if up1 > 2 { // the index, and the seed of Backward
		t.Errorf("%d uploads with a shared index, want at most 2", up1)
	}
	for i := range y0 {
		if y0[i] != y1[i] {
			t.Fatalf("value %d: %v with a shared index, %v without", i, y1[i], y0[i])
		}
	}
	if held != 0 {
		t.Errorf("%d bytes still in use after releasing the tape", held)
	}
}

// BenchmarkGINEAggregate times the fused GINE aggregation, forward and
// forward + backward (dh and the per-class de), at the size of the paper's
// Planar LG-VAE batch: 256 graphs of 64 nodes, about 56K directed edges,
// 256 features, 1 edge class (the index is uploaded once, before timing).
// LGFLOW_BENCH_CPU=1 adds the CPU.
func BenchmarkGINEAggregate(b *testing.B) {
	g := gpuBackend(b)
	const graphs, n, f, deg = 256, 64, 256, 3.5
	r := tensor.NewRNG(1)
	var src, dst []int32
	for gi := range graphs {
		for k := 0; k < int(n*deg/2); k++ {
			u, v := int32(gi*n+r.Intn(n)), int32(gi*n+r.Intn(n))
			src, dst = append(src, u, v), append(dst, v, u)
		}
	}
	cls := make([]int32, len(src))
	idx, err := tensor.NewEdgeIndex(src, dst, cls, graphs*n, 1)
	if err != nil {
		b.Fatal(err)
	}
	bes := []tensor.Backend{g}
	if os.Getenv("LGFLOW_BENCH_CPU") == "1" {
		bes = append(bes, tensor.CPU)
	}
	for _, be := range bes {
		h := tensor.RandN(r, tensor.Float32, graphs*n, f).ToBackend(be)
		e := tensor.RandN(r, tensor.Float32, 1, f).ToBackend(be)
		out, dh, de := h.NewLike(), h.NewLike(), e.NewLike()
		sync := func() {
			if be == g {
				must(g.Synchronize())
			}
		}
		b.Run(be.Name()+"/fwd", func(b *testing.B) {
			tensor.GINEAggregate(out, h, e, idx)
			sync()
			b.ResetTimer()
			for range b.N {
				tensor.GINEAggregate(out, h, e, idx)
			}
			sync()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/op")
		})
		b.Run(be.Name()+"/fwd+bwd", func(b *testing.B) {
			b.ResetTimer()
			for range b.N {
				tensor.GINEAggregate(out, h, e, idx)
				tensor.GINEAggregateBackward(dh, de, out, h, e, idx)
			}
			sync()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/op")
		})
	}
	idx.Release()
}
