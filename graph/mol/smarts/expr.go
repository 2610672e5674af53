package smarts

import (
	"strings"

	"lgflow/graph/mol"
)

type exprOp uint8

const (
	aPrim exprOp = iota
	aNot
	aAnd
	aOr
)

type atomPrim uint8

const (
	primAny atomPrim = iota
	primTrue
	primAromatic
	primAliphatic
	primAtomicNum
	primAliphaticElem
	primAromaticElem
	primIsotope
	primHCount
	primImplicitH
	primDegree
	primTotalDegree
	primValence
	primRingCount
	primInRing
	primRingSize
	primRingBonds
	primCharge
	primRecursive
)

// atomExpr is a node of an atom query: a primitive or a logic operator.
type atomExpr struct {
	op   exprOp
	prim atomPrim
	val  int
	kids []*atomExpr
	sub  *Pattern // recursive SMARTS
}

// onlyHydrogen reports whether the expression can match hydrogen atoms
// only ([#1], [H], [2H]).
func (e *atomExpr) onlyHydrogen() bool {
	switch e.op {
	case aPrim:
		return (e.prim == primAtomicNum || e.prim == primAliphaticElem) && e.val == 1
	case aAnd:
		for _, k := range e.kids {
			if k.onlyHydrogen() {
				return true
			}
		}
	case aOr:
		for _, k := range e.kids {
			if !k.onlyHydrogen() {
				return false
			}
		}
		return len(e.kids) > 0
	}
	return false
}

type bondPrim uint8

const (
	bondDefault bondPrim = iota // single or aromatic
	bondSingle
	bondDouble
	bondTriple
	bondAromatic
	bondAny
	bondRing
	bondQuadruple
)

type bondExpr struct {
	op   exprOp
	prim bondPrim
	kids []*bondExpr
}

// bondExpr parses a bond expression at ps.pos (operators ! & , ;).
func (ps *parser) bondExpr() (*bondExpr, error) {
	return ps.bondLow()
}

func (ps *parser) bondLow() (*bondExpr, error) {
	e, err := ps.bondOr()
	if err != nil {
		return nil, err
	}
	for ps.pos < len(ps.src) && ps.src[ps.pos] == ';' {
		ps.pos++
		r, err := ps.bondOr()
		if err != nil {
			return nil, err
		}
		e = &bondExpr{op: aAnd, kids: []*bondExpr{e, r}}
	}
	return e, nil
}

func (ps *parser) bondOr() (*bondExpr, error) {
	e, err := ps.bondAnd()
	if err != nil {
		return nil, err
	}
	for ps.pos < len(ps.src) && ps.src[ps.pos] == ',' {
		ps.pos++
		r, err := ps.bondAnd()
		if err != nil {
			return nil, err
		}
		e = &bondExpr{op: aOr, kids: []*bondExpr{e, r}}
	}
	return e, nil
}

func (ps *parser) bondAnd() (*bondExpr, error) {
	e, err := ps.bondUnary()
	if err != nil {
		return nil, err
	}
	for ps.pos < len(ps.src) {
		c := ps.src[ps.pos]
		if c == '&' {
			ps.pos++
		} else if !(c == '!' || c == '-' || c == '=' || c == '#' || c == ':' || c == '~' || c == '@' || c == '/' || c == '\\') {
			break
		}
		r, err := ps.bondUnary()
		if err != nil {
			return nil, err
		}
		e = &bondExpr{op: aAnd, kids: []*bondExpr{e, r}}
	}
	return e, nil
}

func (ps *parser) bondUnary() (*bondExpr, error) {
	if ps.pos >= len(ps.src) {
		return nil, ps.errf(ps.pos, "bond expression ends early")
	}
	c := ps.src[ps.pos]
	ps.pos++
	var p bondPrim
	switch c {
	case '!':
		k, err := ps.bondUnary()
		if err != nil {
			return nil, err
		}
		return &bondExpr{op: aNot, kids: []*bondExpr{k}}, nil
	case '-', '/', '\\':
		p = bondSingle
	case '=':
		p = bondDouble
	case '#':
		p = bondTriple
	case '$':
		p = bondQuadruple
	case ':':
		p = bondAromatic
	case '~':
		p = bondAny
	case '@':
		p = bondRing
	default:
		return nil, ps.errf(ps.pos-1, "bad bond symbol %q", c)
	}
	return &bondExpr{op: aPrim, prim: p}, nil
}

