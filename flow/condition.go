package flow

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"lgflow/dit"
	"lgflow/tensor"
)

// Condition is the schema of a conditional flow's conditions: a label out
// of Labels, a vector of named real-valued properties, or both, each graph
// of the training set having one. The denoiser sees the label as a class
// index (dit.Config.Classes) and the properties standardised,
// (value - Mean)/Std (dit.Config.CondDim). A conditional Model holds its
// schema (Model.Cond) and its checkpoint stores it as JSON (metadata key
// "condition"); NewConditions builds it from a training set.
//
// In training the whole condition of a graph (label and properties
// together) is dropped with probability Config.CondDrop, so the denoiser
// also learns the unconditional distribution, the null condition, which
// classifier-free guidance (WithGuidanceScale) extrapolates away from.
type Condition struct {
	// Labels are the label names, in the order of their class indices;
	// nil: no label.
	Labels []string `json:"labels,omitempty"`
	// Properties are the real-valued properties, in the order of the
	// vector; nil: none.
	Properties []Property `json:"properties,omitempty"`
	// Tolerance is how far outside a property's trained range [Min, Max]
	// a requested value may lie, in units of the property's Std (0:
	// DefaultTolerance): the denoiser has seen nothing beyond the range,
	// and extrapolates poorly.
	Tolerance float64 `json:"tolerance,omitempty"`
}

