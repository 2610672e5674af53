package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"lgflow/flow"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/internal/bundle"
	"lgflow/internal/cli"
	"lgflow/metrics"
)

// condFileUsage documents the training commands' -cond.
const condFileUsage = "condition file: one line per training graph, in the order of the graphs (blank lines and # comments skipped), either a label (one word, e.g. tree) or comma-separated name=value pairs (label=NAME for the label, PROPERTY=NUMBER for each property, e.g. label=tree,edges=63; the same keys on every line); trains a conditional flow (docs/bundle.md)"

// condFlags are the training commands' condition flags: where the
// graphs' conditions come from, and the condition dropout.
type condFlags struct {
	file, props, attrs *string
	drop               *float64
}

// addCondFlags registers -cond, -cond-prop, -cond-drop and, for commands
// that read node-link files (attrs), -cond-attrs.
func addCondFlags(fs *flag.FlagSet, attrs bool) *condFlags {
	c := &condFlags{
		file:  fs.String("cond", "", condFileUsage),
		props: fs.String("cond-prop", "", "condition on built-in properties computed from the graphs, comma-separated: "+strings.Join(metrics.BuiltinProperties, ", ")+" (the circuit rank: rings of a molecule); with -cond, added to its conditions"),
		drop:  fs.Float64("cond-drop", 0, fmt.Sprintf("probability that a training graph's condition is dropped, so the flow also learns to sample without one (for guidance_scale), in [0, 1) (default %g; 0: never)", flow.DefaultCondDrop)),
	}
	if attrs {
		c.attrs = fs.String("cond-attrs", "", `node-link input: condition on these graph attributes, comma-separated: a key with string values (e.g. "graph": {"label": "tree"}) is the label, one with numbers a property; with -cond or -cond-prop, added to theirs`)
	}
	return c
}

// given reports whether any source of conditions was given.
func (c *condFlags) given() bool {
	return *c.file != "" || *c.props != "" || c.attrs != nil && *c.attrs != ""
}

// dropout returns flow.Config.CondDrop for -cond-drop (set: given): 0
// (the default) when not given, -1 (never) for 0.
func (c *condFlags) dropout(set bool) (float64, error) {
	v := *c.drop
	switch {
	case !set:
		return 0, nil
	case !c.given():
		return 0, usagef("-cond-drop needs conditions (-cond, -cond-prop or -cond-attrs)")
	case !(v >= 0 && v < 1):
		return 0, usagef("-cond-drop %g: want a probability in [0, 1)", v)
	case v == 0:
		return -1, nil
	}
	return v, nil
}

// table reads the conditions of the graphs gs of the file path (format
// its input format, inputFormat) from the sources given: nil when none
// was.
func (c *condFlags) table(gs []*graph.Graph, path, format string) (*bundle.ConditionTable, error) {
	var t *bundle.ConditionTable
	if *c.file != "" {
		ft, err := bundle.ReadConditionFile(*c.file, len(gs))
		if err != nil {
			return nil, err
		}
		t = ft
	}
	if c.attrs != nil && *c.attrs != "" {
		if format != inNodeLink {
			return nil, usagef("-cond-attrs reads node-link JSON's graph attributes; %s is %s", path, format)
		}
		at, err := bundle.NodeLinkConditions(path, splitList(*c.attrs))
		if err != nil {
			return nil, err
		}
		if at.Len() != len(gs) {
			return nil, fmt.Errorf("%s: conditions of %d graphs for %d graphs", path, at.Len(), len(gs))
		}
		if t, err = t.Merge(at); err != nil {
			return nil, usagef("-cond-attrs: %v", err)
		}
	}
	if *c.props != "" {
		names := splitList(*c.props)
		for _, name := range names {
			if !slices.Contains(metrics.BuiltinProperties, name) {
				return nil, usagef("-cond-prop: unknown property %q (built in: %s)", name, strings.Join(metrics.BuiltinProperties, ", "))
			}
		}
		pt, err := bundle.PropertyConditions(gs, names)
		if err != nil {
			return nil, fmt.Errorf("-cond-prop: %w", err)
		}
		if t, err = t.Merge(pt); err != nil {
			return nil, usagef("-cond-prop: %v", err)
		}
	}
	return t, nil
}