// bracket parses the inside of [...] (ps.src is the bracket body).
func (ps *parser) bracket() (*atomExpr, error) {
	s := ps.src
	// [H], [2H], [H+], [H-], [H:1] are hydrogen atoms
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i < len(s) && s[i] == 'H' {
		rest := s[i+1:]
		if rest == "" || rest[0] == '+' || rest[0] == '-' || rest[0] == ':' {
			e := &atomExpr{op: aPrim, prim: primAtomicNum, val: 1}
			if i > 0 {
				iso := ps.number(0)
				if ps.numErr != nil {
					return nil, ps.numErr
				}
				e = &atomExpr{op: aAnd, kids: []*atomExpr{e, {op: aPrim, prim: primIsotope, val: iso}}}
			}
			ps.pos = i + 1
			for ps.pos < len(s) {
				k, err := ps.atomUnary()
				if err != nil {
					return nil, err
				}
				e = &atomExpr{op: aAnd, kids: []*atomExpr{e, k}}
			}
			return e, nil
		}
	}
	e, err := ps.atomLow()
	if err != nil {
		return nil, err
	}
	if ps.pos != len(s) {
		return nil, ps.errf(ps.pos, "unexpected %q", s[ps.pos])
	}
	return e, nil
}

func (ps *parser) atomLow() (*atomExpr, error) {
	e, err := ps.atomOr()
	if err != nil {
		return nil, err
	}
	for ps.pos < len(ps.src) && ps.src[ps.pos] == ';' {
		ps.pos++
		r, err := ps.atomOr()
		if err != nil {
			return nil, err
		}
		e = &atomExpr{op: aAnd, kids: []*atomExpr{e, r}}
	}
	return e, nil
}

func (ps *parser) atomOr() (*atomExpr, error) {
	e, err := ps.atomAnd()
	if err != nil {
		return nil, err
	}
	for ps.pos < len(ps.src) && ps.src[ps.pos] == ',' {
		ps.pos++
		r, err := ps.atomAnd()
		if err != nil {
			return nil, err
		}
		e = &atomExpr{op: aOr, kids: []*atomExpr{e, r}}
	}
	return e, nil
}

func (ps *parser) atomAnd() (*atomExpr, error) {
	e, err := ps.atomUnary()
	if err != nil {
		return nil, err
	}
	for ps.pos < len(ps.src) {
		c := ps.src[ps.pos]
		if c == ';' || c == ',' {
			break
		}
		if c == '&' {
			ps.pos++
		}
		r, err := ps.atomUnary()
		if err != nil {
			return nil, err
		}
		e = &atomExpr{op: aAnd, kids: []*atomExpr{e, r}}
	}
	return e, nil
}

// maxNumber bounds the numbers of atom primitives (isotopes, counts,
// atom maps): larger ones are syntax errors rather than silently
// overflowing.
const maxNumber = 9999

// number reads the decimal number at ps.pos, or returns def if there is
// none. A number above maxNumber records an error in ps.numErr, which the
// caller reports.
func (ps *parser) number(def int) int {
	s := ps.src
	if ps.pos >= len(s) || !isDigit(s[ps.pos]) {
		return def
	}
	start, n := ps.pos, 0
	for ps.pos < len(s) && isDigit(s[ps.pos]) {
		if n <= maxNumber {
			n = n*10 + int(s[ps.pos]-'0')
		}
		ps.pos++
	}
	if n > maxNumber && ps.numErr == nil {
		ps.numErr = ps.errf(start, "number %s is larger than %d", s[start:ps.pos], maxNumber)
	}
	return n
}

// isElement reports whether s is a two-letter element symbol.
func isElement(s string) bool {
	if len(s) != 2 || s[1] < 'a' || s[1] > 'z' {
		return false
	}
	_, ok := mol.AtomicNumber(s)
	return ok
}

var aromaticSymbols = map[string]int{"c": 6, "n": 7, "o": 8, "s": 16, "p": 15, "b": 5, "se": 34, "as": 33, "te": 52, "si": 14}

