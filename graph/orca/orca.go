// Package orca counts graphlet orbits: for every node, how many induced
// connected subgraphs with 2, 3 or 4 nodes touch it, and in which position
// (orbit). The numbering of the 15 node orbits is that of ORCA
// (T. Hočevar and J. Demšar, "A combinatorial approach to graphlet
// counting", Bioinformatics 30(4), 2014), which follows Pržulj's graphlet
// numbering, so NodeOrbits reproduces `orca node 4` output.
//
// Orbits (the degree of a node inside the graphlet is given in brackets):
//
//	0      edge                      (1)
//	1, 2   path on 3 nodes           end (1), middle (2)
//	3      triangle                  (2)
//	4, 5   path on 4 nodes           end (1), inner (2)
//	6, 7   star K1,3 (claw)          leaf (1), centre (3)
//	8      4-cycle                   (2)
//	9-11   paw (triangle + pendant)  pendant (1), triangle nodes of degree 2 (2), attachment node (3)
//	12, 13 diamond (K4 minus an edge) degree-2 nodes (2), degree-3 nodes (3)
//	14     K4                        (3)
//
// Subgraphs are induced: four nodes spanning a 4-cycle with one chord
// count as a diamond, not as a 4-cycle. This is an independent
// implementation (it shares no code with ORCA): it enumerates every
// connected induced subgraph with at most 4 nodes exactly once with the
// ESU algorithm of S. Wernicke ("Efficient detection of network motifs",
// 2006) and classifies it by table lookup.
package orca

import (
	"runtime"
	"sync"
	"sync/atomic"

	"lgflow/graph"
)

// NumOrbits is the number of node orbits of graphlets with 2 to 4 nodes.
const NumOrbits = 15

// orbit tables indexed by the edge pattern of a 3- or 4-node subgraph
// with nodes at positions 0..k-1; entry i is the orbit of position i, or
// 255 when the pattern is disconnected.
//
// Pattern bits: (0,1)=1, (0,2)=2, (1,2)=4, (0,3)=8, (1,3)=16, (2,3)=32.
var (
	orbits3 [8][3]uint8
	orbits4 [64][4]uint8
)

var pairs = [6][2]int{{0, 1}, {0, 2}, {1, 2}, {0, 3}, {1, 3}, {2, 3}}

func init() {
	for p := range 8 {
		orbits3[p] = [3]uint8{255, 255, 255}
		var deg [3]int
		edges := 0
		for b := range 3 {
			if p>>b&1 == 1 {
				deg[pairs[b][0]]++
				deg[pairs[b][1]]++
				edges++
			}
		}
		if edges < 2 {
			continue // a 3-node graph is connected iff it has >= 2 edges
		}
		for i := range 3 {
			switch {
			case edges == 3:
				orbits3[p][i] = 3
			case deg[i] == 1:
				orbits3[p][i] = 1
			default:
				orbits3[p][i] = 2
			}
		}
	}
	for p := range 64 {
		orbits4[p] = [4]uint8{255, 255, 255, 255}
		var deg [4]int
		edges := 0
		for b := range 6 {
			if p>>b&1 == 1 {
				deg[pairs[b][0]]++
				deg[pairs[b][1]]++
				edges++
			}
		}
		if !connected4(p) {
			continue
		}
		maxDeg := max(deg[0], deg[1], deg[2], deg[3])
		for i := range 4 {
			var o uint8
			switch edges {
			case 3:
				if maxDeg == 3 { // claw
					o = map[int]uint8{1: 6, 3: 7}[deg[i]]
				} else { // path
					o = map[int]uint8{1: 4, 2: 5}[deg[i]]
				}
			case 4:
				if maxDeg == 2 { // 4-cycle
					o = 8
				} else { // paw
					o = map[int]uint8{1: 9, 2: 10, 3: 11}[deg[i]]
				}
			case 5: // diamond
				o = map[int]uint8{2: 12, 3: 13}[deg[i]]
			case 6:
				o = 14
			}
			orbits4[p][i] = o
		}
	}
}

func connected4(p int) bool {
	seen := 1
	for range 3 {
		for b := range 6 {
			if p>>b&1 == 0 {
				continue
			}
			a, c := pairs[b][0], pairs[b][1]
			if seen>>a&1 == 1 || seen>>c&1 == 1 {
				seen |= 1<<a | 1<<c
			}
		}
	}
	return seen == 15
}

// adjacency is an undirected simple graph in CSR form.
type adjacency struct {
	n   int
	off []int32
	nbr []int32
}

func newAdjacency(g *graph.Graph) adjacency {
	if g.Directed() {
		g = g.Undirected()
	}
	n := g.N()
	a := adjacency{n: n, off: make([]int32, n+1), nbr: make([]int32, 0, 2*g.M())}
	for u := range n {
		for _, v := range g.Neighbors(u) {
			a.nbr = append(a.nbr, int32(v))
		}
		a.off[u+1] = int32(len(a.nbr))
	}
	return a
}

