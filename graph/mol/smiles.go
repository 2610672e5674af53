package mol

import (
	"fmt"
	"strings"
)

// SyntaxError reports a malformed SMILES string: the byte offset (0-based)
// where the problem was found and what is wrong.
type SyntaxError struct {
	SMILES string
	Pos    int
	Msg    string
}

// Error returns the message with the position.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("SMILES parse error at position %d: %s", e.Pos, e.Msg)
}

// ParseOptions controls ParseSMILESWith.
type ParseOptions struct {
	// Sanitize runs Sanitize after parsing (RDKit's default).
	Sanitize bool
	// KeepHs keeps hydrogen atoms written as [H] in the graph instead of
	// folding them into their neighbour's hydrogen count (RDKit's
	// removeHs=True is the default, i.e. KeepHs false).
	KeepHs bool
}

// ParseSMILES parses a SMILES string and sanitises the molecule exactly as
// RDKit's MolFromSmiles does by default: [H] atoms are folded into their
// neighbours, valences are checked, aromatic systems are kekulised and
// aromaticity is perceived again (RDKit model). Malformed strings return a
// *SyntaxError, chemically impossible ones a *SanitizeError. The empty
// string is an error (MOSES counts it as invalid).
func ParseSMILES(s string) (*Mol, error) {
	return ParseSMILESWith(s, ParseOptions{Sanitize: true})
}

