package datasets

import (
	"context"
	"testing"
)

// BenchmarkPlanar8704 generates the whole Extended Planar dataset (8704
// graphs with 64 nodes) with all workers; BenchmarkPlanar8704Serial is the
// one-worker baseline for the same work.
func BenchmarkPlanar8704(b *testing.B) { benchSynthetic(b, planarGraph, 64, 0) }

func BenchmarkPlanar8704Serial(b *testing.B) { benchSynthetic(b, planarGraph, 64, 1) }

func BenchmarkTree8704(b *testing.B) { benchSynthetic(b, treeGraph, 64, 0) }

func BenchmarkPrice8704(b *testing.B) { benchSynthetic(b, priceGraph, 64, 0) }

func benchSynthetic(b *testing.B, gen generator, n, workers int) {
	const total = 8704
	ctx := context.Background()
	for b.Loop() {
		if _, err := generate(ctx, gen, "bench", n, 0, total, Options{Workers: workers}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "graphs/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/dataset")
}

// BenchmarkDelaunay512 triangulates 512 uniform points (one Planar-512
// graph).
func BenchmarkDelaunay512(b *testing.B) {
	pts, _ := planarPoints(stream("bench", 0, 0), 512)
	for b.Loop() {
		if _, err := Delaunay(pts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "triangulations/s")
}
