package iso

import (
	"fmt"
	"slices"

	"lgflow/graph"
)

// prepared is an immutable, search-friendly copy of a graph: CSR
// adjacency (out, in and undirected view), the labels that the options ask
// to compare, and stable 1-WL colours. It holds no reference to the
// original graph.
type prepared struct {
	n, m     int
	directed bool

	outOff, out []int32
	outLab      []int   // edge label per out entry; nil unless Options.EdgeLabels
	inOff, in   []int32 // equal to out for undirected graphs
	inLab       []int
	undOff, und []int32 // undirected view; equal to out for undirected graphs

	label []int // node label per node (0 if unlabelled); nil unless Options.NodeLabels

	color  []uint64 // stable 1-WL colour per node
	rounds int      // refinement rounds until the partition was stable
	hash   uint64   // isomorphism-invariant hash of the whole graph
}

func prepare(g *graph.Graph, opt Options) (*prepared, error) {
	n := g.N()
	p := &prepared{n: n, m: g.M(), directed: g.Directed()}
	if opt.NodeLabels {
		if g.NodeLabels != nil && len(g.NodeLabels) != n {
			return nil, fmt.Errorf("iso: graph has %d nodes but %d node labels", n, len(g.NodeLabels))
		}
		p.label = make([]int, n) // nil NodeLabels: all 0
		copy(p.label, g.NodeLabels)
	}
	p.outOff, p.out, p.outLab = csr(n, g.Neighbors, func(u, v int) int { return g.EdgeLabel(u, v) }, opt.EdgeLabels)
	if p.directed {
		p.inOff, p.in, p.inLab = csr(n, g.InNeighbors, func(u, v int) int { return g.EdgeLabel(v, u) }, opt.EdgeLabels)
		p.undOff = make([]int32, n+1)
		p.und = make([]int32, 0, 2*p.m)
		for u := range n {
			a, b := p.out[p.outOff[u]:p.outOff[u+1]], p.in[p.inOff[u]:p.inOff[u+1]]
			// merge two sorted lists without duplicates
			i, j := 0, 0
			for i < len(a) || j < len(b) {
				switch {
				case j == len(b) || (i < len(a) && a[i] < b[j]):
					p.und = append(p.und, a[i])
					i++
				case i == len(a) || b[j] < a[i]:
					p.und = append(p.und, b[j])
					j++
				default:
					p.und = append(p.und, a[i])
					i++
					j++
				}
			}
			p.undOff[u+1] = int32(len(p.und))
		}
	} else {
		p.inOff, p.in, p.inLab = p.outOff, p.out, p.outLab
		p.undOff, p.und = p.outOff, p.out
	}
	p.color, p.rounds, p.hash = wlRefine(p)
	return p, nil
}

func csr(n int, nb func(int) []int, lab func(u, v int) int, withLabels bool) (off, adj []int32, labs []int) {
	off = make([]int32, n+1)
	for u := range n {
		off[u+1] = off[u] + int32(len(nb(u)))
	}
	adj = make([]int32, 0, off[n])
	if withLabels {
		labs = make([]int, 0, off[n])
	}
	for u := range n {
		for _, v := range nb(u) {
			adj = append(adj, int32(v))
			if withLabels {
				labs = append(labs, lab(u, v))
			}
		}
	}
	return off, adj, labs
}

// mix is the splitmix64 finaliser, a bijective 64-bit mixer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

const (
	seedInit = 0x9e3779b97f4a7c15
	seedOut  = 0x3c6ef372fe94f82b
	seedIn   = 0xa54ff53a5f1d36f1
	seedLab  = 0x510e527fade682d1
	seedHash = 0x1f83d9abfb41bd6b
)

// wlRefine runs 1-WL colour refinement (private to this package; package
// graph has its own WLHash) until the partition into colour classes stops
// splitting, and returns the final colours, the number of rounds and a
// hash of the colour multiset together with n, m and directedness.
//
// Initial colour: (node label, out-degree, in-degree). One round maps
// colour c(u) to H(c(u), {{(ℓ(u,v), c(v)) : u -> v}}, {{(ℓ(v,u), c(v)) : v -> u}})
// where ℓ is the edge label (0 unless compared); for undirected graphs
// only the first multiset is used. Multisets are hashed by summing mixed
// elements, so the colours depend only on the isomorphism class: equal
// graphs up to relabelling get equal colour multisets. Hash collisions can
// only merge classes, which weakens pruning but never changes an answer.
func wlRefine(p *prepared) ([]uint64, int, uint64) {
	n := p.n
	col := make([]uint64, n)
	next := make([]uint64, n)
	scratch := make([]uint64, n)
	for u := range n {
		h := uint64(seedInit)
		if p.label != nil {
			h = mix(h ^ uint64(int64(p.label[u])))
		}
		h = mix(h ^ uint64(p.outOff[u+1]-p.outOff[u]))
		if p.directed {
			h = mix(h ^ uint64(p.inOff[u+1]-p.inOff[u])<<32)
		}
		col[u] = h
	}
	classes := countDistinct(col, scratch)
	rounds := 0
	for {
		for u := range n {
			var sOut, sIn uint64
			for k := p.outOff[u]; k < p.outOff[u+1]; k++ {
				e := col[p.out[k]]
				if p.outLab != nil {
					e += uint64(int64(p.outLab[k])) * seedLab
				}
				sOut += mix(e ^ seedOut)
			}
			h := mix(col[u] ^ mix(sOut))
			if p.directed {
				for k := p.inOff[u]; k < p.inOff[u+1]; k++ {
					e := col[p.in[k]]
					if p.inLab != nil {
						e += uint64(int64(p.inLab[k])) * seedLab
					}
					sIn += mix(e ^ seedIn)
				}
				h = mix(h ^ mix(sIn+seedIn))
			}
			next[u] = h
		}
		rounds++
		col, next = next, col
		c := countDistinct(col, scratch)
		if c == classes {
			break
		}
		classes = c
	}
	var sum uint64
	for _, c := range col {
		sum += mix(c ^ seedHash)
	}
	dir := uint64(0)
	if p.directed {
		dir = 1
	}
	h := mix(seedHash ^ uint64(n))
	h = mix(h ^ uint64(p.m)<<1 ^ dir)
	h = mix(h ^ uint64(rounds))
	h = mix(h ^ sum)
	return col, rounds, h
}

func countDistinct(col, scratch []uint64) int {
	copy(scratch, col)
	slices.Sort(scratch)
	return len(slices.Compact(scratch))
}
