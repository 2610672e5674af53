package datasets

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"lgflow/graph"
)

// generator builds one graph with n nodes from rng.
type generator func(rng *rand.Rand, n int) *graph.Graph

// stream returns the random stream of graph index of a dataset: ChaCha8
// keyed by SHA-256(name, seed, index). Streams of different indices,
// seeds or datasets are independent.
func stream(name string, seed uint64, index int) *rand.Rand {
	h := sha256.New()
	h.Write([]byte("lgflow/datasets/"))
	h.Write([]byte(name))
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(index))
	h.Write(b[:])
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return rand.New(rand.NewChaCha8(key))
}

// generate builds graphs lo..hi-1 of a synthetic dataset in parallel. Each
// graph depends only on (name, seed, index), so the result does not depend
// on the number of workers.
func generate(ctx context.Context, gen generator, name string, n, lo, hi int, opt Options) ([]*graph.Graph, error) {
	total := hi - lo
	out := make([]*graph.Graph, total)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(total, 1))
	var next, done atomic.Int64
	var progMu sync.Mutex
	reported := 0
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if ctx.Err() != nil {
					return
				}
				// Claim indices in small chunks to keep scheduling cheap.
				const chunk = 16
				start := int(next.Add(chunk)) - chunk
				if start >= total {
					return
				}
				end := min(start+chunk, total)
				for i := start; i < end; i++ {
					out[i] = gen(stream(name, opt.Seed, lo+i), n)
				}
				d := int(done.Add(int64(end - start)))
				if opt.Progress != nil {
					progMu.Lock()
					if d > reported {
						reported = d
						opt.Progress(d, total)
					}
					progMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Planar returns count Extended-Planar graphs with n nodes each, graph i
// being graph i of the "planar" dataset with this seed (so Planar(64,
// 8704, 0)[8192:8448] is the default val split). Each graph is the
// Delaunay triangulation of n uniform points in the unit square, with an
// edge for every triangle side; nodes are numbered in point order. It is
// connected and planar with 3n - 3 - h edges, h being the number of hull
// points. It panics if n < 1.
func Planar(n, count int, seed uint64) []*graph.Graph {
	return mustGenerate(planarGraph, "planar", n, count, seed)
}

// Tree returns count uniform random labelled trees with n nodes each
// (networkx random_tree: decode a uniform random Prüfer sequence). It
// panics if n < 1.
func Tree(n, count int, seed uint64) []*graph.Graph {
	return mustGenerate(treeGraph, "tree", n, count, seed)
}

// Price returns count directed acyclic Price graphs with n nodes each
// (Directo's generator; docs/design.md, "Datasets"): with m = round(log2 n)
// and a bag holding node 0, each node i = 1..n-1 draws m targets from the
// bag uniformly with replacement, gets an edge i -> j to each distinct
// target, and adds itself and all m draws to the bag (so P(j) ∝ 1 + times
// j was drawn). Finally the nodes are renamed by a uniform random
// permutation.
// It panics if n < 1.
func Price(n, count int, seed uint64) []*graph.Graph {
	return mustGenerate(priceGraph, "price", n, count, seed)
}

func mustGenerate(gen generator, name string, n, count int, seed uint64) []*graph.Graph {
	if n < 1 {
		panic("datasets: graphs need at least one node")
	}
	gs, err := generate(context.Background(), gen, name, n, 0, count, Options{Seed: seed})
	if err != nil {
		panic(err) // unreachable: the background context is never cancelled
	}
	return gs
}

func planarGraph(rng *rand.Rand, n int) *graph.Graph {
	_, tris := planarPoints(rng, n)
	es := make([]graph.Edge, 0, 3*len(tris)+1)
	for _, t := range tris {
		// Interior sides appear in two triangles; FromEdges merges them.
		es = append(es, graph.Edge{From: t[0], To: t[1]}, graph.Edge{From: t[1], To: t[2]}, graph.Edge{From: t[2], To: t[0]})
	}
	if n == 2 {
		es = append(es, graph.Edge{From: 0, To: 1})
	}
	return mustFromEdges(n, false, es)
}

func mustFromEdges(n int, directed bool, es []graph.Edge) *graph.Graph {
	g, err := graph.FromEdges(n, directed, es)
	if err != nil {
		panic(err) // generators only produce valid edges
	}
	return g
}

// planarPoints draws n uniform points in the unit square and returns them
// with their Delaunay triangles, drawing again in the (probability zero)
// event of duplicate or collinear points. For n < 3 there are no
// triangles.
func planarPoints(rng *rand.Rand, n int) ([][2]float64, [][3]int) {
	pts := make([][2]float64, n)
	for {
		for i := range pts {
			pts[i] = [2]float64{rng.Float64(), rng.Float64()}
		}
		if n < 3 {
			return pts, nil
		}
		tris, err := Delaunay(pts)
		if err == nil {
			return pts, tris
		}
	}
}

// fromPrufer decodes a Prüfer sequence (length n-2, entries in [0, n))
// into its labelled tree, in linear time: repeatedly join the smallest
// leaf to the next sequence entry.
func fromPrufer(seq []int, n int) *graph.Graph {
	if n < 2 {
		return graph.New(n)
	}
	es := make([]graph.Edge, 0, n-1)
	deg := make([]int, n)
	for i := range deg {
		deg[i] = 1
	}
	for _, v := range seq {
		deg[v]++
	}
	ptr := 0
	for deg[ptr] != 1 {
		ptr++
	}
	leaf := ptr
	for _, v := range seq {
		es = append(es, graph.Edge{From: leaf, To: v})
		deg[leaf]--
		deg[v]--
		if deg[v] == 1 && v < ptr {
			leaf = v
		} else {
			for ptr++; deg[ptr] != 1; ptr++ {
			}
			leaf = ptr
		}
	}
	// The two nodes left with degree 1 are leaf and n-1.
	es = append(es, graph.Edge{From: leaf, To: n - 1})
	return mustFromEdges(n, false, es)
}

func treeGraph(rng *rand.Rand, n int) *graph.Graph {
	if n < 2 {
		return graph.New(n)
	}
	seq := make([]int, n-2)
	for i := range seq {
		seq[i] = rng.IntN(n)
	}
	return fromPrufer(seq, n)
}

func priceGraph(rng *rand.Rand, n int) *graph.Graph {
	m := int(math.Round(math.Log2(float64(n))))
	adj := make([][]int, n)
	bag := make([]int, 1, n*(m+1))
	draws := make([]int, m)
	for i := 1; i < n; i++ {
		for k := range draws {
			draws[k] = bag[rng.IntN(len(bag))]
		}
		adj[i] = append(adj[i], draws...)
		bag = append(bag, i)
		bag = append(bag, draws...)
	}
	perm := rng.Perm(n)
	es := make([]graph.Edge, 0, (n-1)*m)
	for i, ts := range adj {
		for _, j := range ts {
			es = append(es, graph.Edge{From: perm[i], To: perm[j]}) // duplicates merge
		}
	}
	return mustFromEdges(n, true, es)
}
