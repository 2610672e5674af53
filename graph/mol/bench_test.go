package mol

import (
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkMOSESTest parses and sanitises ("parse", the baseline) and then
// also canonicalises ("canonical"), or converts to a dataset graph without
// ("graph") and with the encoder features ("graph+attrs"), all 176,074 SMILES of MOSES
// test.csv.gz per iteration, one worker per GOMAXPROCS; the file is read
// once. It reports molecules per second, wall seconds per pass and CPU
// seconds per pass (steadier than wall time on a shared machine).
func BenchmarkMOSESTest(b *testing.B) {
	lines := readLines(b, filepath.Join(dataDir(b), "moses", "test.csv.gz"))[1:]
	for _, bc := range []struct {
		name string
		f    func(string) error
	}{
		{"parse", func(s string) error { _, err := ParseSMILES(s); return err }},
		{"canonical", func(s string) error { _, err := CanonicalSMILES(s); return err }},
		{"graph", func(s string) error { // ParseGraphs' work before the encoder features
			m, err := ParseSMILES(s)
			if err == nil {
				_, err = MOSES.ToDatasetGraph(m)
			}
			return err
		}},
		{"graph+attrs", func(s string) error { // ParseGraphs' work: ToDatasetGraphWithAttrs
			m, err := ParseSMILES(s)
			if err == nil {
				_, err = MOSES.ToDatasetGraphWithAttrs(m)
			}
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			workers := runtime.GOMAXPROCS(0)
			var failed atomic.Int64
			cpu0 := processCPUSeconds()
			b.ResetTimer()
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
							if err := bc.f(lines[i]); err != nil {
								failed.Add(1)
							}
						}
					}()
				}
				wg.Wait()
			}
			b.StopTimer()
			if failed.Load() > 0 {
				b.Errorf("%d molecules failed", failed.Load())
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			cpu := (processCPUSeconds() - cpu0) / float64(b.N)
			b.ReportMetric(float64(len(lines))/sec, "mol/s")
			b.ReportMetric(sec, "s/pass")
			b.ReportMetric(cpu, "cpu-s/pass")
			b.ReportMetric(1e6*cpu/float64(len(lines)), "cpu-µs/mol")
		})
	}
}
