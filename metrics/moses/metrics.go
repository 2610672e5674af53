package moses

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"lgflow/graph/mol"
)

// Progress is called with the number of items done and the total. It may
// be called from several goroutines, but never concurrently.
type Progress func(done, total int)

// parallel runs f(i) for i in [0, n) on GOMAXPROCS workers, stopping early
// when ctx is cancelled, and reports progress about every 1% of n.
func parallel(ctx context.Context, n int, progress Progress, f func(i int)) error {
	workers := runtime.GOMAXPROCS(0)
	var next, done atomic.Int64
	var mu sync.Mutex
	step := int64(max(n/100, 1))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if ctx.Err() != nil {
					return
				}
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
				if d := done.Add(1); progress != nil && (d%step == 0 || d == int64(n)) {
					mu.Lock()
					progress(int(d), n)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// Parsed holds the molecules of a SMILES list: Mols[i] is nil and Errs[i]
// set where SMILES i is invalid; Canonical[i] is its canonical SMILES ("" if
// invalid).
type Parsed struct {
	SMILES    []string
	Mols      []*mol.Mol
	Canonical []string
	Errs      []error
}

// Parse parses and sanitises every SMILES in parallel (MOSES get_mol: the
// empty string is invalid) and computes canonical SMILES.
func Parse(ctx context.Context, smiles []string, progress Progress) (*Parsed, error) {
	p := &Parsed{SMILES: smiles, Mols: make([]*mol.Mol, len(smiles)), Canonical: make([]string, len(smiles)), Errs: make([]error, len(smiles))}
	err := parallel(ctx, len(smiles), progress, func(i int) {
		m, err := mol.ParseSMILES(smiles[i])
		if err != nil {
			p.Errs[i] = err
			return
		}
		p.Mols[i] = m
		p.Canonical[i] = m.SMILES()
	})
	return p, err
}

// Valid returns the molecules and canonical SMILES of the valid entries,
// in order (MOSES remove_invalid with canonize=True).
func (p *Parsed) Valid() ([]*mol.Mol, []string) {
	var ms []*mol.Mol
	var cs []string
	for i, m := range p.Mols {
		if m != nil {
			ms = append(ms, m)
			cs = append(cs, p.Canonical[i])
		}
	}
	return ms, cs
}

// Validity returns the fraction of entries that parse and sanitise
// (MOSES fraction_valid); 0 for an empty list.
func (p *Parsed) Validity() float64 {
	if len(p.Mols) == 0 {
		return 0
	}
	n := 0
	for _, m := range p.Mols {
		if m != nil {
			n++
		}
	}
	return float64(n) / float64(len(p.Mols))
}

// UniqueAt returns |set(canonical[:k])| / len(canonical[:k]) (MOSES
// fraction_unique on the valid molecules; k <= 0 means all). It returns
// NaN for an empty list.
func UniqueAt(canonical []string, k int) float64 {
	if k > 0 && len(canonical) > k {
		canonical = canonical[:k]
	}
	if len(canonical) == 0 {
		return math.NaN()
	}
	set := make(map[string]struct{}, len(canonical))
	for _, c := range canonical {
		set[c] = struct{}{}
	}
	return float64(len(set)) / float64(len(canonical))
}

// Novelty returns the fraction of distinct generated canonical SMILES that
// are not in train (MOSES novelty). train must hold canonical SMILES from
// this package (CanonicalSet builds it). NaN for an empty list.
func Novelty(canonical []string, train map[string]struct{}) float64 {
	set := make(map[string]struct{}, len(canonical))
	for _, c := range canonical {
		if c != "" {
			set[c] = struct{}{}
		}
	}
	if len(set) == 0 {
		return math.NaN()
	}
	novel := 0
	for c := range set {
		if _, ok := train[c]; !ok {
			novel++
		}
	}
	return float64(novel) / float64(len(set))
}

// CanonicalSet canonicalises SMILES in parallel and returns the set of
// canonical strings of the valid ones and the number of invalid entries.
func CanonicalSet(ctx context.Context, smiles []string, progress Progress) (map[string]struct{}, int, error) {
	p, err := Parse(ctx, smiles, progress)
	if err != nil {
		return nil, 0, err
	}
	set := make(map[string]struct{}, len(smiles))
	bad := 0
	for i, c := range p.Canonical {
		if p.Mols[i] == nil {
			bad++
			continue
		}
		set[c] = struct{}{}
	}
	return set, bad, nil
}

// FractionPassingFilters returns the mean of f.Passes over mols (MOSES
// fraction_passes_filters), computed in parallel. NaN for an empty list.
func FractionPassingFilters(ctx context.Context, f *Filters, mols []*mol.Mol, progress Progress) (float64, error) {
	if len(mols) == 0 {
		return math.NaN(), nil
	}
	var pass atomic.Int64
	err := parallel(ctx, len(mols), progress, func(i int) {
		if f.Passes(mols[i]) {
			pass.Add(1)
		}
	})
	return float64(pass.Load()) / float64(len(mols)), err
}

// Fingerprints returns the 1024-bit radius-2 Morgan fingerprints MOSES
// uses for SNN, in parallel.
func Fingerprints(ctx context.Context, mols []*mol.Mol, progress Progress) ([]mol.Fingerprint, error) {
	fps := make([]mol.Fingerprint, len(mols))
	err := parallel(ctx, len(mols), progress, func(i int) {
		fps[i] = mols[i].MorganFingerprint(2, 1024)
	})
	return fps, err
}

// SNN returns the mean over gen of the highest Tanimoto similarity to any
// fingerprint of ref (MOSES SNNMetric: average_agg_tanimoto with max).
// All fingerprints must have the same length; it panics otherwise. NaN if
// either set is empty.
//
// The reference set is packed into one array sorted by bit count, and a
// reference fingerprint is skipped when the bound min(|a|,|b|)/max(|a|,|b|)
// on their Tanimoto similarity cannot beat the best found so far.
func SNN(ctx context.Context, gen, ref []mol.Fingerprint, progress Progress) (float64, error) {
	if len(gen) == 0 || len(ref) == 0 {
		return math.NaN(), nil
	}
	w := len(ref[0])
	type rfp struct {
		cnt int
		idx int
	}
	order := make([]rfp, len(ref))
	for j, r := range ref {
		if len(r) != w {
			panic("moses: SNN: fingerprints of different lengths")
		}
		order[j] = rfp{r.Count(), j}
	}
	sort.Slice(order, func(a, b int) bool { return order[a].cnt < order[b].cnt })
	flat := make([]uint64, len(ref)*w)
	cnts := make([]int, len(ref))
	for k, o := range order {
		copy(flat[k*w:(k+1)*w], ref[o.idx])
		cnts[k] = o.cnt
	}
	best := make([]float64, len(gen))
	err := parallel(ctx, len(gen), progress, func(i int) {
		g := gen[i]
		if len(g) != w {
			panic("moses: SNN: fingerprints of different lengths")
		}
		best[i] = maxTanimoto(g, g.Count(), flat, cnts, w)
	})
	if err != nil {
		return 0, err
	}
	s := 0.0
	for _, b := range best {
		s += b
	}
	return s / float64(len(gen)), nil
}

// maxTanimoto returns the highest Tanimoto similarity between g (with gc
// bits set) and the packed reference fingerprints, sorted by bit count
// cnts. Only references whose count c satisfies min(c,gc)/max(c,gc) > best
// can improve on the best so far, so the scan starts at gc's count and
// walks outwards, stopping each way when that bound fails.
func maxTanimoto(g mol.Fingerprint, gc int, flat []uint64, cnts []int, w int) float64 {
	n := len(cnts)
	start := sort.SearchInts(cnts, gc)
	best := 0.0
	up, down := start, start-1
	for up < n || down >= 0 {
		if up < n {
			c := cnts[up]
			if c > 0 && float64(gc) <= best*float64(c) { // bound gc/c <= best
				up = n
			} else {
				if t := tanimotoPacked(g, gc, flat[up*w:(up+1)*w:(up+1)*w], c); t > best {
					best = t
				}
				up++
			}
		}
		if down >= 0 {
			c := cnts[down]
			if gc > 0 && float64(c) <= best*float64(gc) { // bound c/gc <= best
				down = -1
			} else {
				if t := tanimotoPacked(g, gc, flat[down*w:(down+1)*w:(down+1)*w], c); t > best {
					best = t
				}
				down--
			}
		}
	}
	return best
}

// tanimotoPacked returns the Tanimoto similarity of g and r given their
// bit counts.
func tanimotoPacked(g mol.Fingerprint, gc int, r []uint64, rc int) float64 {
	and := 0
	if len(r) == 16 && len(g) == 16 {
		and = popcount(g[0]&r[0]) + popcount(g[1]&r[1]) + popcount(g[2]&r[2]) + popcount(g[3]&r[3]) +
			popcount(g[4]&r[4]) + popcount(g[5]&r[5]) + popcount(g[6]&r[6]) + popcount(g[7]&r[7]) +
			popcount(g[8]&r[8]) + popcount(g[9]&r[9]) + popcount(g[10]&r[10]) + popcount(g[11]&r[11]) +
			popcount(g[12]&r[12]) + popcount(g[13]&r[13]) + popcount(g[14]&r[14]) + popcount(g[15]&r[15])
	} else {
		for x := range r {
			and += popcount(g[x] & r[x])
		}
	}
	den := gc + rc - and
	if den == 0 {
		return 0
	}
	return float64(and) / float64(den)
}

// Scaffolds counts the Bemis–Murcko scaffolds (canonical SMILES) of mols
// that have at least minRings rings; MOSES uses minRings = 2. Molecules
// whose scaffold cannot be built are skipped, as MOSES does.
func Scaffolds(ctx context.Context, mols []*mol.Mol, minRings int, progress Progress) (map[string]int, error) {
	scafs := make([]string, len(mols))
	err := parallel(ctx, len(mols), progress, func(i int) {
		s, err := mols[i].MurckoScaffold()
		if err != nil || s.NumAtoms() == 0 || s.Rings().NumRings() < minRings {
			return
		}
		scafs[i] = s.SMILES()
	})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, s := range scafs {
		if s != "" {
			counts[s]++
		}
	}
	return counts, nil
}

// CosineSimilarity returns the cosine similarity of two count vectors
// indexed by string (MOSES cos_similarity); NaN if either is empty.
func CosineSimilarity(a, b map[string]int) float64 {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	var dot, na, nb float64
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // fixed summation order
	for _, k := range keys {
		x, y := float64(a[k]), float64(b[k])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return math.NaN()
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// Options configures Evaluate.
type Options struct {
	// Train is the training set (SMILES) for novelty; nil skips novelty.
	Train []string
	// Ref is the reference (test) set for SNN and Scaf; nil skips them.
	Ref []string
	// Filters enables the Filters metric when set (see LoadFilters).
	Filters *Filters
	// UniqueK lists the k of unique@k (MOSES: 1000 and 10000); empty means
	// all molecules.
	UniqueK []int
	// Progress, if set, is told what is being computed: stage names are
	// "parse", "train", "ref", "filters", "fingerprints", "snn", "scaffolds".
	Progress func(stage string, done, total int)
}

// Report holds the MOSES metrics of a generated set. Metrics that were not
// requested are NaN.
type Report struct {
	N, NValid int
	Valid     float64
	// Unique maps k to unique@k (0 = all valid molecules).
	Unique  map[int]float64
	Novelty float64
	Filters float64
	SNN     float64
	Scaf    float64
}

// Evaluate computes the MOSES metrics of gen, following get_all_metrics:
// validity on all entries, the rest on the valid ones.
func Evaluate(ctx context.Context, gen []string, opt Options) (*Report, error) {
	var prog Progress
	if opt.Progress != nil {
		prog = func(d, t int) { opt.Progress("parse", d, t) }
	}
	p, err := Parse(ctx, gen, prog)
	if err != nil {
		return nil, err
	}
	return EvaluateParsed(ctx, p, opt)
}

// EvaluateParsed is Evaluate for a generated set already parsed with
// Parse.
func EvaluateParsed(ctx context.Context, p *Parsed, opt Options) (*Report, error) {
	stage := func(name string) Progress {
		if opt.Progress == nil {
			return nil
		}
		return func(d, t int) { opt.Progress(name, d, t) }
	}
	var err error
	mols, canon := p.Valid()
	r := &Report{N: len(p.SMILES), NValid: len(mols), Valid: p.Validity(), Unique: map[int]float64{},
		Novelty: math.NaN(), Filters: math.NaN(), SNN: math.NaN(), Scaf: math.NaN()}
	ks := opt.UniqueK
	if len(ks) == 0 {
		ks = []int{0}
	}
	for _, k := range ks {
		r.Unique[k] = UniqueAt(canon, k)
	}
	if opt.Train != nil {
		train, _, err := CanonicalSet(ctx, opt.Train, stage("train"))
		if err != nil {
			return nil, err
		}
		r.Novelty = Novelty(canon, train)
	}
	if opt.Filters != nil {
		if r.Filters, err = FractionPassingFilters(ctx, opt.Filters, mols, stage("filters")); err != nil {
			return nil, err
		}
	}
	if opt.Ref != nil {
		rp, err := Parse(ctx, opt.Ref, stage("ref"))
		if err != nil {
			return nil, err
		}
		refMols, _ := rp.Valid()
		if len(refMols) == 0 {
			return nil, fmt.Errorf("moses: no valid molecule in the reference set")
		}
		gfp, err := Fingerprints(ctx, mols, stage("fingerprints"))
		if err != nil {
			return nil, err
		}
		rfp, err := Fingerprints(ctx, refMols, stage("fingerprints"))
		if err != nil {
			return nil, err
		}
		if r.SNN, err = SNN(ctx, gfp, rfp, stage("snn")); err != nil {
			return nil, err
		}
		gs, err := Scaffolds(ctx, mols, 2, stage("scaffolds"))
		if err != nil {
			return nil, err
		}
		rs, err := Scaffolds(ctx, refMols, 2, stage("scaffolds"))
		if err != nil {
			return nil, err
		}
		r.Scaf = CosineSimilarity(rs, gs)
	}
	return r, nil
}
