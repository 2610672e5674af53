package mol

import (
	"math/bits"
	"slices"
)

// hashCombine is boost::hash_combine on a 32-bit seed, as RDKit's gboost
// uses it for fingerprints.
func hashCombine(seed, v uint32) uint32 {
	return seed ^ (v + 0x9e3779b9 + (seed << 6) + (seed >> 2))
}

// hashPair is gboost::hash_value of std::pair<int32, uint32>.
func hashPair(a, b uint32) uint32 {
	return hashCombine(hashCombine(0, a), b)
}

// morganInvariants returns RDKit's connectivity invariants (ECFP-style):
// the hash of [atomic number, total degree, total H, formal charge,
// isotope mass delta, 1 if in a ring].
func (m *Mol) morganInvariants() []uint32 {
	ri := m.Rings()
	inv := make([]uint32, len(m.Atoms))
	for i := range m.Atoms {
		a := &m.Atoms[i]
		h := hashCombine(0, uint32(a.Element))
		h = hashCombine(h, uint32(m.TotalDegree(i)))
		h = hashCombine(h, uint32(m.TotalHs(i)))
		h = hashCombine(h, uint32(int32(a.Charge)))
		dm := 0
		if a.Isotope != 0 {
			dm = int(isotopeMass(a.Element, a.Isotope) - elementTable[a.Element].weight)
		}
		h = hashCombine(h, uint32(int32(dm)))
		if ri.atomCount[i] > 0 {
			h = hashCombine(h, 1)
		}
		inv[i] = h
	}
	return inv
}

// MorganIDs returns the environment identifiers of the Morgan (ECFP-like)
// fingerprint of radius r, as RDKit's GetMorganFingerprint computes them
// without chirality: round-0 atom invariants, then for each round the
// hash of (round, own invariant, sorted (bond type, neighbour invariant)
// pairs), skipping environments (bond sets) already seen. Duplicates are
// kept, so the result can be used as counts. The molecule must be
// sanitised.
func (m *Mol) MorganIDs(r int) []uint32 {
	m.ensureAdj()
	n, nb := len(m.Atoms), len(m.Bonds)
	inv := m.morganInvariants()
	out := slices.Clone(inv)
	words := (nb + 63) / 64
	if words == 0 {
		words = 1
	}
	env := make([]uint64, n*words)   // bonds of each atom's environment
	round := make([]uint64, n*words) // this round's environments
	dead := make([]bool, n)
	var seen [][]uint64
	type acc struct {
		env  []uint64
		inv  uint32
		atom int
	}
	roundInv := make([]uint32, n)
	var nbrs [][2]uint32
	for layer := 0; layer < r; layer++ {
		copy(round, env)
		clear(roundInv)
		var this []acc
		for i := 0; i < n; i++ {
			if dead[i] {
				continue
			}
			ns, bs := m.Neighbors(i)
			if len(ns) == 0 {
				dead[i] = true
				continue
			}
			ri := round[i*words : (i+1)*words]
			nbrs = nbrs[:0]
			for k, w := range ns {
				b := int(bs[k])
				ri[b>>6] |= 1 << (b & 63)
				ow := env[int(w)*words : (int(w)+1)*words]
				for x := range ri {
					ri[x] |= ow[x]
				}
				nbrs = append(nbrs, [2]uint32{uint32(rdkitBondType(m.Bonds[b].Order)), inv[w]})
			}
			slices.SortFunc(nbrs, func(a, b [2]uint32) int {
				if a[0] != b[0] {
					return int(int32(a[0])) - int(int32(b[0]))
				}
				if a[1] < b[1] {
					return -1
				} else if a[1] > b[1] {
					return 1
				}
				return 0
			})
			h := hashCombine(uint32(layer), inv[i])
			for _, p := range nbrs {
				h = hashCombine(h, hashPair(p[0], p[1]))
			}
			roundInv[i] = h
			this = append(this, acc{ri, h, i})
			for _, s := range seen {
				if slices.Equal(s, ri) {
					dead[i] = true
					break
				}
			}
		}
		slices.SortFunc(this, func(a, b acc) int {
			if c := compareBitsets(a.env, b.env); c != 0 {
				return c
			}
			if a.inv != b.inv {
				if a.inv < b.inv {
					return -1
				}
				return 1
			}
			return a.atom - b.atom
		})
		for _, t := range this {
			dup := false
			for _, s := range seen {
				if slices.Equal(s, t.env) {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, t.inv)
				seen = append(seen, slices.Clone(t.env))
			} else {
				dead[t.atom] = true
			}
		}
		copy(inv, roundInv)
		copy(env, round)
	}
	return out
}

// compareBitsets orders bitsets as boost::dynamic_bitset's operator< does
// (as numbers, most significant bit first).
func compareBitsets(a, b []uint64) int {
	for k := len(a) - 1; k >= 0; k-- {
		if a[k] != b[k] {
			if a[k] < b[k] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Fingerprint is a fixed-length bit vector.
type Fingerprint []uint64

// NewFingerprint returns an all-zero fingerprint of nBits bits.
func NewFingerprint(nBits int) Fingerprint { return make(Fingerprint, (nBits+63)/64) }

// Set sets bit i.
func (f Fingerprint) Set(i int) { f[i>>6] |= 1 << (i & 63) }

// Has reports whether bit i is set.
func (f Fingerprint) Has(i int) bool { return f[i>>6]&(1<<(i&63)) != 0 }

// Count returns the number of set bits.
func (f Fingerprint) Count() int {
	c := 0
	for _, w := range f {
		c += bits.OnesCount64(w)
	}
	return c
}

// Tanimoto returns |a AND b| / |a OR b| (1 when both are empty, as RDKit's
// TanimotoSimilarity gives 0 then; see the code). Both must have the same
// length; it panics otherwise.
func Tanimoto(a, b Fingerprint) float64 {
	if len(a) != len(b) {
		panic("mol: Tanimoto of fingerprints of different lengths")
	}
	and, or := 0, 0
	for k := range a {
		and += bits.OnesCount64(a[k] & b[k])
		or += bits.OnesCount64(a[k] | b[k])
	}
	if or == 0 {
		return 0
	}
	return float64(and) / float64(or)
}

// MorganFingerprint returns the folded Morgan fingerprint of radius r with
// nBits bits: bit id mod nBits for every MorganIDs identifier. MOSES uses
// r = 2, nBits = 1024 (RDKit's GetMorganFingerprintAsBitVect).
func (m *Mol) MorganFingerprint(r, nBits int) Fingerprint {
	fp := NewFingerprint(nBits)
	for _, id := range m.MorganIDs(r) {
		fp.Set(int(id % uint32(nBits)))
	}
	return fp
}

// isotopeMass approximates the mass of an isotope by its mass number,
// except for the hydrogen isotopes whose mass excess changes RDKit's
// integer mass delta.
func isotopeMass(z, iso int) float64 {
	if z == 1 {
		switch iso {
		case 2:
			return 2.014101778
		case 3:
			return 3.016049278
		}
	}
	return float64(iso)
}
