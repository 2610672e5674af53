package mol

import (
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkCanonicalMOSESTest parses, sanitises and canonicalises all
// 176,074 SMILES of MOSES test.csv.gz per iteration, one worker per
// GOMAXPROCS. It reports molecules per second and the seconds per pass.
func BenchmarkCanonicalMOSESTest(b *testing.B) {
	lines := readLines(b, filepath.Join(dataDir(b), "moses", "test.csv.gz"))[1:]
	workers := runtime.GOMAXPROCS(0)
	b.ResetTimer()
	cpu0 := processCPUSeconds()
	var failed atomic.Int64
	for it := 0; it < b.N; it++ {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= len(lines) {
						return
					}
					if _, err := CanonicalSMILES(lines[i]); err != nil {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	cpu := (processCPUSeconds() - cpu0) / float64(b.N)
	if failed.Load() > 0 {
		b.Errorf("%d molecules failed", failed.Load())
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(len(lines))/sec, "mol/s")
	b.ReportMetric(sec, "s/pass")
	// CPU seconds are steadier than wall time on a shared machine.
	b.ReportMetric(cpu, "cpu-s/pass")
	b.ReportMetric(1e6*cpu/float64(len(lines)), "cpu-µs/mol")
}