// NodeOrbits returns, for every node u of g, the number of induced
// connected graphlets with 2 to 4 nodes in which u occupies each of the 15
// orbits listed in the package documentation; row u equals line u of
// `orca node 4` output. A directed graph is counted through its undirected
// view. g is not modified; the result is freshly allocated.
//
// Every connected induced subgraph is enumerated once, so the time is
// proportional to their number, which is O(Σ_u deg(u)³); large graphs are
// split across GOMAXPROCS workers.
func NodeOrbits(g *graph.Graph) [][NumOrbits]int64 {
	a := newAdjacency(g)
	out := make([][NumOrbits]int64, a.n)
	if a.n == 0 {
		return out
	}
	// Estimate the work (number of 4-node paths) to decide on parallelism.
	work := 0
	for u := range a.n {
		du := int(a.off[u+1] - a.off[u])
		for _, v := range a.nbr[a.off[u]:a.off[u+1]] {
			work += du * int(a.off[v+1]-a.off[v])
		}
	}
	workers := runtime.GOMAXPROCS(0)
	if work < 200_000 || workers < 2 {
		workers = 1
	}
	if workers == 1 {
		c := newCounter(&a, out)
		for v := range a.n {
			c.root(int32(v))
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		var mu sync.Mutex
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				local := make([][NumOrbits]int64, a.n)
				c := newCounter(&a, local)
				for {
					v := next.Add(1) - 1
					if v >= int64(a.n) {
						break
					}
					c.root(int32(v))
				}
				mu.Lock()
				for i := range out {
					for k := range out[i] {
						out[i][k] += local[i][k]
					}
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	for u := range a.n {
		out[u][0] = int64(a.off[u+1] - a.off[u])
	}
	return out
}

// mask bits per node during the enumeration.
const (
	adj0  = 1 << 0 // adjacent to the subgraph node at position 0
	adj1  = 1 << 1 // ... position 1
	adj2  = 1 << 2 // ... position 2
	inSub = 1 << 3 // member of the current subgraph
)

// counter holds one worker's scratch space.
type counter struct {
	a          *adjacency
	out        [][NumOrbits]int64
	mask       []uint8
	ext1, ext2 []int32
}

func newCounter(a *adjacency, out [][NumOrbits]int64) *counter {
	maxDeg := int32(0)
	for u := range a.n {
		maxDeg = max(maxDeg, a.off[u+1]-a.off[u])
	}
	return &counter{
		a:    a,
		out:  out,
		mask: make([]uint8, a.n),
		ext1: make([]int32, 0, maxDeg),
		ext2: make([]int32, 0, a.n),
	}
}

func (c *counter) setMask(u int32, bit uint8) {
	for _, x := range c.a.nbr[c.a.off[u]:c.a.off[u+1]] {
		c.mask[x] |= bit
	}
}

func (c *counter) clearMask(u int32, bit uint8) {
	for _, x := range c.a.nbr[c.a.off[u]:c.a.off[u+1]] {
		c.mask[x] &^= bit
	}
}

// root enumerates (ESU) every connected induced subgraph with 3 or 4
// nodes whose smallest node is v, adding its orbits to c.out.
func (c *counter) root(v int32) {
	a, mask, out := c.a, c.mask, c.out
	nb := a.nbr[a.off[v]:a.off[v+1]]
	ext1 := c.ext1[:0]
	for _, u := range nb {
		if u > v {
			ext1 = append(ext1, u)
		}
	}
	if len(ext1) == 0 {
		return
	}
	mask[v] |= inSub
	c.setMask(v, adj0)
	for len(ext1) > 0 {
		u := ext1[len(ext1)-1]
		ext1 = ext1[:len(ext1)-1]
		// Subgraph {v, u}; extension = rest of ext1 plus the exclusive
		// neighbours of u (not in or next to {v}) above v.
		ext2 := append(c.ext2[:0], ext1...)
		for _, x := range a.nbr[a.off[u]:a.off[u+1]] {
			if x > v && mask[x]&(adj0|inSub) == 0 {
				ext2 = append(ext2, x)
			}
		}
		mask[u] |= inSub
		c.setMask(u, adj1)
		for len(ext2) > 0 {
			w := ext2[len(ext2)-1]
			ext2 = ext2[:len(ext2)-1]
			mw := mask[w]
			t3 := &orbits3[1|(mw&3)<<1]
			out[v][t3[0]]++
			out[u][t3[1]]++
			out[w][t3[2]]++
			// Fourth node from the rest of ext2 (any adjacency to w) ...
			mask[w] |= inSub
			c.setMask(w, adj2)
			base := 1 | int(mw&3)<<1
			for _, x := range ext2 {
				t4 := &orbits4[base|int(mask[x]&7)<<3]
				out[v][t4[0]]++
				out[u][t4[1]]++
				out[w][t4[2]]++
				out[x][t4[3]]++
			}
			// ... or an exclusive neighbour of w (adjacent to w only).
			t4 := &orbits4[base|int(adj2)<<3]
			for _, x := range a.nbr[a.off[w]:a.off[w+1]] {
				if x > v && mask[x]&(adj0|adj1|inSub) == 0 {
					out[v][t4[0]]++
					out[u][t4[1]]++
					out[w][t4[2]]++
					out[x][t4[3]]++
				}
			}
			c.clearMask(w, adj2)
			mask[w] &^= inSub
		}
		c.clearMask(u, adj1)
		mask[u] &^= inSub
	}
	c.clearMask(v, adj0)
	mask[v] &^= inSub
}

// GraphletCounts returns the number of induced connected graphlets of g
// with 2 to 4 nodes: edges, induced paths on 3 nodes, triangles, induced
// paths on 4 nodes, claws (K1,3), induced 4-cycles, paws, diamonds and
// K4s. A directed graph is counted through its undirected view.
//
// The counts follow from the orbit totals: each graphlet contributes to
// the orbit of its unique node class once (P3 middle, claw centre, paw
// attachment node) or to a class of k nodes k times.
func GraphletCounts(g *graph.Graph) (edges, p3, triangles, p4, claws, c4, paws, diamonds, k4 int64) {
	var s [NumOrbits]int64
	for _, row := range NodeOrbits(g) {
		for k, c := range row {
			s[k] += c
		}
	}
	return s[0] / 2, s[2], s[3] / 3, s[4] / 2, s[7], s[8] / 4, s[11], s[13] / 2, s[14] / 4
}
