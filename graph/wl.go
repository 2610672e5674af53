package graph

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// wlState holds the reusable buffers of colour refinement.
type wlState struct {
	g      *Graph
	labels bool // use node and edge labels
	off    []int
	buf    []int64
	order  []int
}

// signature writes node u's refinement signature (own colour, sorted
// multiset of out-neighbour keys and, for directed graphs, a separator and
// the sorted in-neighbour keys) to s.buf. A key is the neighbour's colour,
// combined with the edge label when labels are used.
func (s *wlState) signature(u int, colour []int) {
	g := s.g
	s.buf = append(s.buf, int64(colour[u]))
	key := func(v, a, b int) int64 {
		k := int64(colour[v])
		if s.labels {
			k += int64(g.EdgeLabel(a, b)) << 32
		}
		return k
	}
	start := len(s.buf)
	for _, v := range g.out[u] {
		s.buf = append(s.buf, key(v, u, v))
	}
	slices.Sort(s.buf[start:])
	if g.directed {
		s.buf = append(s.buf, -1<<62)
		start = len(s.buf)
		for _, v := range g.in[u] {
			s.buf = append(s.buf, key(v, v, u))
		}
		slices.Sort(s.buf[start:])
	}
}

// rank replaces the signatures in s.buf by their dense ranks 0..k-1 in
// lexicographic order, writing them to dst, and returns k.
func (s *wlState) rank(dst []int) int {
	n := len(dst)
	if n == 0 {
		return 0
	}
	for i := range s.order {
		s.order[i] = i
	}
	sig := func(u int) []int64 { return s.buf[s.off[u]:s.off[u+1]] }
	slices.SortFunc(s.order, func(a, b int) int { return slices.Compare(sig(a), sig(b)) })
	k := 0
	dst[s.order[0]] = 0
	for i := 1; i < n; i++ {
		if slices.Compare(sig(s.order[i-1]), sig(s.order[i])) != 0 {
			k++
		}
		dst[s.order[i]] = k
	}
	return k + 1
}

// refine runs 1-WL colour refinement on g for the given number of rounds
// (to stability if rounds < 0) and returns the canonical colours.
func refine(g *Graph, rounds int, labels bool) []int {
	n := g.N()
	s := &wlState{g: g, labels: labels, off: make([]int, n+1), order: make([]int, n)}
	colour := make([]int, n)
	s.buf = make([]int64, 0, 3*n)
	for u := 0; u < n; u++ {
		s.off[u] = len(s.buf)
		if labels && g.NodeLabels != nil {
			s.buf = append(s.buf, int64(g.NodeLabels[u]))
		}
		s.buf = append(s.buf, int64(len(g.out[u])))
		if g.directed {
			s.buf = append(s.buf, int64(len(g.in[u])))
		}
	}
	s.off[n] = len(s.buf)
	k := s.rank(colour)
	next := make([]int, n)
	for r := 0; rounds < 0 || r < rounds; r++ {
		s.buf = s.buf[:0]
		for u := 0; u < n; u++ {
			s.off[u] = len(s.buf)
			s.signature(u, colour)
		}
		s.off[n] = len(s.buf)
		k2 := s.rank(next)
		colour, next = next, colour
		if k2 == k {
			// Stable: the signature order starts with the old colour,
			// so further rounds reproduce these colours exactly.
			break
		}
		k = k2
	}
	return colour
}

// WLColors returns the colours of 1-WL colour refinement (Weisfeiler-Leman)
// after the given number of rounds, or at stability if rounds < 0. Node
// and edge labels are ignored (see WLColorsLabeled).
//
// Round 0 colours nodes by degree (by the pair (out-degree, in-degree) for a
// directed graph). Round r+1 gives u the colour of the signature
// (c_r(u), {{c_r(v) : v ∈ N(u)}}), with out- and in-neighbour multisets kept
// apart for directed graphs. Colours are canonical: they are the dense
// ranks 0..k-1 of the signatures in lexicographic order, so two nodes get
// the same colour exactly when their signatures are equal, and an
// isomorphism g -> h maps WLColors(g) onto WLColors(h). Colours of two
// non-isomorphic graphs are not comparable (refine their disjoint union, or
// compare WLHash values). Refinement stops early once the partition is
// stable, which leaves the colours unchanged.
func WLColors(g *Graph, rounds int) []int { return refine(g, rounds, false) }

