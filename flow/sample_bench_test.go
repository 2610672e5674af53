package flow_test

import (
	"runtime"
	"testing"

	"lgflow/flow"
	"lgflow/internal/peakmem"
	"lgflow/internal/samplebench"
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
	peak := peakmem.Start()
	sec := samplebench.Run(b, m, 256)
	rss, goMem := peak.Stop()
	b.ReportMetric(rss/1e6, "peak-MB")
	b.ReportMetric(goMem/1e6, "peak-go-MB")
	samplebench.Report(b, sec, 256)
}
