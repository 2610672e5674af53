// Package cond describes the conditions of a conditional flow: the
// schema of a model's labels and real-valued properties (Schema), one
// graph's condition (Value) and the conditions of a training set (Set).
//
// A training set's conditions give the schema (NewSet): the distinct
// labels, and each property's mean and standard deviation, by which the
// denoiser sees it standardised, and its range, outside of which (by more
// than the tolerance) a requested value is refused. Schema.Parse reads a
// condition as the command line gives it, "label=tree,edges=120".
package cond

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultTolerance is the Schema.Tolerance that a zero value stands for: a
// requested property may lie up to half its standard deviation outside the
// range of the training set.
const DefaultTolerance = 0.5

// Schema is the schema of a conditional flow's conditions: a label out
// of Labels, a vector of named real-valued properties, or both, each graph
// of the training set having one. The denoiser sees the label as a class
// index (dit.Config.Classes) and the properties standardised,
// (value - Mean)/Std (dit.Config.CondDim). A conditional flow.Model holds
// its schema (Model.Cond) and its checkpoint stores it as JSON (metadata
// key "condition"); NewSet builds it from a training set.
type Schema struct {
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

// Property is one real-valued property of a Schema with its
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

// Value is one graph's condition, a value of a Schema (flow.WithCondition
// requests it): the label by name and the properties' values in the
// schema's order, unstandardised. A schema with both labels and properties
// needs both. The zero Value is the null condition: that graph is sampled
// unconditionally.
type Value struct {
	Label string
	Props []float64
}

// IsZero reports whether c is the null condition.
func (c Value) IsZero() bool { return c.Label == "" && c.Props == nil }

// tolerance returns the tolerance in units of a property's Std.
func (s *Schema) tolerance() float64 {
	if s.Tolerance == 0 {
		return DefaultTolerance
	}
	return s.Tolerance
}

// Validate reports whether s is a usable schema: at least a label or a
// property; names that are not empty, unique and free of ',' and '='
// (Parse's separators), "label" and "prop" not among the property names;
// finite statistics with Std > 0 and Min <= Max; a finite Tolerance >= 0.
func (s *Schema) Validate() error {
	if s == nil || len(s.Labels) == 0 && len(s.Properties) == 0 {
		return errors.New("cond: a condition needs a label or a property")
	}
	name := func(kind, n string) error {
		if n == "" || strings.ContainsAny(n, ",=") || strings.TrimSpace(n) != n {
			return fmt.Errorf("cond: %s name %q: empty, or with ',', '=' or surrounding spaces", kind, n)
		}
		return nil
	}
	for i, l := range s.Labels {
		if err := name("label", l); err != nil {
			return err
		}
		if slices.Index(s.Labels, l) != i {
			return fmt.Errorf("cond: label %q given twice", l)
		}
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for i, p := range s.Properties {
		if err := name("property", p.Name); err != nil {
			return err
		}
		switch {
		case p.Name == "label" || p.Name == "prop":
			return fmt.Errorf("cond: %q is reserved, not a property name", p.Name)
		case slices.IndexFunc(s.Properties, func(q Property) bool { return q.Name == p.Name }) != i:
			return fmt.Errorf("cond: property %q given twice", p.Name)
		case !finite(p.Mean) || !finite(p.Std) || !(p.Std > 0) || !finite(p.Min) || !finite(p.Max) || p.Min > p.Max:
			return fmt.Errorf("cond: property %q: mean %g, std %g, range [%g, %g]", p.Name, p.Mean, p.Std, p.Min, p.Max)
		}
	}
	if !(s.Tolerance >= 0) || math.IsInf(s.Tolerance, 0) {
		return fmt.Errorf("cond: condition tolerance must be finite and >= 0, got %g", s.Tolerance)
	}
	return nil
}

// PropertyNames returns the names of the properties in the vector's
// order.
func (s *Schema) PropertyNames() []string {
	names := make([]string, len(s.Properties))
	for i, p := range s.Properties {
		names[i] = p.Name
	}
	return names
}

// Range returns the values property i may take in a requested condition:
// its trained range widened by the tolerance on either side.
func (s *Schema) Range(i int) (lo, hi float64) {
	p := s.Properties[i]
	w := s.tolerance() * p.Std
	return p.Min - w, p.Max + w
}

// Describe says what s conditions on, for messages: the labels and the
// properties with their ranges.
func (s *Schema) Describe() string {
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
func (s *Schema) Format(c Value) string {
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
func (s *Schema) Equal(o *Schema) bool { return s.equal(o) }

// equal reports whether s and o describe the same condition (nil for
// none).
func (s *Schema) equal(o *Schema) bool {
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
func (s *Schema) Parse(text string) (Value, error) {
	if s == nil {
		return Value{}, errors.New("cond: the model is unconditional: it takes no condition")
	}
	if strings.TrimSpace(text) == "null" {
		return Value{}, nil
	}
	var c Value
	seen := map[int]bool{}
	for _, part := range strings.Split(text, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" || val == "" {
			return Value{}, fmt.Errorf("cond: condition %q: %q is not key=value (label=NAME or PROPERTY=VALUE)", text, part)
		}
		if key == "label" {
			if c.Label != "" {
				return Value{}, fmt.Errorf("cond: condition %q: two labels", text)
			}
			c.Label = val
			continue
		}
		i := slices.Index(s.PropertyNames(), key)
		if key == "prop" && len(s.Properties) == 1 {
			i = 0
		}
		if i < 0 {
			return Value{}, fmt.Errorf("cond: condition %q: unknown key %q (the model conditions on %s)", text, key, s.Describe())
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return Value{}, fmt.Errorf("cond: condition %q: %s=%q is not a number", text, key, val)
		}
		if seen[i] {
			return Value{}, fmt.Errorf("cond: condition %q: property %s given twice", text, s.Properties[i].Name)
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
		return Value{}, fmt.Errorf("cond: condition %q lacks the properties %s", text, strings.Join(missing, ", "))
	}
	return c, s.Check(c)
}

// Check reports why c is not a condition of s: a part of the schema
// missing or one it lacks, an unknown label, a property vector of another
// length, a value not finite or outside the trained range by more than
// the tolerance. The null condition is one.
func (s *Schema) Check(c Value) error {
	if c.IsZero() {
		return nil
	}
	switch {
	case c.Label != "" && len(s.Labels) == 0:
		return fmt.Errorf("cond: label %q given to a model without labels (it conditions on %s)", c.Label, s.Describe())
	case c.Label == "" && len(s.Labels) > 0:
		return fmt.Errorf("cond: the condition has no label; the model conditions on %s and needs every part", s.Describe())
	case c.Label != "" && !slices.Contains(s.Labels, c.Label):
		return fmt.Errorf("cond: unknown label %q (the model's labels: %s)", c.Label, strings.Join(s.Labels, ", "))
	case c.Props == nil && len(s.Properties) > 0:
		return fmt.Errorf("cond: the condition has no properties; the model conditions on %s and needs every part", s.Describe())
	case len(c.Props) != len(s.Properties):
		return fmt.Errorf("cond: %d property values for a model with %d properties (%s)", len(c.Props), len(s.Properties), strings.Join(s.PropertyNames(), ", "))
	}
	for i, v := range c.Props {
		lo, hi := s.Range(i)
		p := s.Properties[i]
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("cond: property %s = %g is not a finite number", p.Name, v)
		case v < lo || v > hi:
			return fmt.Errorf("cond: property %s = %g is outside the range the model was trained on, [%g, %g], by more than %g standard deviations (%g): allowed [%g, %g]",
				p.Name, v, p.Min, p.Max, s.tolerance(), p.Std, lo, hi)
		}
	}
	return nil
}

// Standardize appends the standardised properties of vals to dst.
func (s *Schema) Standardize(dst, vals []float64) []float64 {
	for i, p := range s.Properties {
		dst = append(dst, (vals[i]-p.Mean)/p.Std)
	}
	return dst
}

// Set holds the conditions of a training set, one per graph
// (flow.Latents.Cond): label indices into Schema.Labels and the
// properties' raw values, in Schema's order. NewSet builds it.
type Set struct {
	Schema *Schema
	// Labels holds each graph's label index (nil without labels).
	Labels []int
	// Props holds each graph's property values (nil without properties).
	Props [][]float64
}

// NewSet returns the conditions of a training set of graphs and
// their schema: labels holds each graph's label name (nil: no labels;
// the schema's labels are the distinct names, sorted), names the property
// names and props each graph's values in names' order (nil: no
// properties). The properties' standardisation and ranges are those of
// the values given. Every graph needs its label and all its values.
func NewSet(labels []string, names []string, props [][]float64) (*Set, error) {
	s := &Schema{}
	c := &Set{Schema: s}
	n := -1
	if labels != nil {
		n = len(labels)
		s.Labels = slices.Clone(labels)
		slices.Sort(s.Labels)
		s.Labels = slices.Compact(s.Labels)
		c.Labels = make([]int, len(labels))
		for i, l := range labels {
			if l == "" {
				return nil, fmt.Errorf("cond: graph %d has no label", i)
			}
			c.Labels[i], _ = slices.BinarySearch(s.Labels, l)
		}
	}
	if len(names) > 0 || props != nil {
		if n >= 0 && len(props) != n {
			return nil, fmt.Errorf("cond: %d labels and %d property vectors", n, len(props))
		}
		n = len(props)
		if n == 0 {
			return nil, errors.New("cond: no property values")
		}
		for i, row := range props {
			if len(row) != len(names) {
				return nil, fmt.Errorf("cond: graph %d has %d property values for %d properties", i, len(row), len(names))
			}
			for j, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("cond: graph %d: property %s = %g is not a finite number", i, names[j], v)
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
func (c *Set) Len() int {
	if c.Labels != nil {
		return len(c.Labels)
	}
	return len(c.Props)
}

// Check reports whether c is a valid set of conditions for n graphs.
func (c *Set) Check(n int) error {
	if err := c.Schema.Validate(); err != nil {
		return err
	}
	s := c.Schema
	switch {
	case (len(s.Labels) > 0) != (c.Labels != nil):
		return fmt.Errorf("cond: the schema has %d labels and the conditions %d graphs' labels", len(s.Labels), len(c.Labels))
	case (len(s.Properties) > 0) != (c.Props != nil):
		return fmt.Errorf("cond: the schema has %d properties and the conditions %d graphs' values", len(s.Properties), len(c.Props))
	case c.Labels != nil && len(c.Labels) != n || c.Props != nil && len(c.Props) != n:
		return fmt.Errorf("cond: conditions for %d graphs, %d training graphs", c.Len(), n)
	}
	for i, l := range c.Labels {
		if l < 0 || l >= len(s.Labels) {
			return fmt.Errorf("cond: graph %d has label index %d, outside [0, %d)", i, l, len(s.Labels))
		}
	}
	for i, row := range c.Props {
		if len(row) != len(s.Properties) {
			return fmt.Errorf("cond: graph %d has %d property values for %d properties", i, len(row), len(s.Properties))
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("cond: graph %d: property %s = %g is not a finite number", i, s.Properties[j].Name, v)
			}
		}
	}
	return nil
}

// Value returns c's condition of graph i, as flow.WithCondition takes it.
func (c *Set) Value(i int) Value {
	var g Value
	if c.Labels != nil {
		g.Label = c.Schema.Labels[c.Labels[i]]
	}
	if c.Props != nil {
		g.Props = slices.Clone(c.Props[i])
	}
	return g
}
