package iso

import (
	"context"
	"slices"
)

// matcher holds the state of one VF2++ search from p (pattern) to q.
type matcher struct {
	p, q *prepared
	n    int

	colP, colQ []int32 // dense colour ids shared by both graphs
	nColors    int

	order []int32 // matching order of p's nodes

	coreP, coreQ []int32 // partial mapping, -1 = unmatched
	termP, termQ []int32 // number of matched undirected neighbours

	// q's nodes by colour, CSR; the unmatched nodes of colour c are
	// byCol[byColOff[c] : byColOff[c]+free[c]] (matching swaps a node to
	// the end of its class; unmatching, done in reverse order, undoes it)
	byColOff []int32
	byCol    []int32
	free     []int32
	posQ     []int32 // position of each q node in byCol

	// scratch counters indexed by colour
	cntT, cntR []int32
}

// match decides whether p and q are isomorphic. The cheap size checks
// have been done by the caller.
func match(ctx context.Context, p, q *prepared) (bool, error) {
	if p.n != q.n || p.m != q.m || p.directed != q.directed {
		return false, nil
	}
	if p.rounds != q.rounds || p.hash != q.hash {
		return false, nil
	}
	n := p.n
	if n == 0 {
		return true, nil
	}
	mt := &matcher{p: p, q: q, n: n}
	if !mt.denseColors() {
		return false, nil
	}
	mt.computeOrder()
	mt.coreP = fillI32(make([]int32, n), -1)
	mt.coreQ = fillI32(make([]int32, n), -1)
	mt.termP = make([]int32, n)
	mt.termQ = make([]int32, n)
	mt.cntT = make([]int32, mt.nColors)
	mt.cntR = make([]int32, mt.nColors)
	return mt.search(ctx)
}

func fillI32(s []int32, v int32) []int32 {
	for i := range s {
		s[i] = v
	}
	return s
}

// denseColors numbers the colours of p 0..k-1, maps q's colours through
// the same numbering, and checks that both graphs have the same number of
// nodes of every colour.
func (mt *matcher) denseColors() bool {
	n := mt.n
	ids := make(map[uint64]int32, n)
	mt.colP = make([]int32, n)
	mt.colQ = make([]int32, n)
	for u, c := range mt.p.color {
		id, ok := ids[c]
		if !ok {
			id = int32(len(ids))
			ids[c] = id
		}
		mt.colP[u] = id
	}
	k := len(ids)
	cnt := make([]int32, k+1)
	for _, c := range mt.colP {
		cnt[c+1]++
	}
	for v, c := range mt.q.color {
		id, ok := ids[c]
		if !ok {
			return false
		}
		mt.colQ[v] = id
	}
	qcnt := make([]int32, k+1)
	for _, c := range mt.colQ {
		qcnt[c+1]++
	}
	if !slices.Equal(cnt, qcnt) {
		return false
	}
	for i := 1; i <= k; i++ {
		cnt[i] += cnt[i-1]
	}
	mt.byColOff = slices.Clone(cnt)
	mt.byCol = make([]int32, n)
	mt.posQ = make([]int32, n)
	for v, c := range mt.colQ {
		mt.byCol[cnt[c]] = int32(v)
		mt.posQ[v] = cnt[c]
		cnt[c]++
	}
	mt.free = make([]int32, k)
	for c := range k {
		mt.free[c] = mt.byColOff[c+1] - mt.byColOff[c]
	}
	mt.nColors = k
	return true
}

// maxGreedyLevel bounds the BFS levels ordered by the quadratic greedy rule.
const maxGreedyLevel = 256

