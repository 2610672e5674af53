package graph

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// benchGraphs returns 256 random graphs with 64 nodes and about 3n edges,
// the size of the Planar-64 dataset.
func benchGraphs(directed bool) []*Graph {
	rng := rand.New(rand.NewPCG(1, 1))
	gs := make([]*Graph, 256)
	for i := range gs {
		gs[i] = randomGraph(rng, 64, 6.0/63, directed)
	}
	return gs
}

func BenchmarkGraph6Format(b *testing.B) {
	gs := benchGraphs(false)
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = AppendGraph6(buf[:0], gs[i%len(gs)])
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
}

func BenchmarkGraph6Parse(b *testing.B) {
	gs := benchGraphs(false)
	lines := make([]string, len(gs))
	for i, g := range gs {
		lines[i] = FormatGraph6(g)
	}
	b.SetBytes(int64(len(lines[0])))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := ParseGraph6(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
}

// BenchmarkEdgeListParse is the baseline for the graph6 parser: the same
// graphs read from the edge-list text format.
func BenchmarkEdgeListParse(b *testing.B) {
	gs := benchGraphs(false)
	texts := make([][]byte, len(gs))
	for i, g := range gs {
		var buf bytes.Buffer
		WriteEdgeList(&buf, g)
		texts[i] = buf.Bytes()
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := ReadEdgeList(bytes.NewReader(texts[i%len(texts)]), EdgeListOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
}

func BenchmarkDigraph6Parse(b *testing.B) {
	gs := benchGraphs(true)
	lines := make([]string, len(gs))
	for i, g := range gs {
		lines[i] = FormatDigraph6(g)
	}
	b.SetBytes(int64(len(lines[0])))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := ParseDigraph6(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
}

func BenchmarkWLHash(b *testing.B) {
	gs := benchGraphs(false)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		WLHash(gs[i%len(gs)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
}
