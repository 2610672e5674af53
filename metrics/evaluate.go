package metrics

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lgflow/graph"
	"lgflow/graph/iso"
	"lgflow/spectral"
)

// Kind selects the family of graphs being evaluated and so the metrics
// reported.
type Kind int

const (
	// Generic: degree, clustering, orbit and spectral MMDs; uniqueness,
	// and novelty when training graphs are given.
	Generic Kind = iota
	// Planar: the Generic MMDs plus validity (connected and planar),
	// uniqueness, novelty and V.U.N.
	Planar
	// Tree: as Planar with tree validity.
	Tree
	// Ego: the Generic MMDs plus the ratio to the training set's MMDs.
	Ego
	// DAG: out-/in-degree, directed clustering, PageRank spectral and
	// wavelet MMDs; validity (acyclic), uniqueness, novelty and V.U.N.
	DAG
)

var kindNames = []string{"generic", "planar", "tree", "ego", "dag"}

// String returns the kind's lower-case name.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind parses a kind name (generic, planar, tree, ego, dag; case
// insensitive).
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if strings.EqualFold(s, n) {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("metrics: unknown kind %q (want one of %s)", s, strings.Join(kindNames, ", "))
}

// MarshalText encodes the kind as its name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a kind name.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err == nil {
		*k = v
	}
	return err
}

// Options configures Evaluate.
type Options struct {
	// Kind selects the metrics (default Generic).
	Kind Kind
	// EMD replaces the Gaussian-TV kernels by GRAN's EMD variants
	// (Gaussian-EMD for histograms, Gaussian-L2 for orbits), as
	// compute_emd=True does in the reference code. Off in every paper
	// table.
	EMD bool
	// DirectoCompat reproduces the DAG degree statistic of Directo's code
	// (and so of the paper's DAG tables): per-node degree sequences in
	// node order instead of degree histograms, with in and out swapped
	// (the "out-degree" MMD compares in-degrees and vice versa). Off by
	// default: out- and in-degree histograms, not swapped.
	DirectoCompat bool
	// IsoTimeout bounds each isomorphism look-up of the V.U.N. metrics; a
	// look-up that times out counts as "not isomorphic". 0 means 5 s for
	// DAG (as Directo's code) and no limit otherwise; negative means no
	// limit.
	IsoTimeout time.Duration
	// NodeLabels makes isomorphism respect node labels (TPU Tile op types).
	NodeLabels bool
	// Workers is the number of goroutines (0: GOMAXPROCS).
	Workers int
	// Progress, if not nil, is called as work completes with a stage name
	// ("statistics", "vun"), the units done and the total. Calls never
	// overlap, although the work runs on several goroutines.
	Progress func(stage string, done, total int)
}

// Report holds the results of Evaluate. MMD fields hold raw MMD² values
// (the paper's tables print them ×1e3); rates are fractions in [0, 1].
// Fields that do not apply to the Kind are nil and omitted from JSON.
type Report struct {
	Kind      Kind `json:"kind"`
	Generated int  `json:"generated"`
	Reference int  `json:"reference"`
	Train     int  `json:"train,omitempty"`

	Degree     *float64 `json:"degree,omitempty"`
	OutDegree  *float64 `json:"out_degree,omitempty"`
	InDegree   *float64 `json:"in_degree,omitempty"`
	Clustering *float64 `json:"clustering,omitempty"`
	Orbit      *float64 `json:"orbit,omitempty"`
	Spectral   *float64 `json:"spectral,omitempty"`
	Wavelet    *float64 `json:"wavelet,omitempty"`

	Valid  *float64 `json:"valid,omitempty"`
	Unique *float64 `json:"unique,omitempty"`
	Novel  *float64 `json:"novel,omitempty"`
	VUN    *float64 `json:"vun,omitempty"`
	// Ratio is the Ego ratio: the mean over degree, clustering, orbit and
	// spectral of MMD(ref, gen)/MMD(ref, train); Ratios holds the terms.
	Ratio  *float64           `json:"ratio,omitempty"`
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// IsoTimeouts counts isomorphism look-ups that hit IsoTimeout.
	IsoTimeouts int `json:"iso_timeouts,omitempty"`
}

func nanValue() float64 { return math.NaN() }

func ptr(v float64) *float64 { return &v }

// feats holds the per-graph statistics of one graph.
type feats struct {
	degree, outDeg, inDeg, clustering, orbit, spectral, wavelet []float64
}

// statistic describes one MMD metric.
type statistic struct {
	name   string
	get    func(*feats) []float64
	kernel Kernel
	hist   bool
	// keepEmpty keeps generated graphs without nodes (the orbit metric)
	keepEmpty bool
}