// conditionMismatch compares the conditions a resumed training state was
// written with (saved) with this run's (s), naming the flags that give
// them.
func conditionMismatch(path string, saved, s *cond.Schema) error {
	if saved.Equal(s) {
		return nil
	}
	describe := func(c *cond.Schema) string {
		if c == nil {
			return "no conditions"
		}
		return "conditions on " + c.Describe()
	}
	return usagef("%s was trained with %s, this run gives %s: a run continues with the same conditions (the same -cond, -cond-prop and -cond-attrs), or starts in another directory",
		path, describe(saved), describe(s))
}

// checkGuidance checks the guidance scale w that -sampler gives for the
// model m: within [0, flow.MaxGuidanceScale], and 1 for a model without
// conditions.
func checkGuidance(w float64, m *flow.Model) error {
	if !(w >= 0 && w <= flow.MaxGuidanceScale) {
		return usagef("-sampler guidance_scale=%g: want a scale in [0, %d] (1: plain conditional sampling, 0: unconditional, > 1: stronger)", w, flow.MaxGuidanceScale)
	}
	if m.Cond == nil && w != 1 {
		return usagef("-sampler guidance_scale=%g: the model was trained without conditions (classifier-free guidance needs a conditional model: lgflow train -cond)", w)
	}
	return nil
}

// conditionOptions returns the sampler options of sample's -cond text
// (condSet: given) for the model m sampled with the sampler flags f, with
// usage errors for a condition or a guidance scale the model cannot take,
// and reports on stderr what the graphs are sampled under.
func conditionOptions(m *flow.Model, f *cli.Sampler, text string, condSet bool) ([]flow.SampleOption, error) {
	var given flow.Sampler
	f.Edit(&given)
	if given.GuidanceScale != nil {
		if err := checkGuidance(*given.GuidanceScale, m); err != nil {
			return nil, err
		}
	}
	switch {
	case condSet && m.Cond == nil:
		return nil, usagef("-cond %q: the model was trained without conditions (lgflow train -cond trains a conditional one)", text)
	case m.Cond == nil:
		return nil, nil
	case !condSet:
		fmt.Fprintf(stderr, "the model is conditioned on %s; sampling without a condition (the training graphs' whole distribution; -cond chooses one)\n", m.Cond.Describe())
		return nil, nil
	}
	c, err := m.Cond.Parse(text)
	if err != nil {
		return nil, usagef("-cond: %v", strings.TrimPrefix(strings.TrimPrefix(err.Error(), "flow: "), "cond: "))
	}
	w := 1.0
	if m.Recipe != nil && f.Recipe != flow.NoRecipe {
		if s, ok := m.Recipe.Lookup(f.Recipe); ok && s.GuidanceScale != nil {
			w = *s.GuidanceScale
		}
	}
	if given.GuidanceScale != nil {
		w = *given.GuidanceScale
	}
	fmt.Fprintf(stderr, "sampling under %s, guidance scale %g\n", m.Cond.Format(c), w)
	return []flow.SampleOption{flow.WithCondition(c)}, nil
}

// condEval is what eval measures of graphs sampled under a condition:
// the share of the requested class, and the errors of requested property
// values.
type condEval struct {
	label, checker string
	test           func(*graph.Graph) bool
	props          []string
	targets        []float64
}

// parseCondEval reads eval's -cond-label, -checker and -cond-prop (nil:
// none given); molecules names the molecule encoding of -model's card,
// for the molecule checker.
func parseCondEval(label, checker, props, molecules string) (*condEval, error) {
	if label == "" && props == "" {
		if checker != "" {
			return nil, usagef("-checker needs -cond-label")
		}
		return nil, nil
	}
	ce := &condEval{label: label, checker: checker}
	if label != "" {
		if ce.checker == "" {
			ce.checker = label
		}
		if ce.checker == "none" || !slices.Contains(bundle.ValidityRules, ce.checker) {
			return nil, usagef("-checker %q: want planar, tree, dag, connected or molecule (-cond-label %s is none of them: name the class's test with -checker)", ce.checker, label)
		}
		enc, err := bundle.MolEncoding(molecules)
		if err != nil {
			return nil, err
		}
		if ce.test, err = bundle.ValidityTest(ce.checker, enc); err != nil {
			return nil, usagef("-checker: %v", err)
		}
	}
	for _, part := range splitList(props) {
		name, val, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		switch {
		case !ok:
			return nil, usagef("-cond-prop %q: want NAME=VALUE", part)
		case !slices.Contains(metrics.BuiltinProperties, name):
			return nil, usagef("-cond-prop: unknown property %q (built in: %s)", name, strings.Join(metrics.BuiltinProperties, ", "))
		case slices.Contains(ce.props, name):
			return nil, usagef("-cond-prop: %s given twice", name)
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return nil, usagef("-cond-prop: %s=%q is not a finite number", name, val)
		}
		ce.props, ce.targets = append(ce.props, name), append(ce.targets, v)
	}
	return ce, nil
}

