package bundle

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/iso"
	"lgflow/graph/mol"
	"lgflow/metrics"
	"lgflow/tensor"
)

// ValidityRules are the validity rules ValidityTest knows, the names a
// model card's Validity takes (flow.Card).
var ValidityRules = []string{"planar", "tree", "dag", "connected", "molecule", "none"}

// ValidityTest returns the test of a validity rule (ValidityRules):
// planar (connected and planar, metrics.IsValidPlanar), tree, dag,
// connected, molecule (the graph decodes to a valid molecule of enc, with
// aromatic nitrogens read as [nH] where needed) or none (nil: every graph
// is valid).
func ValidityTest(rule string, enc *mol.Encoding) (func(*graph.Graph) bool, error) {
	switch rule {
	case "planar":
		return metrics.IsValidPlanar, nil
	case "tree":
		return metrics.IsValidTree, nil
	case "dag":
		return metrics.IsValidDAG, nil
	case "connected":
		return func(g *graph.Graph) bool { return g.N() > 0 && graph.IsConnected(g) }, nil
	case "molecule":
		if enc == nil {
			return nil, fmt.Errorf("bundle: the validity rule molecule needs a molecule encoding")
		}
		return func(g *graph.Graph) bool {
			_, err := enc.DecodeDatasetGraph(g, mol.InferAromaticNH(mol.DefaultInferNH))
			return err == nil
		}, nil
	case "none", "":
		return nil, nil
	}
	return nil, fmt.Errorf("bundle: unknown validity rule %q (want %s)", rule, strings.Join(ValidityRules, ", "))
}

// RuleConstraints returns the recipe constraints (flow.Sampler.Constraints)
// that make every decoded graph valid by a rule where some do: planar and
// connected for planar, spanning trees for tree, acyclicity for dag,
// joined components for connected; nil otherwise.
func RuleConstraints(rule string) []string {
	switch rule {
	case "planar":
		return []string{"planar", "connected"}
	case "tree":
		return []string{"tree"}
	case "dag":
		return []string{"dag"}
	case "connected":
		return []string{"connected"}
	}
	return nil
}

// Figures are the measured figures of a set of generated graphs against
// reference graphs: V.U.N. and its parts as fractions, and the MMD² of
// each graph statistic (raw, not × 1e3), by the names the paper's tables
// use (degree, clustering, orbit, spectral; out_degree, in_degree,
// wavelet for directed graphs).
type Figures struct {
	VUN, Valid, Unique, Novel float64
	MMD                       map[string]float64
}

// Measure computes the Figures of gen against ref, with novelty against
// train and validity by valid (nil: every graph is valid). Directed graphs
// get the DAG statistics (metrics.DAG), undirected ones the generic ones.
// Isomorphism respects node labels when the reference graphs have any.
func Measure(ctx context.Context, gen, ref, train []*graph.Graph, valid func(*graph.Graph) bool) (Figures, error) {
	if len(gen) == 0 || len(ref) == 0 {
		return Figures{}, fmt.Errorf("bundle: measuring needs generated and reference graphs (%d, %d)", len(gen), len(ref))
	}
	kind := metrics.Generic
	if ref[0].Directed() {
		kind = metrics.DAG
	}
	labels := slices.ContainsFunc(ref, func(g *graph.Graph) bool { return g.NodeLabels != nil })
	// Novelty and validity come from VUN below: Evaluate gets no training
	// graphs, and computes the statistics only.
	rep, err := metrics.Evaluate(ctx, gen, ref, nil, metrics.Options{Kind: kind, NodeLabels: labels})
	if err != nil {
		return Figures{}, err
	}
	f := Figures{MMD: map[string]float64{}}
	for name, v := range map[string]*float64{"degree": rep.Degree, "out_degree": rep.OutDegree, "in_degree": rep.InDegree,
		"clustering": rep.Clustering, "orbit": rep.Orbit, "spectral": rep.Spectral, "wavelet": rep.Wavelet} {
		if v != nil {
			f.MMD[name] = *v
		}
	}
	vopt := metrics.VUNOptions{Iso: iso.Options{NodeLabels: labels}}
	if kind == metrics.DAG {
		vopt.Timeout = 5 * time.Second // as metrics.Evaluate for DAGs
	}
	v, err := metrics.VUN(ctx, gen, train, valid, vopt)
	if err != nil {
		return Figures{}, err
	}
	f.VUN, f.Valid, f.Unique, f.Novel = v.VUN, v.Valid, v.Unique, v.Novel
	return f, nil
}

// MMDNames lists the statistics of f in a fixed order.
func (f Figures) MMDNames() []string {
	var out []string
	for _, name := range []string{"degree", "out_degree", "in_degree", "clustering", "orbit", "spectral", "wavelet"} {
		if _, ok := f.MMD[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// Card returns the figures as a model card writes them (flow.Card.Figures):
// rates in %, MMD² × 1e3, rounded to three significant digits, with
// prefix before each name ("constrained." for an alternative's).
func (f Figures) Card(prefix string, into map[string]float64) {
	into[prefix+"vun"] = round3(100 * f.VUN)
	into[prefix+"valid"] = round3(100 * f.Valid)
	for name, v := range f.MMD {
		into[prefix+name] = round3(1e3 * v)
	}
}

// round3 rounds v to three significant digits.
func round3(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// String gives V.U.N. in % and the MMDs × 1e3 on one line.
func (f Figures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "V.U.N. %5.1f%% (valid %5.1f%%)", 100*f.VUN, 100*f.Valid)
	for _, name := range f.MMDNames() {
		fmt.Fprintf(&b, "  %s %.3g", name, 1e3*f.MMD[name])
	}
	return b.String()
}

// LoadExperts loads the expert denoisers of s that m's bundle does not
// hold: an expert that m's recipe names (in its default or an
// alternative) is the bundle's, which flow.Open loaded; any other names a
// checkpoint file, a path, loaded in m's latent space and moved to be
// (nil: the CPU). Experts with a Model are left as they are.
func LoadExperts(m *flow.Model, s *flow.Sampler, be tensor.Backend) error {
	named := map[string]bool{}
	if m.Recipe != nil {
		for _, rs := range append([]flow.Sampler{m.Recipe.Sampler}, alternatives(m.Recipe)...) {
			for _, e := range rs.Experts {
				named[e.File] = true
			}
		}
	}
	for i := range s.Experts {
		e := &s.Experts[i]
		if e.Model != nil || named[e.File] {
			continue
		}
		em, err := flow.Load(e.File, m.VAE)
		if err != nil {
			return fmt.Errorf("expert denoiser: %w", err)
		}
		if be != nil {
			if err := em.ToBackend(be); err != nil {
				return err
			}
		}
		e.Model = em
	}
	return nil
}

// ValidateSettings is s.Validate for settings whose experts may name
// checkpoint files by their paths, which LoadExperts loads: such an
// expert is checked as one that carries its model.
func ValidateSettings(s flow.Sampler) error {
	s.Experts = slices.Clone(s.Experts)
	for i, e := range s.Experts {
		if e.Model == nil && strings.ContainsAny(e.File, `/\`) {
			s.Experts[i].Model = &flow.Model{}
		}
	}
	return s.Validate()
}
