// Package smarts parses SMARTS patterns and finds them in molecules of
// package mol, with RDKit's semantics for the primitives (the MOSES
// structural-alert filters, MCF and PAINS, are written in it).
//
// Supported: atoms in and out of brackets (organic subset, aromatic
// symbols, '*', 'a', 'A'), bracket primitives #n, element symbols,
// isotopes, H<n> (total hydrogens, hydrogen atoms included), h<n>
// (implicit hydrogens), D<n> (explicit degree), X<n> (total degree),
// v<n> (total valence), R<n> (number of rings), r<n> (smallest ring size),
// x<n> (ring bonds), charges, chirality (ignored), atom maps, recursive
// $(...), the logic operators ! & , ; and implicit and; bonds - = # : ~ @
// / \ and RDKit's $ (quadruple, outside brackets) with the same operators; branches, ring closures (including %nn) and
// '.'-separated components. Unspecified bonds match single or aromatic
// bonds. [H] and [2H] mean a hydrogen atom.
package smarts

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"lgflow/graph/mol"
)

// SyntaxError reports a malformed SMARTS pattern.
type SyntaxError struct {
	Pattern string
	Pos     int
	Msg     string
}

// Error returns the message with the position.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("SMARTS parse error at position %d: %s", e.Pos, e.Msg)
}

// Pattern is a parsed SMARTS query.
type Pattern struct {
	src   string
	atoms []*atomExpr
	bonds []qbond
	adj   [][]int // per query atom: indices into bonds
	order []int   // matching order: each atom after a bonded earlier one where possible
	// needsHs reports whether the pattern mentions hydrogen atoms.
	needsHs bool
	// minCount lists (element, count) pairs: a match needs at least count
	// atoms of the element.
	minCount [][2]int
	// isRecursive marks the body of a $(...): matching starts at atom 0.
	isRecursive bool
}

type qbond struct {
	a, b int
	expr *bondExpr
}

// String returns the pattern text.
func (p *Pattern) String() string { return p.src }

// NumAtoms returns the number of query atoms.
func (p *Pattern) NumAtoms() int { return len(p.atoms) }

// MentionsHydrogen reports whether the pattern has query atoms that can
// only match hydrogen atoms ([#1], [H]); such patterns are meant for
// molecules with explicit hydrogens (mol.AddHs).
func (p *Pattern) MentionsHydrogen() bool { return p.needsHs }