// computeOrder orders p's nodes as VF2++ does: repeatedly start a BFS at
// an unordered node of the rarest colour (largest degree among those),
// and within each BFS level take next the node with the most ordered
// neighbours, then the largest degree, then the rarest colour.
func (mt *matcher) computeOrder() {
	p, n := mt.p, mt.n
	rarity := make([]int32, mt.nColors)
	for _, c := range mt.colP {
		rarity[c]++
	}
	deg := func(u int32) int32 {
		d := p.outOff[u+1] - p.outOff[u]
		if p.directed {
			d += p.inOff[u+1] - p.inOff[u]
		}
		return d
	}
	ordered := make([]bool, n)
	seen := make([]bool, n)
	used := make([]int32, n) // ordered neighbours
	mt.order = make([]int32, 0, n)
	level := make([]int32, 0, n)
	nextLevel := make([]int32, 0, n)
	// Candidate roots by (rarity, -degree); rarities are those at the
	// start (networkx updates them as nodes get ordered; the difference
	// only affects which node starts a component).
	roots := make([]int32, n)
	for i := range roots {
		roots[i] = int32(i)
	}
	slices.SortStableFunc(roots, func(a, b int32) int {
		if ra, rb := rarity[mt.colP[a]], rarity[mt.colP[b]]; ra != rb {
			return int(ra - rb)
		}
		return int(deg(b) - deg(a))
	})
	nextRoot := 0
	for len(mt.order) < n {
		for ordered[roots[nextRoot]] {
			nextRoot++
		}
		root := roots[nextRoot]
		level = append(level[:0], root)
		seen[root] = true
		for len(level) > 0 {
			// BFS: the next level, from the current one in BFS order.
			nextLevel = nextLevel[:0]
			for _, u := range level {
				for _, w := range p.und[p.undOff[u]:p.undOff[u+1]] {
					if !seen[w] {
						seen[w] = true
						nextLevel = append(nextLevel, w)
					}
				}
			}
			// Order the current level greedily; very large levels are
			// sorted once instead, to stay O(n log n).
			if len(level) > maxGreedyLevel {
				slices.SortStableFunc(level, func(a, b int32) int {
					switch {
					case used[a] != used[b]:
						return int(used[b] - used[a])
					case deg(a) != deg(b):
						return int(deg(b) - deg(a))
					}
					return int(rarity[mt.colP[a]] - rarity[mt.colP[b]])
				})
				for _, u := range level {
					mt.order = append(mt.order, u)
					ordered[u] = true
					rarity[mt.colP[u]]--
					for _, w := range p.und[p.undOff[u]:p.undOff[u+1]] {
						used[w]++
					}
				}
				level, nextLevel = nextLevel, level
				continue
			}
			for rest := level; len(rest) > 0; {
				best := 0
				for i := 1; i < len(rest); i++ {
					a, b := rest[i], rest[best]
					switch {
					case used[a] != used[b]:
						if used[a] > used[b] {
							best = i
						}
					case deg(a) != deg(b):
						if deg(a) > deg(b) {
							best = i
						}
					case rarity[mt.colP[a]] < rarity[mt.colP[b]]:
						best = i
					}
				}
				u := rest[best]
				rest[best] = rest[len(rest)-1]
				rest = rest[:len(rest)-1]
				mt.order = append(mt.order, u)
				ordered[u] = true
				rarity[mt.colP[u]]--
				for _, w := range p.und[p.undOff[u]:p.undOff[u+1]] {
					used[w]++
				}
			}
			level, nextLevel = nextLevel, level
		}
	}
}

// search runs the backtracking over mt.order without recursion.
func (mt *matcher) search(ctx context.Context) (bool, error) {
	n := mt.n
	cands := make([][]int32, n)
	pos := make([]int, n)
	states := 0
	depth := 0
	cands[0] = mt.candidates(mt.order[0], cands[0][:0])
	for {
		if pos[depth] < len(cands[depth]) {
			v := cands[depth][pos[depth]]
			pos[depth]++
			states++
			if states%ctxEvery == 0 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			u := mt.order[depth]
			if !mt.feasible(u, v) {
				continue
			}
			mt.assign(u, v)
			depth++
			if depth == n {
				return true, nil
			}
			cands[depth] = mt.candidates(mt.order[depth], cands[depth][:0])
			pos[depth] = 0
			continue
		}
		if depth == 0 {
			return false, nil
		}
		depth--
		mt.unassign(mt.order[depth])
	}
}

// candidates appends to buf the unmatched nodes of q that may be matched
// to u: neighbours of the image of a matched neighbour of u if u has one,
// otherwise all unmatched nodes of u's colour.
func (mt *matcher) candidates(u int32, buf []int32) []int32 {
	p, q := mt.p, mt.q
	c := mt.colP[u]
	anchor := int32(-1)
	for _, w := range p.und[p.undOff[u]:p.undOff[u+1]] {
		if mt.coreP[w] >= 0 {
			anchor = mt.coreP[w]
			break
		}
	}
	if anchor >= 0 {
		for _, x := range q.und[q.undOff[anchor]:q.undOff[anchor+1]] {
			if mt.coreQ[x] < 0 && mt.colQ[x] == c {
				buf = append(buf, x)
			}
		}
		return buf
	}
	free := mt.byCol[mt.byColOff[c] : mt.byColOff[c]+mt.free[c]]
	if p.undOff[u] == p.undOff[u+1] {
		// An isolated node: unmatched isolated nodes of q with the same
		// label are interchangeable, so one candidate suffices. (Colours
		// include labels, so the first free node normally matches.)
		for _, x := range free {
			if p.label == nil || p.label[u] == q.label[x] {
				return append(buf, x)
			}
		}
		return buf
	}
	return append(buf, free...)
}