// Property is one real-valued property of a Condition with its
// standardisation and the range of the training set.
type Property struct {
	Name string `json:"name"`
	// Mean and Std are the property's mean and standard deviation over the
	// training set (Std 1 for a constant property): the denoiser sees
	// (value - Mean)/Std.
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
	// Min and Max are its least and greatest values in the training set.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Cond is one graph's requested condition, a value of a model's Condition
// (WithCondition): the label by name and the properties' values in the
// schema's order, unstandardised. A model with both labels and properties
// needs both. The zero Cond is the null condition: that graph is sampled
// unconditionally.
type Cond struct {
	Label string
	Props []float64
}

// IsZero reports whether c is the null condition.
func (c Cond) IsZero() bool { return c.Label == "" && c.Props == nil }

// tolerance returns the tolerance in units of a property's Std.
func (s *Condition) tolerance() float64 {
	if s.Tolerance == 0 {
		return DefaultTolerance
	}
	return s.Tolerance
}

// Validate reports whether s is a usable schema: at least a label or a
// property; names that are not empty, unique and free of ',' and '='
// (Parse's separators), "label" and "prop" not among the property names;
// finite statistics with Std > 0 and Min <= Max; a finite Tolerance >= 0.
func (s *Condition) Validate() error {
	if s == nil || len(s.Labels) == 0 && len(s.Properties) == 0 {
		return errors.New("flow: a condition needs a label or a property")
	}
	name := func(kind, n string) error {
		if n == "" || strings.ContainsAny(n, ",=") || strings.TrimSpace(n) != n {
			return fmt.Errorf("flow: %s name %q: empty, or with ',', '=' or surrounding spaces", kind, n)
		}
		return nil
	}
	for i, l := range s.Labels {
		if err := name("label", l); err != nil {
			return err
		}
		if slices.Index(s.Labels, l) != i {
			return fmt.Errorf("flow: label %q given twice", l)
		}
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for i, p := range s.Properties {
		if err := name("property", p.Name); err != nil {
			return err
		}
		switch {
		case p.Name == "label" || p.Name == "prop":
			return fmt.Errorf("flow: %q is reserved, not a property name", p.Name)
		case slices.IndexFunc(s.Properties, func(q Property) bool { return q.Name == p.Name }) != i:
			return fmt.Errorf("flow: property %q given twice", p.Name)
		case !finite(p.Mean) || !finite(p.Std) || !(p.Std > 0) || !finite(p.Min) || !finite(p.Max) || p.Min > p.Max:
			return fmt.Errorf("flow: property %q: mean %g, std %g, range [%g, %g]", p.Name, p.Mean, p.Std, p.Min, p.Max)
		}
	}
	if !(s.Tolerance >= 0) || math.IsInf(s.Tolerance, 0) {
		return fmt.Errorf("flow: condition tolerance must be finite and >= 0, got %g", s.Tolerance)
	}
	return nil
}

// PropertyNames returns the names of the properties in the vector's
// order.
func (s *Condition) PropertyNames() []string {
	names := make([]string, len(s.Properties))
	for i, p := range s.Properties {
		names[i] = p.Name
	}
	return names
}

// Range returns the values property i may take in a requested condition:
// its trained range widened by the tolerance on either side.
func (s *Condition) Range(i int) (lo, hi float64) {
	p := s.Properties[i]
	w := s.tolerance() * p.Std
	return p.Min - w, p.Max + w
}

// Describe says what s conditions on, for messages: the labels and the
// properties with their ranges.
func (s *Condition) Describe() string {
	var parts []string
	if len(s.Labels) > 0 {
		parts = append(parts, "label ("+strings.Join(s.Labels, ", ")+")")
	}
	for _, p := range s.Properties {
		parts = append(parts, fmt.Sprintf("%s (trained on [%g, %g])", p.Name, p.Min, p.Max))
	}
	return strings.Join(parts, ", ")
}

// Format writes c as Parse reads it: "label=NAME,PROPERTY=VALUE,...", or
// "null" for the null condition.
func (s *Condition) Format(c Cond) string {
	if c.IsZero() {
		return "null"
	}
	var parts []string
	if c.Label != "" {
		parts = append(parts, "label="+c.Label)
	}
	for i, v := range c.Props {
		name := fmt.Sprintf("p%d", i)
		if i < len(s.Properties) {
			name = s.Properties[i].Name
		}
		parts = append(parts, name+"="+strconv.FormatFloat(v, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// Equal reports whether s and o describe the same conditions: the same
// labels, properties with their standardisation and ranges, and
// tolerance (nil: none, equal only to nil).
func (s *Condition) Equal(o *Condition) bool { return s.equal(o) }

// equal reports whether s and o describe the same condition (nil for
// none).
func (s *Condition) equal(o *Condition) bool {
	if s == nil || o == nil {
		return s == o
	}
	return slices.Equal(s.Labels, o.Labels) && slices.Equal(s.Properties, o.Properties) && s.tolerance() == o.tolerance()
}

// Parse reads a condition written as comma-separated key=value pairs:
// label=NAME for the label and NAME=VALUE for each property (prop=VALUE
// when the schema has a single property), as in "label=tree" or
// "label=planar,edges=170,triangles=100". Every part of the schema must be
// given, as Sample requires; "null" is the null condition.
func (s *Condition) Parse(text string) (Cond, error) {
	if s == nil {
		return Cond{}, errors.New("flow: the model is unconditional: it takes no condition")
	}
	if strings.TrimSpace(text) == "null" {
		return Cond{}, nil
	}
	var c Cond
	seen := map[int]bool{}
	for _, part := range strings.Split(text, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" || val == "" {
			return Cond{}, fmt.Errorf("flow: condition %q: %q is not key=value (label=NAME or PROPERTY=VALUE)", text, part)
		}
		if key == "label" {
			if c.Label != "" {
				return Cond{}, fmt.Errorf("flow: condition %q: two labels", text)
			}
			c.Label = val
			continue
		}
		i := slices.Index(s.PropertyNames(), key)
		if key == "prop" && len(s.Properties) == 1 {
			i = 0
		}
		if i < 0 {
			return Cond{}, fmt.Errorf("flow: condition %q: unknown key %q (the model conditions on %s)", text, key, s.Describe())
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return Cond{}, fmt.Errorf("flow: condition %q: %s=%q is not a number", text, key, val)
		}
		if seen[i] {
			return Cond{}, fmt.Errorf("flow: condition %q: property %s given twice", text, s.Properties[i].Name)
		}
		seen[i] = true
		if c.Props == nil {
			c.Props = make([]float64, len(s.Properties))
		}
		c.Props[i] = v
	}
	if c.Props != nil && len(seen) != len(s.Properties) {
		var missing []string
		for i, p := range s.Properties {
			if !seen[i] {
				missing = append(missing, p.Name)
			}
		}
		return Cond{}, fmt.Errorf("flow: condition %q lacks the properties %s", text, strings.Join(missing, ", "))
	}
	return c, s.check(c)
}

// check reports why c is not a condition of s: a part of the schema
// missing or one it lacks, an unknown label, a property vector of another
// length, a value not finite or outside the trained range by more than
// the tolerance. The null condition is one.
func (s *Condition) check(c Cond) error {
	if c.IsZero() {
		return nil
	}
	switch {
	case c.Label != "" && len(s.Labels) == 0:
		return fmt.Errorf("flow: label %q given to a model without labels (it conditions on %s)", c.Label, s.Describe())
	case c.Label == "" && len(s.Labels) > 0:
		return fmt.Errorf("flow: the condition has no label; the model conditions on %s and needs every part", s.Describe())
	case c.Label != "" && !slices.Contains(s.Labels, c.Label):
		return fmt.Errorf("flow: unknown label %q (the model's labels: %s)", c.Label, strings.Join(s.Labels, ", "))
	case c.Props == nil && len(s.Properties) > 0:
		return fmt.Errorf("flow: the condition has no properties; the model conditions on %s and needs every part", s.Describe())
	case len(c.Props) != len(s.Properties):
		return fmt.Errorf("flow: %d property values for a model with %d properties (%s)", len(c.Props), len(s.Properties), strings.Join(s.PropertyNames(), ", "))
	}
	for i, v := range c.Props {
		lo, hi := s.Range(i)
		p := s.Properties[i]
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("flow: property %s = %g is not a finite number", p.Name, v)
		case v < lo || v > hi:
			return fmt.Errorf("flow: property %s = %g is outside the range the model was trained on, [%g, %g], by more than %g standard deviations (%g): allowed [%g, %g]",
				p.Name, v, p.Min, p.Max, s.tolerance(), p.Std, lo, hi)
		}
	}
	return nil
}

// standardize appends the standardised properties of vals to dst.
func (s *Condition) standardize(dst, vals []float64) []float64 {
	for i, p := range s.Properties {
		dst = append(dst, (vals[i]-p.Mean)/p.Std)
	}
	return dst
}

// Conditions are the conditions of a training set, one per graph
// (Latents.Cond): label indices into Schema.Labels and the properties'
// raw values, in Schema's order. NewConditions builds them.
type Conditions struct {
	Schema *Condition
	// Labels holds each graph's label index (nil without labels).
	Labels []int
	// Props holds each graph's property values (nil without properties).
	Props [][]float64
}

// NewConditions returns the conditions of a training set of graphs and
// their schema: labels holds each graph's label name (nil: no labels;
// the schema's labels are the distinct names, sorted), names the property
// names and props each graph's values in names' order (nil: no
// properties). The properties' standardisation and ranges are those of
// the values given. Every graph needs its label and all its values.
func NewConditions(labels []string, names []string, props [][]float64) (*Conditions, error) {
	s := &Condition{}
	c := &Conditions{Schema: s}
	n := -1
	if labels != nil {
		n = len(labels)
		s.Labels = slices.Clone(labels)
		slices.Sort(s.Labels)
		s.Labels = slices.Compact(s.Labels)
		c.Labels = make([]int, len(labels))
		for i, l := range labels {
			if l == "" {
				return nil, fmt.Errorf("flow: graph %d has no label", i)
			}
			c.Labels[i], _ = slices.BinarySearch(s.Labels, l)
		}
	}
	if len(names) > 0 || props != nil {
		if n >= 0 && len(props) != n {
			return nil, fmt.Errorf("flow: %d labels and %d property vectors", n, len(props))
		}
		n = len(props)
		if n == 0 {
			return nil, errors.New("flow: no property values")
		}
		for i, row := range props {
			if len(row) != len(names) {
				return nil, fmt.Errorf("flow: graph %d has %d property values for %d properties", i, len(row), len(names))
			}
			for j, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("flow: graph %d: property %s = %g is not a finite number", i, names[j], v)
				}
			}
		}
		for j, name := range names {
			p := Property{Name: name, Min: math.Inf(1), Max: math.Inf(-1)}
			var sum, sq float64
			for _, row := range props {
				v := row[j]
				sum += v
				p.Min, p.Max = min(p.Min, v), max(p.Max, v)
			}
			p.Mean = sum / float64(n)
			for _, row := range props {
				sq += (row[j] - p.Mean) * (row[j] - p.Mean)
			}
			p.Std = math.Sqrt(sq / float64(n))
			if !(p.Std > 1e-12*max(1, math.Abs(p.Mean))) {
				p.Std = 1 // a constant property
			}
			s.Properties = append(s.Properties, p)
		}
		c.Props = make([][]float64, n)
		for i, row := range props {
			c.Props[i] = slices.Clone(row)
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Len returns the number of graphs c describes.
func (c *Conditions) Len() int {
	if c.Labels != nil {
		return len(c.Labels)
	}
	return len(c.Props)
}

// check reports whether c is a valid set of conditions for n graphs.
func (c *Conditions) check(n int) error {
	if err := c.Schema.Validate(); err != nil {
		return err
	}
	s := c.Schema
	switch {
	case (len(s.Labels) > 0) != (c.Labels != nil):
		return fmt.Errorf("flow: the schema has %d labels and the conditions %d graphs' labels", len(s.Labels), len(c.Labels))
	case (len(s.Properties) > 0) != (c.Props != nil):
		return fmt.Errorf("flow: the schema has %d properties and the conditions %d graphs' values", len(s.Properties), len(c.Props))
	case c.Labels != nil && len(c.Labels) != n || c.Props != nil && len(c.Props) != n:
		return fmt.Errorf("flow: conditions for %d graphs, %d training graphs", c.Len(), n)
	}
	for i, l := range c.Labels {
		if l < 0 || l >= len(s.Labels) {
			return fmt.Errorf("flow: graph %d has label index %d, outside [0, %d)", i, l, len(s.Labels))
		}
	}
	for i, row := range c.Props {
		if len(row) != len(s.Properties) {
			return fmt.Errorf("flow: graph %d has %d property values for %d properties", i, len(row), len(s.Properties))
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("flow: graph %d: property %s = %g is not a finite number", i, s.Properties[j].Name, v)
			}
		}
	}
	return nil
}

// batch returns the denoiser's condition of the training graphs idx, each
// dropped (the null condition) with probability drop, drawn from r in
// order (one uniform draw per graph).
func (c *Conditions) batch(idx []int, drop float64, r *tensor.RNG) *dit.Cond {
	B := len(idx)
	dc := &dit.Cond{}
	if c.Labels != nil {
		dc.Class = make([]int, B)
	}
	if c.Props != nil {
		dc.Vec = make([]float64, 0, B*len(c.Schema.Properties))
		dc.Drop = make([]bool, B)
	}
	for b, i := range idx {
		dropped := r.Uniform() < drop
		if dc.Class != nil {
			dc.Class[b] = c.Labels[i]
			if dropped {
				dc.Class[b] = -1
			}
		}
		if dc.Vec != nil {
			dc.Vec = c.Schema.standardize(dc.Vec, c.Props[i])
			dc.Drop[b] = dropped
		}
	}
	return dc
}

// ForCondition returns c configured for conditions of schema s: the
// denoiser's Classes and CondDim set to s's numbers of labels and
// properties (nil s: an unconditional denoiser).
func (c Config) ForCondition(s *Condition) Config {
	c.DiT.Classes, c.DiT.CondDim = 0, 0
	if s != nil {
		c.DiT.Classes, c.DiT.CondDim = len(s.Labels), len(s.Properties)
	}
	return c
}

// checkSchema reports whether schema s fits the denoiser configuration d:
// none for an unconditional one, else as many labels as classes and
// properties as vector values.
func checkSchema(s *Condition, d dit.Config) error {
	if s == nil {
		if d.Conditional() {
			return fmt.Errorf("a denoiser conditioned on %d classes and %d values without a condition schema", d.Classes, d.CondDim)
		}
		return nil
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if len(s.Labels) != d.Classes || len(s.Properties) != d.CondDim {
		return fmt.Errorf("a condition of %d labels and %d properties for a denoiser of %d classes and %d values (Config.ForCondition sets them)",
			len(s.Labels), len(s.Properties), d.Classes, d.CondDim)
	}
	return nil
}

// Cond returns c's condition of graph i, as WithCondition takes it.
func (c *Conditions) Cond(i int) Cond {
	var g Cond
	if c.Labels != nil {
		g.Label = c.Schema.Labels[c.Labels[i]]
	}
	if c.Props != nil {
		g.Props = slices.Clone(c.Props[i])
	}
	return g
}

// guidance is the classifier-free guidance of one batch (sample): each
// graph's condition for the denoiser (nil: unconditional sampling, one
// evaluation of the null condition per step) and the guidance scale w.
// both is cond followed by the null condition of every graph, for the two
// evaluations of a step batched in one pass (w not 0 or 1).
type guidance struct {
	cond, both *dit.Cond
	w          float64
}

// condPlan holds the denoiser's condition of every graph of a Sample call
// (nil: none).
type condPlan struct {
	class []int
	vec   []float64
	drop  []bool
	dim   int
	w     float64
}

// planConditions checks the conditions and guidance scale of a Sample of
// n graphs from m and encodes them for the denoiser: no condition samples
// unconditionally (the null condition of a conditional model, whatever
// w); one condition applies to every graph, or there is one per graph.
func planConditions(m *Model, conds []Cond, n int, w float64) (*condPlan, error) {
	if err := checkSchema(m.Cond, m.Net.Cfg); err != nil {
		return nil, fmt.Errorf("flow: the model's condition: %w", err)
	}
	switch {
	case !(w >= 0) || math.IsInf(w, 0):
		return nil, fmt.Errorf("flow: guidance scale must be finite and >= 0, got %g", w)
	case m.Cond == nil && len(conds) > 0:
		return nil, errors.New("flow: the model is unconditional: it takes no condition (WithCondition)")
	case m.Cond == nil && w != 1:
		return nil, fmt.Errorf("flow: the model is unconditional: a guidance scale (%g) needs a model trained with conditions", w)
	case len(conds) == 0:
		return nil, nil
	case len(conds) != 1 && len(conds) != n:
		return nil, fmt.Errorf("flow: %d conditions for %d graphs (want one for all, or one per graph)", len(conds), n)
	}
	s := m.Cond
	p := &condPlan{dim: len(s.Properties), w: w}
	for i, c := range conds {
		if err := s.check(c); err != nil {
			if len(conds) > 1 {
				return nil, fmt.Errorf("%w (graph %d)", err, i)
			}
			return nil, err
		}
	}
	if len(s.Labels) > 0 {
		p.class = make([]int, n)
	}
	if p.dim > 0 {
		p.vec = make([]float64, 0, n*p.dim)
		p.drop = make([]bool, n)
	}
	for i := range n {
		c := conds[min(i, len(conds)-1)]
		if p.class != nil {
			p.class[i] = slices.Index(s.Labels, c.Label) // -1 for the null condition
		}
		if p.dim > 0 {
			if c.IsZero() {
				p.vec = append(p.vec, make([]float64, p.dim)...)
				p.drop[i] = true
			} else {
				p.vec = s.standardize(p.vec, c.Props)
			}
		}
	}
	return p, nil
}

// batch returns the guidance of the graphs lo..hi-1.
func (p *condPlan) batch(lo, hi int) guidance {
	if p == nil || p.w == 0 {
		return guidance{} // unconditional
	}
	B := hi - lo
	c := &dit.Cond{}
	both := &dit.Cond{}
	if p.class != nil {
		c.Class = p.class[lo:hi]
		both.Class = append(slices.Clone(c.Class), slices.Repeat([]int{-1}, B)...)
	}
	if p.dim > 0 {
		c.Vec, c.Drop = p.vec[lo*p.dim:hi*p.dim], p.drop[lo:hi]
		both.Vec = append(slices.Clone(c.Vec), make([]float64, B*p.dim)...)
		both.Drop = append(slices.Clone(c.Drop), slices.Repeat([]bool{true}, B)...)
	}
	return guidance{cond: c, both: both, w: p.w}
}