// MustParse is Parse for patterns known to be valid; it panics on error.
func MustParse(s string) *Pattern {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Parse parses a SMARTS pattern.
func Parse(s string) (*Pattern, error) {
	ps := &parser{src: s}
	p, err := ps.pattern()
	if err != nil {
		return nil, err
	}
	p.src = s
	return p, nil
}

type parser struct {
	src       string
	pos       int
	recursive bool
	numErr    error // a number too large, reported by atomUnary
}

func (ps *parser) errf(pos int, format string, args ...any) error {
	return &SyntaxError{Pattern: ps.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

type ringOpen struct {
	atom int
	bond *bondExpr
	pos  int
}

func (ps *parser) pattern() (*Pattern, error) {
	s := ps.src
	if strings.TrimSpace(s) == "" {
		return nil, ps.errf(0, "empty pattern")
	}
	p := &Pattern{}
	prev := -1
	var stack []int
	var pend *bondExpr
	pendPos := 0
	rings := map[int]ringOpen{}
	for ps.pos < len(s) {
		c := s[ps.pos]
		start := ps.pos
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			ps.pos = len(s) // SMARTS ends at whitespace
		case c == '(':
			if prev < 0 {
				return nil, ps.errf(start, "branch before any atom")
			}
			stack = append(stack, prev)
			ps.pos++
		case c == ')':
			if len(stack) == 0 {
				return nil, ps.errf(start, "unmatched ')'")
			}
			if pend != nil {
				return nil, ps.errf(pendPos, "bond not followed by an atom")
			}
			prev = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			ps.pos++
		case c == '.':
			if pend != nil {
				return nil, ps.errf(pendPos, "bond not followed by an atom")
			}
			prev = -1
			ps.pos++
		case c >= '0' && c <= '9' || c == '%':
			if prev < 0 {
				return nil, ps.errf(start, "ring closure before any atom")
			}
			num := 0
			if c == '%' {
				if ps.pos+2 >= len(s) || !isDigit(s[ps.pos+1]) || !isDigit(s[ps.pos+2]) {
					return nil, ps.errf(start, "'%%' needs two digits")
				}
				num = int(s[ps.pos+1]-'0')*10 + int(s[ps.pos+2]-'0')
				ps.pos += 3
			} else {
				num = int(c - '0')
				ps.pos++
			}
			if r, ok := rings[num]; ok {
				delete(rings, num)
				if r.atom == prev {
					return nil, ps.errf(start, "ring bond %d closes on the atom that opened it", num)
				}
				for _, b := range p.bonds {
					if (b.a == r.atom && b.b == prev) || (b.a == prev && b.b == r.atom) {
						return nil, ps.errf(start, "ring bond %d duplicates a bond between atoms %d and %d", num, r.atom, prev)
					}
				}
				be := pend
				if be == nil {
					be = r.bond
				}
				p.addBond(r.atom, prev, be)
			} else {
				rings[num] = ringOpen{atom: prev, bond: pend, pos: start}
			}
			pend = nil
		case isBondChar(c):
			if prev < 0 {
				return nil, ps.errf(start, "bond before any atom")
			}
			be, err := ps.bondExpr()
			if err != nil {
				return nil, err
			}
			pend, pendPos = be, start
		default:
			ae, err := ps.atom()
			if err != nil {
				return nil, err
			}
			idx := len(p.atoms)
			p.atoms = append(p.atoms, ae)
			if prev >= 0 {
				p.addBond(prev, idx, pend)
			}
			pend = nil
			prev = idx
		}
	}
	if pend != nil {
		return nil, ps.errf(pendPos, "bond at end of pattern")
	}
	if len(stack) > 0 {
		return nil, ps.errf(len(s), "unclosed branch")
	}
	if len(rings) > 0 {
		first := -1
		for num, r := range rings { // report the leftmost, whatever the map order
			if first < 0 || r.pos < rings[first].pos {
				first = num
			}
		}
		return nil, ps.errf(rings[first].pos, "unclosed ring %d", first)
	}
	if len(p.atoms) == 0 {
		return nil, ps.errf(0, "pattern has no atoms")
	}
	p.isRecursive = ps.recursive
	p.finish()
	return p, nil
}

func (p *Pattern) addBond(a, b int, e *bondExpr) {
	if e == nil {
		e = &bondExpr{op: aPrim, prim: bondDefault}
	}
	p.bonds = append(p.bonds, qbond{a: a, b: b, expr: e})
}

// finish builds adjacency, the matching order and the element prescreen.
// Each component starts at its most selective atom (by a rough estimate of
// how many atoms of a drug-like molecule it matches) and grows breadth
// first, more selective neighbours first.
func (p *Pattern) finish() {
	n := len(p.atoms)
	p.adj = make([][]int, n)
	for k, b := range p.bonds {
		p.adj[b.a] = append(p.adj[b.a], k)
		p.adj[b.b] = append(p.adj[b.b], k)
	}
	score := make([]float64, n)
	for i, a := range p.atoms {
		score[i] = a.selectivity()
	}
	// components in order of their first atom
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	var comps [][]int
	for s := 0; s < n; s++ {
		if comp[s] >= 0 {
			continue
		}
		id := len(comps)
		comp[s] = id
		c := []int{s}
		for k := 0; k < len(c); k++ {
			for _, bi := range p.adj[c[k]] {
				w := p.other(bi, c[k])
				if comp[w] < 0 {
					comp[w] = id
					c = append(c, w)
				}
			}
		}
		comps = append(comps, c)
	}
	// Larger components first, and among equal sizes the more selective:
	// components are matched one after the other, and one placed early can
	// take the atoms a later one needs, which the search then finds out
	// only after trying every placement of everything in between
	// (BBB.B.B.B.B.B.B.B.B.BB, or *.B.B...B with the * on a B, took minutes
	// against their own molecules). Patterns of many components can still
	// be exponential to match, as in any backtracking matcher. The body of
	// a recursive SMARTS keeps its first component first.
	first := 0
	if p.isRecursive {
		first = 1
	}
	if len(comps) > first {
		best := func(c []int) float64 {
			s := 1.0
			for _, v := range c {
				s = min(s, score[v])
			}
			return s
		}
		slices.SortStableFunc(comps[first:], func(a, b []int) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return cmp.Compare(best(a), best(b))
		})
	}
	seen := make([]bool, n)
	for ci, c := range comps {
		root := c[0]
		if !(ci == 0 && p.isRecursive) { // recursive patterns must start at atom 0
			for _, v := range c {
				if score[v] < score[root] {
					root = v
				}
			}
		}
		seen[root] = true
		q := []int{root}
		for len(q) > 0 {
			v := q[0]
			q = q[1:]
			p.order = append(p.order, v)
			var next []int
			for _, bi := range p.adj[v] {
				w := p.other(bi, v)
				if !seen[w] {
					seen[w] = true
					next = append(next, w)
				}
			}
			for i := 1; i < len(next); i++ {
				for j := i; j > 0 && score[next[j]] < score[next[j-1]]; j-- {
					next[j], next[j-1] = next[j-1], next[j]
				}
			}
			q = append(q, next...)
		}
	}
	for _, a := range p.atoms {
		if a.onlyHydrogen() {
			p.needsHs = true
		}
		if z := a.requiredElement(); z > 0 {
			found := false
			for k := range p.minCount {
				if p.minCount[k][0] == z {
					p.minCount[k][1]++
					found = true
				}
			}
			if !found {
				p.minCount = append(p.minCount, [2]int{z, 1})
			}
		}
	}
}

func (p *Pattern) other(bi, v int) int {
	b := &p.bonds[bi]
	if b.a == v {
		return b.b
	}
	return b.a
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isBondChar(c byte) bool {
	switch c {
	case '-', '=', '#', '$', ':', '~', '@', '/', '\\', '!', '&', ';', ',':
		return true
	}
	return false
}

// organic subset outside brackets
func (ps *parser) atom() (*atomExpr, error) {
	s := ps.src
	start := ps.pos
	c := s[ps.pos]
	if c == '[' {
		depth := 0
		end := -1
		for i := ps.pos; i < len(s); i++ {
			switch s[i] {
			case '[':
				depth++
			case ']':
				depth--
			}
			if depth == 0 {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, ps.errf(start, "unclosed '['")
		}
		body := s[ps.pos+1 : end]
		ps.pos = end + 1
		bp := &parser{src: body}
		e, err := bp.bracket()
		if err != nil {
			if se, ok := err.(*SyntaxError); ok {
				return nil, ps.errf(start+1+se.Pos, "%s", se.Msg)
			}
			return nil, err
		}
		return e, nil
	}
	two := ""
	if ps.pos+1 < len(s) {
		two = s[ps.pos : ps.pos+2]
	}
	switch two {
	case "Cl", "Br":
		z, _ := mol.AtomicNumber(two)
		ps.pos += 2
		return &atomExpr{op: aPrim, prim: primAliphaticElem, val: z}, nil
	}
	ps.pos++
	switch c {
	case '*':
		return &atomExpr{op: aPrim, prim: primAny}, nil
	case 'a':
		return &atomExpr{op: aPrim, prim: primAromatic}, nil
	case 'A':
		return &atomExpr{op: aPrim, prim: primAliphatic}, nil
	case 'B', 'C', 'N', 'O', 'P', 'S', 'F', 'I':
		z, _ := mol.AtomicNumber(string(c))
		return &atomExpr{op: aPrim, prim: primAliphaticElem, val: z}, nil
	case 'b', 'c', 'n', 'o', 'p', 's':
		z, _ := mol.AtomicNumber(strings.ToUpper(string(c)))
		return &atomExpr{op: aPrim, prim: primAromaticElem, val: z}, nil
	}
	return nil, ps.errf(start, "unexpected character %q", c)
}