// feasible reports whether u -> v extends the current partial mapping
// consistently (matched neighbourhoods agree, with labels) and passes the
// look-ahead test on colour counts of unmatched neighbours in and outside
// the frontier.
func (mt *matcher) feasible(u, v int32) bool {
	p, q := mt.p, mt.q
	if p.label != nil && p.label[u] != q.label[v] {
		return false
	}
	if !mt.consistent(p.outOff, p.out, p.outLab, q.outOff, q.out, q.outLab, u, v) {
		return false
	}
	if p.directed && !mt.consistent(p.inOff, p.in, p.inLab, q.inOff, q.in, q.inLab, u, v) {
		return false
	}
	if !mt.lookahead(p.out[p.outOff[u]:p.outOff[u+1]], q.out[q.outOff[v]:q.outOff[v+1]]) {
		return false
	}
	if p.directed && !mt.lookahead(p.in[p.inOff[u]:p.inOff[u+1]], q.in[q.inOff[v]:q.inOff[v+1]]) {
		return false
	}
	return true
}

// consistent checks one direction of adjacency: every matched neighbour x
// of v in q is the image of a neighbour of u in p (with an equal edge
// label), and u and v have the same number of matched neighbours.
func (mt *matcher) consistent(pOff, pAdj []int32, pLab []int, qOff, qAdj []int32, qLab []int, u, v int32) bool {
	cu := 0
	pn := pAdj[pOff[u]:pOff[u+1]]
	for _, w := range pn {
		if mt.coreP[w] >= 0 {
			cu++
		}
	}
	cv := 0
	for k := qOff[v]; k < qOff[v+1]; k++ {
		w := mt.coreQ[qAdj[k]]
		if w < 0 {
			continue
		}
		cv++
		i, ok := slices.BinarySearch(pn, w)
		if !ok {
			return false
		}
		if pLab != nil && pLab[pOff[u]+int32(i)] != qLab[k] {
			return false
		}
	}
	return cu == cv
}

// lookahead compares, colour by colour, how many unmatched neighbours u
// and v have inside the frontier (adjacent to a matched node) and outside.
func (mt *matcher) lookahead(pn, qn []int32) bool {
	ok := true
	for _, w := range pn {
		if mt.coreP[w] >= 0 {
			continue
		}
		if mt.termP[w] > 0 {
			mt.cntT[mt.colP[w]]++
		} else {
			mt.cntR[mt.colP[w]]++
		}
	}
	for _, x := range qn {
		if mt.coreQ[x] >= 0 {
			continue
		}
		if mt.termQ[x] > 0 {
			mt.cntT[mt.colQ[x]]--
		} else {
			mt.cntR[mt.colQ[x]]--
		}
	}
	for _, w := range pn {
		c := mt.colP[w]
		if mt.cntT[c] != 0 || mt.cntR[c] != 0 {
			ok = false
		}
		mt.cntT[c], mt.cntR[c] = 0, 0
	}
	for _, x := range qn {
		c := mt.colQ[x]
		if mt.cntT[c] != 0 || mt.cntR[c] != 0 {
			ok = false
		}
		mt.cntT[c], mt.cntR[c] = 0, 0
	}
	return ok
}

func (mt *matcher) assign(u, v int32) {
	p, q := mt.p, mt.q
	mt.coreP[u], mt.coreQ[v] = v, u
	// Move v behind the unmatched part of its colour class.
	c := mt.colQ[v]
	last := mt.byColOff[c] + mt.free[c] - 1
	i, x := mt.posQ[v], mt.byCol[last]
	mt.byCol[i], mt.byCol[last] = x, v
	mt.posQ[x], mt.posQ[v] = i, last
	mt.free[c]--
	for _, w := range p.und[p.undOff[u]:p.undOff[u+1]] {
		mt.termP[w]++
	}
	for _, x := range q.und[q.undOff[v]:q.undOff[v+1]] {
		mt.termQ[x]++
	}
}

func (mt *matcher) unassign(u int32) {
	p, q := mt.p, mt.q
	v := mt.coreP[u]
	mt.coreP[u], mt.coreQ[v] = -1, -1
	mt.free[mt.colQ[v]]++ // v sits just behind the unmatched part
	for _, w := range p.und[p.undOff[u]:p.undOff[u+1]] {
		mt.termP[w]--
	}
	for _, x := range q.und[q.undOff[v]:q.undOff[v+1]] {
		mt.termQ[x]--
	}
}
