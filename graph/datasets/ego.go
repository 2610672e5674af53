package datasets

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"lgflow/graph"
)

// EgoNets returns, for each centre c in centres (in that order), the
// subgraph of g induced by the nodes within shortest-path distance radius
// of c, keeping it only if it has between minN and maxN nodes inclusive.
// It also returns the centres that were kept. Nodes of an ego net are
// numbered in increasing order of their index in g, so node k of a net is
// its k-th smallest original node. g is treated as undirected.
func EgoNets(g *graph.Graph, centres []int, radius, minN, maxN int) ([]*graph.Graph, []int) {
	n := g.N()
	dist := make([]int, n)
	local := make([]int, n)
	for i := range dist {
		dist[i] = -1
		local[i] = -1
	}
	var nets []*graph.Graph
	var kept []int
	queue := make([]int, 0, n)
	inSet := make([]bool, n)
	for _, c := range centres {
		queue = append(queue[:0], c)
		dist[c] = 0
		for head := 0; head < len(queue); head++ {
			u := queue[head]
			if dist[u] == radius {
				continue
			}
			visit := func(v int) {
				if dist[v] < 0 {
					dist[v] = dist[u] + 1
					queue = append(queue, v)
				}
			}
			for _, v := range g.Neighbors(u) {
				visit(v)
			}
			if g.Directed() {
				for _, v := range g.InNeighbors(u) {
					visit(v)
				}
			}
		}
		if k := len(queue); k >= minN && k <= maxN {
			for _, u := range queue {
				inSet[u] = true
			}
			// Number nodes in increasing original order.
			k := 0
			for u := 0; u < n && k < len(queue); u++ {
				if inSet[u] {
					local[u] = k
					k++
				}
			}
			h := graph.New(len(queue))
			for _, u := range queue {
				for _, v := range g.Neighbors(u) {
					if inSet[v] {
						h.MustAddEdge(local[u], local[v])
					}
				}
			}
			for _, u := range queue {
				inSet[u] = false
				local[u] = -1
			}
			nets = append(nets, h)
			kept = append(kept, c)
		}
		for _, u := range queue {
			dist[u] = -1
		}
	}
	return nets, kept
}

// citeseerEdges returns the path of citeseer_edges.txt under dir, which
// may be the data directory or its ego/ subdirectory.
func citeseerEdges(dir string) string {
	p := filepath.Join(dir, "ego", "citeseer_edges.txt")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return filepath.Join(dir, "citeseer_edges.txt")
}

// ReadCiteseer reads the Citeseer citation graph from citeseer_edges.txt
// under dir (the data directory or its ego/ subdirectory): 3327 nodes,
// 4552 undirected edges, self-loops already dropped.
func ReadCiteseer(dir string) (*graph.Graph, error) {
	p := citeseerEdges(dir)
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("datasets: ego: %w", err)
	}
	defer f.Close()
	g, err := ParseCiteseer(f)
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", p, err)
	}
	return g, nil
}

// maxCiteseerNodes bounds the header of a Citeseer edge list (the real
// graph has 3327 nodes), so that a damaged header is an error rather than
// a huge allocation.
const maxCiteseerNodes = 1 << 20

// ParseCiteseer reads an undirected graph in citeseer_edges.txt's format
// from r: a header line "n m" followed by m lines "u v" with 0-based node
// ids below n, '#' comments and blank lines ignored. Self-loops are
// dropped, repeated edges kept once. Errors name the line (see
// graph.ReadEdgeList); graphs of more than 2^20 nodes are rejected.
func ParseCiteseer(r io.Reader) (*graph.Graph, error) {
	return parseCiteseer(r, maxCiteseerNodes)
}

func parseCiteseer(r io.Reader, maxNodes int) (*graph.Graph, error) {
	return graph.ReadEdgeList(r, graph.EdgeListOptions{Header: graph.HeaderPresent, DropSelfLoops: true, MaxNodes: maxNodes})
}

// Ego returns the 757 graphs of the Ego dataset (GraphRNN's Citeseer 3-hop
// ego nets) rebuilt from citeseer_edges.txt under dir: in the largest
// connected component (2120 nodes), for every node c in increasing id
// order, the subgraph induced by the nodes within distance 3 of c, kept
// when it has 50 to 400 nodes. Nodes of each net are ordered by original
// id. Self-loops of the original pickle are not represented (Graph has
// none); the row order, node and edge counts match
// ego_citeseer_757_index.tsv.
func Ego(dir string) ([]*graph.Graph, error) {
	g, err := ReadCiteseer(dir)
	if err != nil {
		return nil, err
	}
	return EgoFromGraph(g), nil
}

// EgoFromGraph returns the Ego nets of g as Ego builds them from Citeseer:
// for every node c of the largest connected component in increasing id
// order, the subgraph induced by the nodes within distance 3 of c, kept
// when it has 50 to 400 nodes.
func EgoFromGraph(g *graph.Graph) []*graph.Graph {
	comps := graph.Components(g)
	var lcc []int
	for _, c := range comps {
		if len(c) > len(lcc) {
			lcc = c
		}
	}
	nets, _ := EgoNets(g, lcc, 3, 50, 400)
	return nets
}

// EgoSplit returns the split of n Ego graphs as DeFoG makes it, with our
// own seeded permutation in place of torch.randperm(generator seed 1234),
// which cannot be reproduced without torch: train = perm[:round(0.8 n)],
// val = perm[:round(0.2 n)] (a subset of train, as in the reference) and
// test = perm[round(0.8 n):]. For 757 graphs: 606 / 151 / 151.
func EgoSplit(n int, seed uint64) (train, val, test []int) {
	perm := stream("ego-split", seed, 0).Perm(n)
	nTrain := int(math.Round(0.8 * float64(n)))
	nVal := int(math.Round(0.2 * float64(n)))
	return perm[:nTrain], perm[:nVal], perm[nTrain:]
}

func loadEgo(ctx context.Context, split string, opt Options) ([]*graph.Graph, error) {
	dir, err := opt.dir()
	if err != nil {
		return nil, err
	}
	all, err := Ego(dir)
	if err != nil {
		return nil, err
	}
	train, val, test := EgoSplit(len(all), opt.Seed)
	idx := map[string][]int{"train": train, "val": val, "test": test}[split]
	out := make([]*graph.Graph, len(idx))
	for i, k := range idx {
		out[i] = all[k]
	}
	if opt.Progress != nil {
		opt.Progress(len(out), len(out))
	}
	return out, ctx.Err()
}
