package moses

import (
	"bufio"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"

	"lgflow/graph/mol"
)

// BenchmarkSNN measures the nearest-neighbour Tanimoto search of SNN on
// MOSES test molecules (1,000 generated against 20,000 reference
// fingerprints) and reports nanoseconds per fingerprint pair.
func BenchmarkSNN(b *testing.B) {
	f, err := os.Open(filepath.Join(dataDir(b), "moses", "test.csv.gz"))
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(gz)
	sc.Scan() // header
	var fps []mol.Fingerprint
	for sc.Scan() && len(fps) < 21000 {
		m, err := mol.ParseSMILES(sc.Text())
		if err != nil {
			b.Fatal(err)
		}
		fps = append(fps, m.MorganFingerprint(2, 1024))
	}
	gen, ref := fps[:1000], fps[1000:]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := SNN(context.Background(), gen, ref, nil); err != nil {
			b.Fatal(err)
		}
	}
	pairs := float64(len(gen) * len(ref))
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/pairs, "ns/pair")
}
