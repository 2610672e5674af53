// Command geometric writes a family of graphs lgflow was not built for,
// random geometric graphs, to try "lgflow train -graphs" on one's own
// data, and an Erdős–Rényi baseline to judge the samples by:
//
//	go run ./examples/geometric -o geo                   # geo/train.g6 (512), geo/test.g6 (128), geo/er.g6
//	go run ./cmd/lgflow train -graphs geo/train.g6 -out geo/model -budget 20m
//	go run ./cmd/lgflow sample -model geo/model -n 64 -o geo/samples.g6
//	go run ./cmd/lgflow eval -gen geo/samples.g6 -ref geo/test.g6
//	go run ./cmd/lgflow eval -gen geo/er.g6 -ref geo/test.g6     # the baseline
//
// Each graph has n nodes (uniform in [-min-nodes, -max-nodes]) at uniform
// random points of the unit square, joined when closer than the radius
// that gives mean degree -degree (n·π·r² = degree, before the border's
// loss); graphs that come out disconnected are drawn again, so every
// graph is connected. er.g6 holds, for each test graph, a G(n, m) graph
// with its node and edge counts: a baseline that knows the sizes and
// densities but not the geometry. Everything is seeded (-seed).
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"lgflow/graph"
	"lgflow/tensor"
)

func main() {
	out := flag.String("o", "geometric", "output directory")
	ntrain := flag.Int("train", 512, "training graphs")
	ntest := flag.Int("test", 128, "test graphs")
	minN := flag.Int("min-nodes", 24, "fewest nodes of a graph")
	maxN := flag.Int("max-nodes", 40, "most nodes of a graph")
	degree := flag.Float64("degree", 6, "mean degree the radius aims at")
	seed := flag.Uint64("seed", 1, "seed")
	flag.Parse()
	if err := run(*out, *ntrain, *ntest, *minN, *maxN, *degree, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "geometric:", err)
		os.Exit(1)
	}
}

func run(out string, ntrain, ntest, minN, maxN int, degree float64, seed uint64) error {
	if minN < 2 || maxN < minN || ntrain < 1 || ntest < 1 || degree <= 0 {
		return fmt.Errorf("need 2 <= -min-nodes <= -max-nodes, positive -train, -test and -degree")
	}
	r := tensor.NewRNG(seed)
	family := func(k int) []*graph.Graph {
		gs := make([]*graph.Graph, k)
		for i := range gs {
			gs[i] = Connected(r, minN+r.Intn(maxN-minN+1), degree)
		}
		return gs
	}
	train, test := family(ntrain), family(ntest)
	er := make([]*graph.Graph, len(test))
	for i, g := range test {
		er[i] = GNM(r, g.N(), g.M())
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		gs   []*graph.Graph
	}{{"train.g6", train}, {"test.g6", test}, {"er.g6", er}} {
		if err := graph.WriteFile(filepath.Join(out, f.name), f.gs); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %s/{train.g6,test.g6,er.g6}: %d and %d random geometric graphs of %d-%d nodes, mean degree about %g, and G(n, m) graphs of the test graphs' sizes\n",
		out, ntrain, ntest, minN, maxN, degree)
	return nil
}

// Geometric returns a random geometric graph: n uniform points of the
// unit square, an edge between two points closer than sqrt(degree/(π·n)).
func Geometric(r *tensor.RNG, n int, degree float64) *graph.Graph {
	radius := math.Sqrt(degree / (math.Pi * float64(n)))
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range xs {
		xs[i], ys[i] = r.Uniform(), r.Uniform()
	}
	g := graph.New(n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			if math.Hypot(xs[i]-xs[j], ys[i]-ys[j]) < radius {
				g.MustAddEdge(i, j)
			}
		}
	}
	return g
}

// Connected draws random geometric graphs until one is connected.
func Connected(r *tensor.RNG, n int, degree float64) *graph.Graph {
	for {
		if g := Geometric(r, n, degree); graph.IsConnected(g) {
			return g
		}
	}
}

// GNM returns a uniform random graph with n nodes and m edges.
func GNM(r *tensor.RNG, n, m int) *graph.Graph {
	g := graph.New(n)
	for g.M() < min(m, n*(n-1)/2) {
		u, v := r.Intn(n), r.Intn(n)
		if u != v {
			g.MustAddEdge(u, v)
		}
	}
	return g
}