// condFigures are eval's figures of a conditional sample.
type condFigures struct {
	// Label and Checker are the requested class and its test; Fraction
	// the share of the samples the test accepts.
	Label    string   `json:"label,omitempty"`
	Checker  string   `json:"checker,omitempty"`
	Fraction *float64 `json:"class_fraction,omitempty"`
	// Properties are the requested properties' errors.
	Properties []propFigure `json:"properties,omitempty"`
}

// propFigure is the error of one requested property: the mean absolute
// error of the Measured samples that have the property (a disconnected
// graph has no diameter), the spread (standard deviation) of the
// reference graphs' values, and MAE over the spread.
type propFigure struct {
	Name     string   `json:"name"`
	Target   float64  `json:"target"`
	MAE      float64  `json:"mae"`
	Measured int      `json:"measured"`
	RefStd   float64  `json:"ref_std"`
	Relative *float64 `json:"mae_over_ref_std,omitempty"` // nil: the reference graphs' values do not vary
}

// measure computes ce's figures of the samples gen against the
// reference graphs ref (nil for a nil ce).
func (ce *condEval) measure(gen, ref []*graph.Graph) (*condFigures, error) {
	if ce == nil {
		return nil, nil
	}
	cf := &condFigures{Label: ce.label, Checker: ce.checker}
	if ce.test != nil {
		f := bundle.Fraction(gen, ce.test)
		cf.Fraction = &f
	}
	for i, name := range ce.props {
		mae, m, err := metrics.PropertyMAE(gen, name, ce.targets[i])
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return nil, fmt.Errorf("-cond-prop %s: no generated graph has the property (a disconnected graph has no diameter)", name)
		}
		std := refSpread(ref, name)
		p := propFigure{Name: name, Target: ce.targets[i], MAE: mae, Measured: m, RefStd: std}
		if std > 0 {
			rel := mae / std
			p.Relative = &rel
		}
		cf.Properties = append(cf.Properties, p)
	}
	return cf, nil
}

// refSpread returns the standard deviation of property name over the
// graphs of ref that have it (0: none or one).
func refSpread(ref []*graph.Graph, name string) float64 {
	var vals []float64
	for _, g := range ref {
		if v, err := metrics.GraphProperties([]*graph.Graph{g}, name); err == nil {
			vals = append(vals, v[0][0])
		}
	}
	if len(vals) < 2 {
		return 0
	}
	mean := 0.0
	for _, v := range vals {
		mean += v
	}
	mean /= float64(len(vals))
	sq := 0.0
	for _, v := range vals {
		sq += (v - mean) * (v - mean)
	}
	return math.Sqrt(sq / float64(len(vals)))
}

// write prints the figures under eval's table.
func (cf *condFigures) write(w io.Writer, decimals int) {
	if cf.Fraction != nil {
		fmt.Fprintf(w, "requested class %s: %.*f%% of the samples (checker %s)\n", cf.Label, decimals, 100**cf.Fraction, cf.Checker)
	}
	for _, p := range cf.Properties {
		spread := "the reference graphs' values do not vary"
		if p.Relative != nil {
			spread = fmt.Sprintf("%.*f%% of the reference graphs' spread, std %.*f", decimals, 100**p.Relative, decimals+1, p.RefStd)
		}
		fmt.Fprintf(w, "requested %s = %g: mean absolute error %.*f over %d samples (%s)\n", p.Name, p.Target, decimals+1, p.MAE, p.Measured, spread)
	}
}