// WLColorsLabeled is WLColors with node labels (when g.NodeLabels is not
// nil) part of the initial colour and edge labels part of each neighbour's
// key.
func WLColorsLabeled(g *Graph, rounds int) []int { return refine(g, rounds, true) }

// WLOrbits returns the 1-WL "orbits" lgflow uses for symmetry breaking
// (docs/design.md, "Pre-processing"): colour refinement run to stability
// on the undirected, unlabelled view of g; every colour class with more
// than one node gets an id 1, 2, ... in order of first appearance (by node
// index) and nodes in singleton classes get 0.
func WLOrbits(g *Graph) []int {
	h := g
	if g.directed {
		h = g.Undirected()
	}
	colour := refine(h, -1, false)
	n := len(colour)
	size := make([]int, n)
	for _, c := range colour {
		size[c]++
	}
	id := make([]int, n)
	next := 1
	orb := make([]int, n)
	for u, c := range colour {
		if size[c] < 2 {
			continue
		}
		if id[c] == 0 {
			id[c] = next
			next++
		}
		orb[u] = id[c]
	}
	return orb
}

// mix64 is the splitmix64 finaliser: a fixed bijective 64-bit mixer, so
// hashes are identical on every machine and run.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func combine(h, x uint64) uint64 {
	return mix64(h ^ (mix64(x) + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)))
}

// WLHash returns an isomorphism-invariant hash of g as 32 hex digits:
// isomorphic graphs (with equal node labels, edge labels and direction)
// always get equal hashes, and non-isomorphic graphs almost always get
// different ones (1-WL cannot separate some regular graphs, for example).
//
// It refines 64-bit node hashes h_0(u) = H(label(u), deg(u)) (out- and
// in-degree for directed graphs), h_{r+1}(u) = H(h_r(u), sorted
// {{H(label(uv), h_r(v))}} over out-neighbours, sorted {{...}} over
// in-neighbours) until the number of distinct hashes stops growing, and
// digests (directed, n, m, rounds, sorted final node hashes) with SHA-256.
// Missing node labels (NodeLabels == nil) hash like all-zero labels, just as
// missing edge labels are 0. The mixing functions are fixed, so a hash is stable across runs,
// machines and versions of Go.
func WLHash(g *Graph) string {
	n := g.N()
	h := make([]uint64, n)
	next := make([]uint64, n)
	tmp := make([]uint64, 0, 16)
	labelled := g.NodeLabels != nil
	for u := 0; u < n; u++ {
		x := uint64(0x6c67666c6f77) // "lgflow"
		if labelled {
			x = combine(x, uint64(int64(g.NodeLabels[u])))
		} else {
			x = combine(x, 0)
		}
		x = combine(x, uint64(len(g.out[u])))
		if g.directed {
			x = combine(x, uint64(len(g.in[u])))
		}
		h[u] = x
	}
	distinct := func(v []uint64) int {
		s := slices.Clone(v)
		slices.Sort(s)
		return len(slices.Compact(s))
	}
	k := distinct(h)
	rounds := 0
	for {
		for u := 0; u < n; u++ {
			tmp = tmp[:0]
			for _, v := range g.out[u] {
				tmp = append(tmp, combine(uint64(int64(g.EdgeLabel(u, v))), h[v]))
			}
			slices.Sort(tmp)
			x := combine(0x51, h[u])
			for _, t := range tmp {
				x = combine(x, t)
			}
			if g.directed {
				tmp = tmp[:0]
				for _, v := range g.in[u] {
					tmp = append(tmp, combine(uint64(int64(g.EdgeLabel(v, u))), h[v]))
				}
				slices.Sort(tmp)
				x = combine(x, 0x1f)
				for _, t := range tmp {
					x = combine(x, t)
				}
			}
			next[u] = x
		}
		h, next = next, h
		rounds++
		k2 := distinct(h)
		if k2 == k {
			break
		}
		k = k2
	}
	slices.Sort(h)
	d := sha256.New()
	var w [8]byte
	put := func(x uint64) {
		binary.LittleEndian.PutUint64(w[:], x)
		d.Write(w[:])
	}
	dir := uint64(0)
	if g.directed {
		dir = 1
	}
	put(dir)
	put(uint64(n))
	put(uint64(g.m))
	put(uint64(rounds))
	for _, x := range h {
		put(x)
	}
	return hex.EncodeToString(d.Sum(nil)[:16])
}
