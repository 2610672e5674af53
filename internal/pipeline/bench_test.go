package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/internal/peakmem"
	"lgflow/internal/samplebench"
	"lgflow/tensor"
	"lgflow/vae"
)

// BenchmarkSampleScaling measures sampling time and peak memory against
// graph size, the paper's Planar-N scaling experiment (its "larger planar
// graphs" table: 4.6 s at 64 nodes to 130 s at 512 on an L40; docs/design.md,
// "The paper's figures"): 16 planar graphs of 64, 128, 256
// and 512 nodes in one batch, with flow.Sample's default settings, from a
// randomly initialised model of the planar cpu shape (LG-VAE planar/cpu,
// LG-Flow cpu DiT 4 x 128). Timing depends on the shapes, not on the
// weights. It reports
//
//	s/op      seconds to sample the 16 graphs (integration and decoding)
//	peak-MB   peak resident set while sampling (VmHWM, reset before each
//	          size); the sampled Go heap where /proc is not available
//	heap-MB   peak of the Go heap's live and unswept objects, sampled
//	          every millisecond
//
// Each size takes seconds to a minute on two cores: run it with
//
//	go test -run XXX -bench SampleScaling -benchtime 1x ./internal/pipeline/
func BenchmarkSampleScaling(b *testing.B) {
	p, err := vae.PresetFor("planar", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	ae, err := vae.New(p.Model, 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := flow.Preset("", "cpu", p.Model.Latent)
	if err != nil {
		b.Fatal(err)
	}
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		b.Fatal(err)
	}
	m := &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 1, NodeCounts: []int{0, 1}}
	const graphs = 16
	for _, n := range []int{64, 128, 256, 512} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			sizes := make([]int, graphs)
			for i := range sizes {
				sizes[i] = n
			}
			runtime.GC()
			meter := peakmem.Start()
			start := time.Now()
			for b.Loop() {
				gs, err := flow.Sample(context.Background(), m, graphs, flow.WithNodeCounts(sizes), flow.WithBatchSize(graphs))
				if err != nil {
					b.Fatal(err)
				}
				if len(gs) != graphs || gs[0].N() != n {
					b.Fatalf("%d graphs of %d nodes, want %d of %d", len(gs), gs[0].N(), graphs, n)
				}
			}
			sec := time.Since(start).Seconds() / float64(b.N)
			rss, heap := meter.Stop()
			b.ReportMetric(sec, "s/op")
			b.ReportMetric(rss/1e6, "peak-MB")
			b.ReportMetric(heap/1e6, "heap-MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSampleShippedPlanar256 measures what go run ./examples/planar
// samples: 256 graphs from the shipped planar bundle with its recipe
// (pretrained/planar/sampler.json: the expert, the time grid, offsets,
// edge rule and margin), integration and decoding, against the same
// settings on the paper's grid of 100 uniform steps ("uniform100") in the
// same run. #14's goal is 9 s on two threads:
//
//	go test -run XXX -bench SampleShippedPlanar256 -benchtime 2x ./internal/pipeline/
func BenchmarkSampleShippedPlanar256(b *testing.B) {
	dir, err := PretrainedDir()
	if err != nil {
		b.Skip(err)
	}
	m, err := flow.Open(filepath.Join(dir, "planar"))
	if err != nil {
		b.Skip("no shipped planar models: ", err)
	}
	for _, c := range []struct {
		name string
		opts []flow.SampleOption
	}{
		{"shipped", nil},
		{"uniform100", []flow.SampleOption{flow.WithSettings(func(s *flow.Sampler) { s.Steps, s.TimeShift = 100, 1 })}},
	} {
		b.Run(c.name, func(b *testing.B) {
			samplebench.Report(b, samplebench.Run(b, m, 256, c.opts...), 256)
		})
	}
}
