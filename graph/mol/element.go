package mol

import "fmt"

// element is one row of the periodic table as RDKit 2022 describes it.
type element struct {
	symbol   string
	weight   float64
	outer    int    // outer-shell electrons
	valences []int8 // allowed valences, ascending; {-1} = any
	early    bool   // left of carbon: charge shifts valence the other way
}

var symbolToZ = func() map[string]int {
	m := make(map[string]int, len(elementTable))
	for z, e := range elementTable {
		if z > 0 {
			m[e.symbol] = z
		}
	}
	return m
}()

// MaxAtomicNumber is the largest atomic number the package knows (Og).
const MaxAtomicNumber = len(elementTable) - 1

// ElementSymbol returns the symbol of atomic number z ("*" for 0). It
// panics if z is outside 0..MaxAtomicNumber.
func ElementSymbol(z int) string {
	if z < 0 || z > MaxAtomicNumber {
		panic(fmt.Sprintf("mol: atomic number %d out of range", z))
	}
	return elementTable[z].symbol
}

// AtomicNumber returns the atomic number of an element symbol with standard
// capitalisation ("C", "Cl", "Se"), and false if the symbol is unknown.
func AtomicNumber(symbol string) (int, bool) {
	z, ok := symbolToZ[symbol]
	return z, ok
}

// DefaultValence returns the first allowed valence of element z in RDKit's
// table (C 4, N 3, O 2, S 2, P 3, ...), or -1 for elements with no preferred
// valence (transition metals, the wildcard).
func DefaultValence(z int) int { return int(elementTable[z].valences[0]) }

// AllowedValences returns a copy of RDKit's allowed-valence list for
// element z (for example P: 3, 5, 7; S: 2, 4, 6); {-1} means "any".
func AllowedValences(z int) []int {
	v := elementTable[z].valences
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func maxValence(z int) int {
	v := elementTable[z].valences
	return int(v[len(v)-1])
}

// moreElectroNegative is RDKit's crude ordering: more outer electrons wins,
// then the lighter element.
func moreElectroNegative(z1, z2 int) bool {
	n1, n2 := elementTable[z1].outer, elementTable[z2].outer
	if n1 != n2 {
		return n1 > n2
	}
	return z1 < z2
}