func (ps *parser) atomUnary() (*atomExpr, error) {
	s := ps.src
	if ps.pos >= len(s) {
		return nil, ps.errf(ps.pos, "atom expression ends early")
	}
	start := ps.pos
	c := s[ps.pos]
	prim := func(p atomPrim, v int) (*atomExpr, error) {
		if err := ps.numErr; err != nil {
			ps.numErr = nil
			return nil, err
		}
		if p == primAtomicNum && v > mol.MaxAtomicNumber {
			return nil, ps.errf(start, "atomic number %d is larger than %d", v, mol.MaxAtomicNumber)
		}
		return &atomExpr{op: aPrim, prim: p, val: v}, nil
	}
	switch {
	case c == '!':
		ps.pos++
		k, err := ps.atomUnary()
		if err != nil {
			return nil, err
		}
		return &atomExpr{op: aNot, kids: []*atomExpr{k}}, nil
	case c == '$':
		if ps.pos+1 >= len(s) || s[ps.pos+1] != '(' {
			return nil, ps.errf(start, "'$' must be followed by '('")
		}
		depth := 0
		end := -1
		for i := ps.pos + 1; i < len(s); i++ {
			if s[i] == '(' {
				depth++
			} else if s[i] == ')' {
				depth--
				if depth == 0 {
					end = i
					break
				}
			}
		}
		if end < 0 {
			return nil, ps.errf(start, "unclosed recursive SMARTS")
		}
		sub, err := parseRecursive(s[ps.pos+2 : end])
		if err != nil {
			if se, ok := err.(*SyntaxError); ok {
				return nil, ps.errf(start+2+se.Pos, "%s", se.Msg)
			}
			return nil, err
		}
		ps.pos = end + 1
		return &atomExpr{op: aPrim, prim: primRecursive, sub: sub}, nil
	case c == '*':
		ps.pos++
		return prim(primAny, 0)
	case c == 'a' && !(ps.pos+1 < len(s) && aromaticSymbols[s[ps.pos:ps.pos+2]] > 0):
		ps.pos++
		return prim(primAromatic, 0)
	case c == 'A' && !(ps.pos+1 < len(s) && isElement(s[ps.pos:ps.pos+2])):
		// "A" is any aliphatic atom, but two-letter symbols win:
		// [Ac], [Al], [Ar] ... are elements, as in RDKit
		ps.pos++
		return prim(primAliphatic, 0)
	case c == '#':
		ps.pos++
		if ps.pos >= len(s) || !isDigit(s[ps.pos]) {
			return nil, ps.errf(start, "'#' needs an atomic number")
		}
		return prim(primAtomicNum, ps.number(0))
	case isDigit(c):
		return prim(primIsotope, ps.number(0))
	case c == '+' || c == '-':
		ps.pos++
		sign := 1
		if c == '-' {
			sign = -1
		}
		if ps.pos < len(s) && isDigit(s[ps.pos]) {
			return prim(primCharge, sign*ps.number(1))
		}
		n := 1
		for ps.pos < len(s) && s[ps.pos] == c {
			n++
			ps.pos++
		}
		return prim(primCharge, sign*n)
	case c == '@':
		ps.pos++
		if ps.pos < len(s) && s[ps.pos] == '@' {
			ps.pos++
		}
		for _, cls := range []string{"TH", "AL", "SP", "TB", "OH"} {
			if strings.HasPrefix(s[ps.pos:], cls) {
				ps.pos += 2
				ps.number(0)
				break
			}
		}
		if ps.pos < len(s) && s[ps.pos] == '?' {
			ps.pos++
		}
		return prim(primTrue, 0)
	case c == ':':
		ps.pos++
		if ps.pos >= len(s) || !isDigit(s[ps.pos]) {
			return nil, ps.errf(start, "atom map ':' needs a number")
		}
		ps.number(0)
		return prim(primTrue, 0)
	case c >= 'A' && c <= 'Z':
		// two-letter element symbols win (Daylight rule)
		if ps.pos+1 < len(s) && s[ps.pos+1] >= 'a' && s[ps.pos+1] <= 'z' {
			if z, ok := mol.AtomicNumber(s[ps.pos : ps.pos+2]); ok {
				ps.pos += 2
				return prim(primAliphaticElem, z)
			}
		}
		ps.pos++
		switch c {
		case 'H':
			return prim(primHCount, ps.number(1))
		case 'D':
			return prim(primDegree, ps.number(1))
		case 'X':
			return prim(primTotalDegree, ps.number(1))
		case 'R':
			if ps.pos < len(s) && isDigit(s[ps.pos]) {
				return prim(primRingCount, ps.number(0))
			}
			return prim(primInRing, 0)
		}
		if z, ok := mol.AtomicNumber(string(c)); ok {
			return prim(primAliphaticElem, z)
		}
		return nil, ps.errf(start, "unknown element %q", c)
	case c >= 'a' && c <= 'z':
		if ps.pos+1 < len(s) {
			if z, ok := aromaticSymbols[s[ps.pos:ps.pos+2]]; ok {
				ps.pos += 2
				return prim(primAromaticElem, z)
			}
		}
		ps.pos++
		switch c {
		case 'h':
			if ps.pos < len(s) && isDigit(s[ps.pos]) {
				return prim(primImplicitH, ps.number(0))
			}
			return prim(primImplicitH, -1)
		case 'r':
			if ps.pos < len(s) && isDigit(s[ps.pos]) {
				return prim(primRingSize, ps.number(0))
			}
			return prim(primInRing, 0)
		case 'x':
			if ps.pos < len(s) && isDigit(s[ps.pos]) {
				return prim(primRingBonds, ps.number(0))
			}
			return prim(primRingBonds, -1)
		case 'v':
			return prim(primValence, ps.number(1))
		}
		if z, ok := aromaticSymbols[string(c)]; ok {
			return prim(primAromaticElem, z)
		}
		return nil, ps.errf(start, "unknown aromatic element %q", c)
	}
	return nil, ps.errf(start, "unexpected %q", c)
}

