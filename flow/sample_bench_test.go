package flow_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"lgflow/flow"
	"lgflow/vae"
)

// BenchmarkSamplePlanar256 samples 256 graphs with the shipped planar models
// and 100 Euler steps (what lgflow sample -n 256 does) and reports the
// process's peak memory while sampling and the sampling speed:
//
//	peak-MB     resident set high-water mark (VmHWM, reset through
//	            /proc/self/clear_refs first); the Go runtime's peak mapped
//	            memory where /proc cannot be used
//	peak-go-MB  peak of the Go runtime's mapped memory not returned to the
//	            OS, sampled every millisecond
//	graphs/s    graphs sampled per second
//
// It takes tens of seconds per iteration: run it with -benchtime 1x.
func BenchmarkSamplePlanar256(b *testing.B) {
	ae, err := vae.Load("../pretrained/planar/vae.safetensors")
	if err != nil {
		b.Fatal(err)
	}
	m, err := flow.Load("../pretrained/planar/flow.safetensors", ae)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	peak := startPeakMeter()
	start := time.Now()
	seed := uint64(0)
	for b.Loop() {
		gs, err := flow.Sample(context.Background(), m, 256, flow.WithSeed(seed))
		if err != nil {
			b.Fatal(err)
		}
		if len(gs) != 256 {
			b.Fatalf("%d graphs, want 256", len(gs))
		}
		seed++
	}
	sec := time.Since(start).Seconds() / float64(b.N)
	rss, goMem := peak.stop()
	b.ReportMetric(rss/1e6, "peak-MB")
	b.ReportMetric(goMem/1e6, "peak-go-MB")
	b.ReportMetric(256/sec, "graphs/s")
	b.ReportMetric(sec, "s/op")
	b.ReportMetric(0, "ns/op")
}

// peakMeter follows a process's peak memory from its start.
type peakMeter struct {
	hwm  bool // VmHWM was reset and measures from the start
	quit chan struct{}
	wg   sync.WaitGroup
	peak uint64 // Go runtime memory, sampled
}

// startPeakMeter resets the resident set high-water mark (Linux) and starts
// sampling the Go runtime's memory.
func startPeakMeter() *peakMeter {
	p := &peakMeter{quit: make(chan struct{})}
	p.hwm = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	read := func() {
		metrics.Read(samples)
		p.peak = max(p.peak, samples[0].Value.Uint64()-samples[1].Value.Uint64())
	}
	read()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return p
}

// stop returns the peak resident set size (the sampled Go runtime memory
// where VmHWM is not available) and the sampled Go runtime peak, in bytes.
func (p *peakMeter) stop() (rss, goMem float64) {
	close(p.quit)
	p.wg.Wait()
	goMem = float64(p.peak)
	if p.hwm {
		if kb, ok := vmHWM(); ok {
			return float64(kb) * 1024, goMem
		}
	}
	return goMem, goMem
}

// vmHWM reads the VmHWM line of /proc/self/status, in kB.
func vmHWM() (int64, bool) {
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