func statistics(opt Options) []statistic {
	tv := func(s float64) Kernel { return GaussianTV(s) }
	emd := func(s, scale float64) Kernel { return GaussianEMD(s, scale) }
	pick := func(a, b Kernel) Kernel {
		if opt.EMD {
			return b
		}
		return a
	}
	if opt.Kind == DAG {
		return []statistic{
			{name: "out_degree", get: func(f *feats) []float64 { return f.outDeg }, kernel: pick(tv(SigmaDegree), emd(SigmaDegree, 1)), hist: true},
			{name: "in_degree", get: func(f *feats) []float64 { return f.inDeg }, kernel: pick(tv(SigmaDegree), emd(SigmaDegree, 1)), hist: true},
			{name: "clustering", get: func(f *feats) []float64 { return f.clustering }, kernel: pick(tv(SigmaClustering), emd(SigmaClustering, ClusteringBins)), hist: true},
			{name: "spectral", get: func(f *feats) []float64 { return f.spectral }, kernel: pick(tv(SigmaSpectral), emd(SigmaSpectral, 1)), hist: true},
			{name: "wavelet", get: func(f *feats) []float64 { return f.wavelet }, kernel: pick(tv(SigmaWavelet), emd(SigmaWavelet, 1)), hist: true},
		}
	}
	return []statistic{
		{name: "degree", get: func(f *feats) []float64 { return f.degree }, kernel: pick(tv(SigmaDegree), emd(SigmaDegree, 1)), hist: true},
		{name: "clustering", get: func(f *feats) []float64 { return f.clustering }, kernel: pick(tv(SigmaClustering), emd(SigmaClustering, ClusteringBins)), hist: true},
		{name: "orbit", get: func(f *feats) []float64 { return f.orbit }, kernel: pick(tv(SigmaOrbit), GaussianL2(SigmaOrbit)), hist: false, keepEmpty: true},
		{name: "spectral", get: func(f *feats) []float64 { return f.spectral }, kernel: pick(tv(SigmaSpectral), emd(SigmaSpectral, 1)), hist: true},
	}
}

// computeFeats computes one graph's statistics for the kind.
func computeFeats(s *spectral.Solver, g *graph.Graph, opt Options) (*feats, error) {
	f := &feats{}
	var err error
	if opt.Kind == DAG {
		if opt.DirectoCompat {
			f.outDeg, f.inDeg = InDegreeSequence(g), OutDegreeSequence(g)
		} else {
			f.outDeg, f.inDeg = OutDegreeHistogram(g), InDegreeHistogram(g)
		}
		f.clustering = ClusteringHistogram(g)
		vals, _, err := pageRankEigen(s, g, false)
		if err != nil {
			return nil, err
		}
		f.spectral = spectralPMF(vals)
		if f.wavelet, err = waveletHistogram(s, g); err != nil {
			return nil, err
		}
		return f, nil
	}
	f.degree = DegreeHistogram(g)
	f.clustering = ClusteringHistogram(g)
	f.orbit = OrbitVector(g)
	if f.spectral, err = spectralHistogram(s, g); err != nil {
		return nil, err
	}
	return f, nil
}

// allFeats computes the statistics of every graph in parallel.
func allFeats(ctx context.Context, gs []*graph.Graph, opt Options, progress func()) ([]*feats, error) {
	out := make([]*feats, len(gs))
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(gs)))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := spectral.NewSolver()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(gs) || ctx.Err() != nil || errs[w] != nil {
					return
				}
				f, err := computeFeats(s, gs[i], opt)
				if err != nil {
					errs[w] = fmt.Errorf("graph %d: %w", i, err)
					return
				}
				out[i] = f
				progress()
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, ctx.Err()
}