// parseRecursive parses the body of a recursive SMARTS, whose first atom
// is the one the enclosing primitive is evaluated on.
func parseRecursive(s string) (*Pattern, error) {
	ps := &parser{src: s}
	ps.recursive = true
	p, err := ps.pattern()
	if err != nil {
		return nil, err
	}
	p.src = s
	return p, nil
}

// elementFrequency is a rough share of heavy atoms of drug-like molecules
// (with explicit hydrogens) that have each element.
func elementFrequency(z int) float64 {
	switch z {
	case 1:
		return 0.45
	case 6:
		return 0.4
	case 7:
		return 0.06
	case 8:
		return 0.06
	case 9, 16, 17:
		return 0.01
	case 35:
		return 0.003
	}
	return 0.001
}

// selectivity estimates the fraction of atoms the expression matches.
func (e *atomExpr) selectivity() float64 {
	switch e.op {
	case aNot:
		return 1 - 0.5*(1-e.kids[0].selectivity())
	case aAnd:
		s := 1.0
		for _, k := range e.kids {
			s = min(s, k.selectivity())
		}
		return s * 0.9
	case aOr:
		s := 0.0
		for _, k := range e.kids {
			s += k.selectivity()
		}
		return min(s, 1)
	}
	switch e.prim {
	case primAtomicNum, primAliphaticElem:
		return elementFrequency(e.val)
	case primAromaticElem:
		return 0.6 * elementFrequency(e.val)
	case primAromatic:
		return 0.3
	case primAliphatic:
		return 0.7
	case primCharge:
		if e.val != 0 {
			return 0.01
		}
		return 0.95
	case primIsotope:
		return 0.001
	case primRecursive:
		return 0.5 * e.sub.atoms[0].selectivity()
	case primAny, primTrue:
		return 1
	}
	return 0.5
}

// requiredElement returns the element every atom matching e must have,
// or 0 when there is none.
func (e *atomExpr) requiredElement() int {
	switch e.op {
	case aPrim:
		switch e.prim {
		case primAtomicNum, primAliphaticElem, primAromaticElem:
			return e.val
		}
	case aAnd:
		for _, k := range e.kids {
			if z := k.requiredElement(); z > 0 {
				return z
			}
		}
	case aOr:
		z := -1
		for _, k := range e.kids {
			kz := k.requiredElement()
			if kz <= 0 || (z >= 0 && kz != z) {
				return 0
			}
			z = kz
		}
		if z > 0 {
			return z
		}
	}
	return 0
}
