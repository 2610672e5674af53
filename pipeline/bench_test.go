package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/tensor"
	"lgflow/vae"
)

// BenchmarkSampleScaling measures sampling time and peak memory against
// graph size, the paper's Planar-N scaling experiment (REFERENCE 5: 4.6 s
// at 64 nodes to 130 s at 512 on an L40): 16 planar graphs of 64, 128, 256
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
//	go test -run XXX -bench SampleScaling -benchtime 1x ./pipeline/
func BenchmarkSampleScaling(b *testing.B) {
	p, err := vae.PresetFor("planar", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	ae, err := vae.New(p.Model, 1)
	if err != nil {
		b.Fatal(err)
	}
	ae.Train(false)
	cfg, err := flow.Preset("cpu", p.Model.Latent)
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
			meter := startMemMeter()
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
			rss, heap := meter.stop()
			b.ReportMetric(sec, "s/op")
			b.ReportMetric(rss/1e6, "peak-MB")
			b.ReportMetric(heap/1e6, "heap-MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// memMeter follows the peak memory of the process from its start.
type memMeter struct {
	hwm  bool // VmHWM was reset, so it measures from the start
	quit chan struct{}
	wg   sync.WaitGroup
	heap uint64
}

// startMemMeter resets the resident set high-water mark (Linux) and starts
// sampling the Go heap every millisecond.
func startMemMeter() *memMeter {
	m := &memMeter{quit: make(chan struct{})}
	m.hwm = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(s)
		m.heap = max(m.heap, s[0].Value.Uint64())
	}
	read()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.quit:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return m
}

// stop returns the peak resident set size (the sampled heap peak where
// VmHWM is not available) and the sampled heap peak, in bytes.
func (m *memMeter) stop() (rss, heap float64) {
	close(m.quit)
	m.wg.Wait()
	heap = float64(m.heap)
	if m.hwm {
		if kb, ok := readVmHWM(); ok {
			return float64(kb) * 1024, heap
		}
	}
	return heap, heap
}

// readVmHWM reads the VmHWM line of /proc/self/status, in kB.
func readVmHWM() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := bytes.Fields(sc.Bytes()); len(f) >= 2 && string(f[0]) == "VmHWM:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}