// Evaluate computes the paper's metrics (docs/design.md, "Evaluation" and
// "DAG metrics") for the generated graphs
// gen against the reference graphs ref (the test split in the paper's
// tables), with train the training graphs (needed for novelty, V.U.N. and
// the Ego ratio; may be nil). Generated graphs without nodes are dropped
// from the MMDs except the orbit one (which uses a zero vector for them).
// The graphs are not modified.
func Evaluate(ctx context.Context, gen, ref, train []*graph.Graph, opt Options) (*Report, error) {
	if len(gen) == 0 {
		return nil, fmt.Errorf("metrics: no generated graphs")
	}
	if len(ref) == 0 {
		return nil, fmt.Errorf("metrics: no reference graphs")
	}
	if err := checkSets(gen, ref, train, opt.Kind); err != nil {
		return nil, err
	}
	rep := &Report{Kind: opt.Kind, Generated: len(gen), Reference: len(ref), Train: len(train)}

	all := append(append([]*graph.Graph{}, gen...), ref...)
	if opt.Kind == Ego && len(train) > 0 {
		all = append(all, train...)
	}
	// Workers finish graphs concurrently; the callback is called under a
	// lock, so callers need not be safe for concurrent use.
	var mu sync.Mutex
	done := 0
	progress := func() {
		if opt.Progress != nil {
			mu.Lock()
			done++
			opt.Progress("statistics", done, len(all))
			mu.Unlock()
		}
	}
	fs, err := allFeats(ctx, all, opt, progress)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	genF, refF, trainF := fs[:len(gen)], fs[len(gen):len(gen)+len(ref)], fs[len(gen)+len(ref):]
	vectors := func(f []*feats, gs []*graph.Graph, st statistic) [][]float64 {
		v := make([][]float64, 0, len(f))
		for i, x := range f {
			if st.keepEmpty || gs[i].N() > 0 {
				v = append(v, st.get(x))
			}
		}
		return v
	}
	ratios := map[string]float64{}
	for _, st := range statistics(opt) {
		refV := vectors(refF, ref, st)
		genV := vectors(genF, gen, st)
		if len(genV) == 0 {
			return nil, fmt.Errorf("metrics: every generated graph is empty")
		}
		d, err := MMD(refV, genV, st.kernel, st.hist)
		if err != nil {
			return nil, fmt.Errorf("metrics: %s: %w", st.name, err)
		}
		rep.set(st.name, d)
		if opt.Kind == Ego && len(train) > 0 {
			t, err := MMD(refV, vectors(trainF, train, st), st.kernel, st.hist)
			if err != nil {
				return nil, fmt.Errorf("metrics: %s (train): %w", st.name, err)
			}
			if t != 0 {
				ratios[st.name] = d / t
			}
		}
	}
	if len(ratios) > 0 {
		s := 0.0
		for _, r := range ratios {
			s += r
		}
		rep.Ratio = ptr(s / float64(len(ratios)))
		rep.Ratios = ratios
	}
	if opt.Kind == Ego {
		return rep, ctx.Err()
	}

	if err := rep.setVUN(ctx, gen, train, opt); err != nil {
		return nil, err
	}
	return rep, nil
}

// checkSets checks that no graph of the sets is nil and that each is
// directed exactly when kind is DAG.
func checkSets(gen, ref, train []*graph.Graph, kind Kind) error {
	for _, set := range []struct {
		name string
		gs   []*graph.Graph
	}{{"generated", gen}, {"reference", ref}, {"training", train}} {
		for i, g := range set.gs {
			if g == nil {
				return fmt.Errorf("metrics: %s graph %d is nil", set.name, i)
			}
			if g.Directed() != (kind == DAG) {
				want := "undirected"
				if kind == DAG {
					want = "directed"
				}
				return fmt.Errorf("metrics: %s graph %d is %s; kind %s needs %s graphs",
					set.name, i, map[bool]string{true: "directed", false: "undirected"}[g.Directed()], kind, want)
			}
		}
	}
	return nil
}

// setVUN computes the uniqueness, and the validity, novelty and V.U.N.
// where the kind has a validity test and train is given, into r.
func (r *Report) setVUN(ctx context.Context, gen, train []*graph.Graph, opt Options) error {
	vopt := VUNOptions{Iso: iso.Options{NodeLabels: opt.NodeLabels}, Workers: opt.Workers, Timeout: opt.IsoTimeout}
	if opt.IsoTimeout == 0 && opt.Kind == DAG {
		vopt.Timeout = 5 * time.Second
	}
	if opt.IsoTimeout < 0 {
		vopt.Timeout = 0
	}
	var valid func(*graph.Graph) bool
	switch opt.Kind {
	case Planar:
		valid = IsValidPlanar
	case Tree:
		valid = IsValidTree
	case DAG:
		valid = IsValidDAG
	}
	if opt.Progress != nil {
		opt.Progress("vun", 0, 1)
	}
	v, err := VUN(ctx, gen, train, valid, vopt)
	if err != nil {
		return fmt.Errorf("metrics: V.U.N.: %w", err)
	}
	if opt.Progress != nil {
		opt.Progress("vun", 1, 1)
	}
	r.IsoTimeouts = v.Timeouts
	r.Unique = ptr(v.Unique)
	if valid != nil {
		r.Valid = ptr(v.Valid)
	}
	if len(train) > 0 {
		r.Novel = ptr(v.Novel)
		if valid != nil {
			r.VUN = ptr(v.VUN)
		}
	}
	return nil
}

func (r *Report) set(name string, v float64) {
	p := ptr(v)
	switch name {
	case "degree":
		r.Degree = p
	case "out_degree":
		r.OutDegree = p
	case "in_degree":
		r.InDegree = p
	case "clustering":
		r.Clustering = p
	case "orbit":
		r.Orbit = p
	case "spectral":
		r.Spectral = p
	case "wavelet":
		r.Wavelet = p
	default:
		panic("metrics: unknown statistic " + name)
	}
}