// ParseSMILESWith parses a SMILES string with the given options. Without
// Sanitize the molecule is exactly what the string says: hydrogen counts
// and valences are not computed (call UpdateValences or Sanitize).
func ParseSMILESWith(s string, opt ParseOptions) (*Mol, error) {
	p := parser{src: s}
	m, err := p.parse()
	if err != nil {
		return nil, err
	}
	if !opt.KeepHs {
		m.removeHydrogens()
	}
	m.buildAdj()
	if opt.Sanitize {
		if err := m.Sanitize(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

type ringOpen struct {
	atom  int
	order BondOrder // 0 if no bond symbol was written
	dir   BondStereo
	pos   int
	used  bool
}

type parser struct {
	src   string
	pos   int
	m     *Mol
	rings [10]ringOpen // ring numbers 0-9
	nOpen int
	big   map[int]*ringOpen // ring numbers >= 10
}

func (p *parser) errf(pos int, format string, args ...any) error {
	return &SyntaxError{SMILES: p.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// organic returns the atomic number and aromaticity of an organic-subset
// symbol starting at s[i], with its length, or 0.
func organic(s string, i int) (z int, arom bool, n int) {
	c := s[i]
	next := byte(0)
	if i+1 < len(s) {
		next = s[i+1]
	}
	switch c {
	case 'B':
		if next == 'r' {
			return 35, false, 2
		}
		return 5, false, 1
	case 'C':
		if next == 'l' {
			return 17, false, 2
		}
		return 6, false, 1
	case 'N':
		return 7, false, 1
	case 'O':
		return 8, false, 1
	case 'P':
		return 15, false, 1
	case 'S':
		return 16, false, 1
	case 'F':
		return 9, false, 1
	case 'I':
		return 53, false, 1
	case 'b':
		return 5, true, 1
	case 'c':
		return 6, true, 1
	case 'n':
		return 7, true, 1
	case 'o':
		return 8, true, 1
	case 'p':
		return 15, true, 1
	case 's':
		return 16, true, 1
	case '*':
		return 0, false, 1
	}
	return -1, false, 0
}

// aromaticBracket lists the lowercase symbols accepted inside brackets.
var aromaticBracket = map[string]int{"b": 5, "c": 6, "n": 7, "o": 8, "p": 15, "s": 16, "se": 34, "as": 33, "te": 52, "si": 14}

func (p *parser) parse() (*Mol, error) {
	s := p.src
	if len(s) == 0 {
		return nil, p.errf(0, "empty SMILES")
	}
	m := &Mol{}
	letters := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '*' {
			letters++
		}
	}
	m.Atoms = make([]Atom, 0, letters)
	m.Bonds = make([]Bond, 0, letters+4)
	p.m = m
	prev := -1                // previous atom on the current chain
	var stack []int           // atoms at open branches
	var stackPos []int        // positions of '(' for error messages
	pendOrder := BondOrder(0) // bond symbol waiting for the next atom or ring digit
	pendDir := StereoNone
	pendPos := -1
	dotPending := false
	for p.pos < len(s) {
		c := s[p.pos]
		start := p.pos
		switch {
		case c == '(':
			if prev < 0 {
				return nil, p.errf(start, "branch opened before any atom")
			}
			if pendOrder != 0 || pendDir != StereoNone {
				return nil, p.errf(start, "bond symbol before '('")
			}
			stack = append(stack, prev)
			stackPos = append(stackPos, start)
			p.pos++
			if p.pos < len(s) && s[p.pos] == ')' {
				return nil, p.errf(p.pos, "empty branch")
			}
		case c == ')':
			if len(stack) == 0 {
				return nil, p.errf(start, "unmatched ')'")
			}
			if pendOrder != 0 || pendDir != StereoNone {
				return nil, p.errf(pendPos, "bond symbol not followed by an atom")
			}
			prev = stack[len(stack)-1]
			stack, stackPos = stack[:len(stack)-1], stackPos[:len(stackPos)-1]
			p.pos++
		case c == '.':
			if pendOrder != 0 || pendDir != StereoNone {
				return nil, p.errf(pendPos, "bond symbol not followed by an atom")
			}
			if prev < 0 && len(m.Atoms) == 0 {
				return nil, p.errf(start, "'.' before any atom")
			}
			if len(stack) > 0 {
				return nil, p.errf(start, "'.' inside a branch")
			}
			if dotPending {
				return nil, p.errf(start, "two '.' in a row")
			}
			prev = -1
			dotPending = true
			p.pos++
		case c == '-' || c == '=' || c == '#' || c == '$' || c == ':' || c == '/' || c == '\\':
			if prev < 0 {
				return nil, p.errf(start, "bond symbol %q before any atom", c)
			}
			if pendOrder != 0 || pendDir != StereoNone {
				return nil, p.errf(start, "two bond symbols in a row")
			}
			switch c {
			case '-':
				pendOrder = Single
			case '=':
				pendOrder = Double
			case '#':
				pendOrder = Triple
			case '$':
				pendOrder = Quadruple
			case ':':
				pendOrder = Aromatic
			case '/':
				pendOrder, pendDir = Single, StereoUp
			case '\\':
				pendOrder, pendDir = Single, StereoDown
			}
			pendPos = start
			p.pos++
		case isDigit(c) || c == '%':
			if prev < 0 {
				return nil, p.errf(start, "ring-closure digit before any atom")
			}
			num, err := p.ringNumber()
			if err != nil {
				return nil, err
			}
			if err := p.ringBond(num, prev, pendOrder, pendDir, start); err != nil {
				return nil, err
			}
			pendOrder, pendDir = 0, StereoNone
		default:
			a, err := p.atom()
			if err != nil {
				return nil, err
			}
			idx := len(m.Atoms)
			m.Atoms = append(m.Atoms, a)
			if prev >= 0 {
				o := pendOrder
				if o == 0 {
					o = Single
					if a.Aromatic && m.Atoms[prev].Aromatic {
						o = Aromatic
					}
				}
				m.Bonds = append(m.Bonds, Bond{Begin: prev, End: idx, Order: o, Aromatic: o == Aromatic, Stereo: pendDir})
			} else if pendOrder != 0 {
				return nil, p.errf(pendPos, "bond symbol not attached to an atom")
			}
			pendOrder, pendDir = 0, StereoNone
			prev = idx
			dotPending = false
		}
	}
	if pendOrder != 0 || pendDir != StereoNone {
		return nil, p.errf(pendPos, "bond symbol at end of SMILES")
	}
	if dotPending {
		return nil, p.errf(len(s)-1, "'.' at end of SMILES")
	}
	if len(stack) > 0 {
		return nil, p.errf(stackPos[len(stackPos)-1], "unclosed branch '('")
	}
	if p.nOpen > 0 {
		for i := range p.rings {
			if p.rings[i].used {
				return nil, p.errf(p.rings[i].pos, "unclosed ring bond %d", i)
			}
		}
		for k, r := range p.big {
			if r.used {
				return nil, p.errf(r.pos, "unclosed ring bond %d", k)
			}
		}
	}
	return m, nil
}

func (p *parser) ringNumber() (int, error) {
	s := p.src
	start := p.pos
	if s[p.pos] != '%' {
		p.pos++
		return int(s[start] - '0'), nil
	}
	p.pos++
	if p.pos < len(s) && s[p.pos] == '(' {
		p.pos++
		n, digits := 0, 0
		for p.pos < len(s) && isDigit(s[p.pos]) {
			n = n*10 + int(s[p.pos]-'0')
			digits++
			p.pos++
			if digits > 5 {
				return 0, p.errf(start, "ring number too long")
			}
		}
		if digits == 0 || p.pos >= len(s) || s[p.pos] != ')' {
			return 0, p.errf(start, "bad ring number after '%%('")
		}
		p.pos++
		return n, nil
	}
	if p.pos+1 >= len(s) || !isDigit(s[p.pos]) || !isDigit(s[p.pos+1]) {
		return 0, p.errf(start, "'%%' must be followed by two digits")
	}
	n := int(s[p.pos]-'0')*10 + int(s[p.pos+1]-'0')
	p.pos += 2
	return n, nil
}

func (p *parser) ringBond(num, atom int, order BondOrder, dir BondStereo, pos int) error {
	var r *ringOpen
	if num < len(p.rings) {
		r = &p.rings[num]
	} else {
		if p.big == nil {
			p.big = map[int]*ringOpen{}
		}
		r = p.big[num]
		if r == nil {
			r = &ringOpen{}
			p.big[num] = r
		}
	}
	if !r.used {
		*r = ringOpen{atom: atom, order: order, dir: dir, pos: pos, used: true}
		p.nOpen++
		return nil
	}
	// close the ring
	other := r.atom
	r.used = false
	p.nOpen--
	if other == atom {
		return p.errf(pos, "ring bond %d closes on the atom that opened it", num)
	}
	o := order
	if r.order != 0 && order != 0 && r.order != order {
		return p.errf(pos, "ring bond %d has conflicting bond symbols %q and %q", num, r.order.String(), order.String())
	}
	if o == 0 {
		o = r.order
	}
	d := dir
	if d == StereoNone && r.dir != StereoNone {
		// direction written at the opening refers to opener -> closer
		d = r.dir
		if o == 0 {
			o = Single
		}
		for _, b := range p.m.Bonds {
			if (b.Begin == other && b.End == atom) || (b.Begin == atom && b.End == other) {
				return p.errf(pos, "ring bond %d duplicates an existing bond", num)
			}
		}
		p.m.Bonds = append(p.m.Bonds, Bond{Begin: other, End: atom, Order: o, Aromatic: o == Aromatic, Stereo: d})
		return nil
	}
	if o == 0 {
		o = Single
		if p.m.Atoms[other].Aromatic && p.m.Atoms[atom].Aromatic {
			o = Aromatic
		}
	}
	for _, b := range p.m.Bonds {
		if (b.Begin == other && b.End == atom) || (b.Begin == atom && b.End == other) {
			return p.errf(pos, "ring bond %d duplicates an existing bond", num)
		}
	}
	// a direction written at the closing digit refers to closer -> opener
	p.m.Bonds = append(p.m.Bonds, Bond{Begin: atom, End: other, Order: o, Aromatic: o == Aromatic, Stereo: d})
	return nil
}

func (p *parser) atom() (Atom, error) {
	s := p.src
	start := p.pos
	if s[p.pos] != '[' {
		z, arom, n := organic(s, p.pos)
		if n == 0 {
			return Atom{}, p.errf(start, "unexpected character %q", s[p.pos])
		}
		p.pos += n
		return Atom{Element: z, Aromatic: arom}, nil
	}
	// bracket atom
	end := strings.IndexByte(s[p.pos:], ']')
	if end < 0 {
		return Atom{}, p.errf(start, "unclosed bracket atom '['")
	}
	body := s[p.pos+1 : p.pos+end]
	base := p.pos + 1
	p.pos += end + 1
	a := Atom{NoImplicit: true}
	i := 0
	// isotope
	for i < len(body) && isDigit(body[i]) {
		a.Isotope = a.Isotope*10 + int(body[i]-'0')
		i++
		if a.Isotope > 999 {
			return Atom{}, p.errf(base, "isotope too large")
		}
	}
	// element symbol
	if i >= len(body) {
		return Atom{}, p.errf(base+i, "missing element symbol in bracket atom")
	}
	switch c := body[i]; {
	case c == '*':
		a.Element = 0
		i++
	case c >= 'A' && c <= 'Z':
		sym := body[i : i+1]
		if i+1 < len(body) && body[i+1] >= 'a' && body[i+1] <= 'z' {
			if z, ok := symbolToZ[body[i:i+2]]; ok {
				a.Element = z
				i += 2
				break
			}
		}
		z, ok := symbolToZ[sym]
		if !ok {
			return Atom{}, p.errf(base+i, "unknown element %q", body[i:min(i+2, len(body))])
		}
		a.Element = z
		i++
	case c >= 'a' && c <= 'z':
		if i+1 < len(body) && body[i+1] >= 'a' && body[i+1] <= 'z' {
			if z, ok := aromaticBracket[body[i:i+2]]; ok {
				a.Element, a.Aromatic = z, true
				i += 2
				break
			}
		}
		z, ok := aromaticBracket[body[i:i+1]]
		if !ok {
			return Atom{}, p.errf(base+i, "unknown aromatic element %q", body[i:i+1])
		}
		a.Element, a.Aromatic = z, true
		i++
	default:
		return Atom{}, p.errf(base+i, "bad element symbol %q", c)
	}
	// chirality
	if i < len(body) && body[i] == '@' {
		j := i + 1
		if j < len(body) && body[j] == '@' {
			j++
		} else {
			for _, cls := range []string{"TH", "AL", "SP", "TB", "OH"} {
				if strings.HasPrefix(body[j:], cls) {
					j += 2
					k := j
					for j < len(body) && isDigit(body[j]) {
						j++
					}
					if k == j {
						return Atom{}, p.errf(base+i, "chirality class %s needs a number", cls)
					}
					break
				}
			}
		}
		a.Chirality = body[i:j]
		i = j
	}
	// hydrogens
	if i < len(body) && body[i] == 'H' {
		i++
		a.ExplicitHs = 1
		// Several digits, as RDKit reads (and writes, for [FeH10]).
		if k := i; i < len(body) && isDigit(body[i]) {
			a.ExplicitHs = 0
			for i < len(body) && isDigit(body[i]) {
				a.ExplicitHs = a.ExplicitHs*10 + int(body[i]-'0')
				i++
				if i-k > 3 {
					return Atom{}, p.errf(base+k, "hydrogen count has more than 3 digits")
				}
			}
		}
	}
	// charge
	if i < len(body) && (body[i] == '+' || body[i] == '-') {
		sign := 1
		if body[i] == '-' {
			sign = -1
		}
		c := body[i]
		i++
		if i < len(body) && isDigit(body[i]) {
			n := 0
			for i < len(body) && isDigit(body[i]) {
				n = n*10 + int(body[i]-'0')
				i++
			}
			if n > 15 {
				return Atom{}, p.errf(base+i, "charge too large")
			}
			a.Charge = sign * n
		} else {
			n := 1
			for i < len(body) && body[i] == c {
				n++
				i++
			}
			a.Charge = sign * n
		}
	}
	// atom class
	if i < len(body) && body[i] == ':' {
		i++
		k := i
		for i < len(body) && isDigit(body[i]) {
			a.Class = a.Class*10 + int(body[i]-'0')
			i++
			if i-k > 9 {
				return Atom{}, p.errf(base+k, "atom class has more than 9 digits")
			}
		}
		if k == i {
			return Atom{}, p.errf(base+i, "atom class ':' needs a number")
		}
	}
	if i != len(body) {
		return Atom{}, p.errf(base+i, "unexpected %q in bracket atom", body[i])
	}
	return a, nil
}

// removeHydrogens folds [H] atoms that hang off one heavy atom by a single
// bond into that atom's explicit hydrogen count (RDKit removeHs with
// updateExplicitCount). Hydrogens with an isotope, charge, atom class, more
// or fewer than one neighbour, or bonded to another hydrogen stay.
func (m *Mol) removeHydrogens() {
	n := len(m.Atoms)
	deg := make([]int, n)
	for _, b := range m.Bonds {
		deg[b.Begin]++
		deg[b.End]++
	}
	remove := make([]bool, n)
	any := false
	for bi := range m.Bonds {
		b := &m.Bonds[bi]
		for _, pair := range [2][2]int{{b.Begin, b.End}, {b.End, b.Begin}} {
			h, heavy := pair[0], pair[1]
			ha := &m.Atoms[h]
			if ha.Element != 1 || ha.Isotope != 0 || ha.Charge != 0 || ha.Class != 0 || deg[h] != 1 || b.Order != Single {
				continue
			}
			if m.Atoms[heavy].Element == 1 || m.Atoms[heavy].Element == 0 {
				continue
			}
			remove[h] = true
			any = true
		}
	}
	if !any {
		return
	}
	for _, b := range m.Bonds {
		if remove[b.Begin] {
			m.Atoms[b.End].ExplicitHs++
		} else if remove[b.End] {
			m.Atoms[b.Begin].ExplicitHs++
		}
	}
	keep := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if !remove[i] {
			keep = append(keep, i)
		}
	}
	*m = *m.Subset(keep)
}
