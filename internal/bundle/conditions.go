package bundle

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/metrics"
)

// ConditionTable holds the conditions of a set of graphs as the data
// gives them, one row per graph, before a training set's
// standardisation (cond.NewSet, Conditions): a label, named
// real-valued properties, or both. ReadConditions reads it from a side
// file, NodeLinkConditions from node-link JSON's graph attributes,
// PropertyConditions computes built-in properties; Merge joins them.
type ConditionTable struct {
	// Labels holds each graph's label (nil: no label).
	Labels []string
	// Names are the properties' names, Values each graph's values in
	// Names' order (nil: no properties).
	Names  []string
	Values [][]float64
}

// Len returns the number of graphs t describes.
func (t *ConditionTable) Len() int {
	if t.Labels != nil {
		return len(t.Labels)
	}
	return len(t.Values)
}

// Describe says what t conditions on: "label (planar, tree)", the
// property names.
func (t *ConditionTable) Describe() string {
	var parts []string
	if t.Labels != nil {
		names := slices.Clone(t.Labels)
		slices.Sort(names)
		parts = append(parts, "label ("+strings.Join(slices.Compact(names), ", ")+")")
	}
	return strings.Join(append(parts, t.Names...), ", ")
}

// Subset returns the rows idx of t, in idx's order.
func (t *ConditionTable) Subset(idx []int) *ConditionTable {
	out := &ConditionTable{Names: slices.Clone(t.Names)}
	if t.Labels != nil {
		out.Labels = make([]string, len(idx))
		for k, i := range idx {
			out.Labels[k] = t.Labels[i]
		}
	}
	if t.Values != nil {
		out.Values = make([][]float64, len(idx))
		for k, i := range idx {
			out.Values[k] = slices.Clone(t.Values[i])
		}
	}
	return out
}

// Merge returns the table of t's and o's conditions of the same graphs
// side by side: t's label or o's (not both), t's properties then o's
// (names may not repeat). A nil table is none.
func (t *ConditionTable) Merge(o *ConditionTable) (*ConditionTable, error) {
	switch {
	case t == nil:
		return o, nil
	case o == nil:
		return t, nil
	case t.Len() != o.Len():
		return nil, fmt.Errorf("bundle: conditions of %d and of %d graphs", t.Len(), o.Len())
	case t.Labels != nil && o.Labels != nil:
		return nil, errors.New("bundle: two sources of labels (a graph has one label)")
	}
	for _, name := range o.Names {
		if slices.Contains(t.Names, name) {
			return nil, fmt.Errorf("bundle: the property %s given twice", name)
		}
	}
	out := &ConditionTable{Labels: t.Labels, Names: slices.Concat(t.Names, o.Names)}
	if out.Labels == nil {
		out.Labels = o.Labels
	}
	switch {
	case t.Values == nil:
		out.Values = o.Values
	case o.Values == nil:
		out.Values = t.Values
	default:
		out.Values = make([][]float64, len(t.Values))
		for i := range t.Values {
			out.Values[i] = slices.Concat(t.Values[i], o.Values[i])
		}
	}
	return out, nil
}

// Conditions returns the training conditions of t's graphs and their
// schema (cond.NewSet: the properties standardised by t's
// values).
func (t *ConditionTable) Conditions() (*cond.Set, error) {
	var props [][]float64
	if len(t.Names) > 0 {
		props = t.Values
	}
	return cond.NewSet(t.Labels, t.Names, props)
}

// ReadConditions reads a condition file: one line per graph, in the
// order of the graphs, each either a label (one word: no spaces, commas
// or '='), as in
//
//	tree
//	planar
//
// or comma-separated name=value pairs, label=NAME for the label and
// NAME=NUMBER for each property, as in
//
//	label=tree,edges=63
//	label=planar,edges=170
//
// Every line gives the same keys (in any order). Blank lines and lines
// that begin with '#' are skipped. Errors name the line: a label of more
// than one word, a pair without '=', a value that is no number or is not
// finite, a key given twice, keys other than the first line's.
func ReadConditions(r io.Reader) (*ConditionTable, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	t := &ConditionTable{}
	var keys []string // the first line's keys, "label" among them
	keysLine := 0
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		label, vals, lineKeys, err := parseConditionLine(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if keys == nil {
			keys, keysLine = lineKeys, line
			for _, k := range keys {
				if k != "label" {
					t.Names = append(t.Names, k)
				}
			}
			if slices.Contains(keys, "label") {
				t.Labels = []string{}
			}
			if len(t.Names) > 0 {
				t.Values = [][]float64{}
			}
		} else if !sameKeys(keys, lineKeys) {
			return nil, fmt.Errorf("line %d gives %s, line %d gave %s: every line needs the same keys", line, describeKeys(lineKeys), keysLine, describeKeys(keys))
		}
		if t.Labels != nil {
			t.Labels = append(t.Labels, label)
		}
		if t.Values != nil {
			row := make([]float64, len(t.Names))
			for j, name := range t.Names {
				row[j] = vals[name]
			}
			t.Values = append(t.Values, row)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if keys == nil {
		return nil, errors.New("no conditions (an empty file, or blank lines and comments only)")
	}
	return t, nil
}

// parseConditionLine reads one line of a condition file: its label, its
// property values by name, and its keys in the line's order ("label" for
// the label).
func parseConditionLine(text string) (label string, vals map[string]float64, keys []string, err error) {
	if !strings.Contains(text, "=") {
		if strings.ContainsAny(text, ", \t") {
			return "", nil, nil, fmt.Errorf("%q is neither a label (one word, without spaces or commas) nor name=value pairs separated by commas", text)
		}
		return text, nil, []string{"label"}, nil
	}
	vals = map[string]float64{}
	for _, part := range strings.Split(text, ",") {
		key, val, ok := strings.Cut(part, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case !ok || key == "" || val == "":
			return "", nil, nil, fmt.Errorf("%q is not name=value (label=NAME or PROPERTY=NUMBER)", strings.TrimSpace(part))
		case slices.Contains(keys, key):
			return "", nil, nil, fmt.Errorf("%s given twice", key)
		case strings.ContainsAny(key, " \t"):
			return "", nil, nil, fmt.Errorf("%q: a name without spaces", key)
		}
		keys = append(keys, key)
		if key == "label" {
			if strings.ContainsAny(val, " \t") {
				return "", nil, nil, fmt.Errorf("label %q: a label is one word, without spaces", val)
			}
			label = val
			continue
		}
		if key == "prop" {
			return "", nil, nil, errors.New(`"prop" is reserved (lgflow sample -cond prop=VALUE), not a property name`)
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return "", nil, nil, fmt.Errorf("%s=%q is not a number", key, val)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", nil, nil, fmt.Errorf("%s=%s is not a finite number", key, val)
		}
		vals[key] = v
	}
	return label, vals, keys, nil
}

func sameKeys(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, k := range b {
		if !slices.Contains(a, k) {
			return false
		}
	}
	return true
}

func describeKeys(keys []string) string {
	if len(keys) == 1 && keys[0] == "label" {
		return "a label"
	}
	return strings.Join(keys, ", ")
}

// ReadConditionFile reads the condition file at path (ReadConditions;
// gzip-compressed for a .gz name) for n graphs: it must have one
// condition for each. Errors name the file and the line.
func ReadConditionFile(path string, n int) (*ConditionTable, error) {
	var t *ConditionTable
	err := readMaybeGzip(path, func(r io.Reader) error {
		var err error
		t, err = ReadConditions(r)
		return err
	})
	if err != nil {
		return nil, err
	}
	if t.Len() != n {
		return nil, fmt.Errorf("%s: %d conditions for %d graphs (one line per graph, in the order of the graphs)", path, t.Len(), n)
	}
	return t, nil
}

// PropertyConditions computes the built-in properties names
// (metrics.BuiltinProperties) of every graph of gs.
func PropertyConditions(gs []*graph.Graph, names []string) (*ConditionTable, error) {
	if len(names) == 0 {
		return nil, errors.New("bundle: no property names")
	}
	for i, name := range names {
		if slices.Index(names, name) != i {
			return nil, fmt.Errorf("bundle: the property %s given twice", name)
		}
	}
	vals, err := metrics.GraphProperties(gs, names...)
	if err != nil {
		return nil, err
	}
	return &ConditionTable{Names: slices.Clone(names), Values: vals}, nil
}

// NodeLinkConditions reads the conditions of the graphs of a node-link
// JSON file (JSON Lines or an array of graphs, as graph.ReadNodeLinks;
// gzip-compressed for a .gz name) from their graph attributes, the
// "graph" object of each graph, under the keys given:
//
//	{"directed": false, "graph": {"label": "tree", "edges": 63}, "nodes": [...], ...}
//
// A key whose values are strings is the label (at most one such key;
// the key "label" is the label also with integer values, read as their
// digits), a key whose values are numbers a property of that name. Every
// graph must have every key, each with a value of the same kind. Errors
// name the file and the graph (0-based, in file order).
func NodeLinkConditions(path string, keys []string) (*ConditionTable, error) {
	if len(keys) == 0 {
		return nil, errors.New("bundle: no graph attribute names")
	}
	var docs []json.RawMessage
	err := readMaybeGzip(path, func(r io.Reader) error {
		var err error
		docs, err = nodeLinkDocs(r)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no graphs", path)
	}
	t := &ConditionTable{}
	isLabel := make([]bool, len(keys))
	labelKey := ""
	for i, key := range keys {
		if slices.Index(keys, key) != i {
			return nil, fmt.Errorf("bundle: the graph attribute %s given twice", key)
		}
	}
	for g, doc := range docs {
		var d struct {
			Graph map[string]json.RawMessage `json:"graph"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			return nil, fmt.Errorf("%s graph %d: %v", path, g, err)
		}
		row := make([]float64, 0, len(keys))
		for k, key := range keys {
			raw, ok := d.Graph[key]
			if !ok {
				return nil, fmt.Errorf("%s graph %d: no graph attribute %q (its \"graph\" object has %s)", path, g, key, attrNames(d.Graph))
			}
			var s string
			var num json.Number
			raw = bytes.TrimSpace(raw)
			str := len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil
			isNum := len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') && json.Unmarshal(raw, &num) == nil
			if g == 0 {
				switch {
				case str || key == "label" && isNum:
					if labelKey != "" {
						return nil, fmt.Errorf("%s: two labels, %q and %q (a graph has one label; properties are numbers)", path, labelKey, key)
					}
					isLabel[k], labelKey = true, key
					t.Labels = []string{}
				case isNum:
					t.Names = append(t.Names, key)
				default:
					return nil, fmt.Errorf("%s graph %d: attribute %q is %s, neither a string (a label) nor a number (a property)", path, g, key, clip(raw))
				}
			}
			switch {
			case isLabel[k] && str:
				if s == "" || strings.ContainsAny(s, ",= \t") {
					return nil, fmt.Errorf("%s graph %d: label %q: a label is one word, without spaces, commas or '='", path, g, s)
				}
				t.Labels = append(t.Labels, s)
			case isLabel[k] && isNum && key == "label":
				if _, err := strconv.Atoi(num.String()); err != nil {
					return nil, fmt.Errorf("%s graph %d: label %s is neither a string nor an integer", path, g, num)
				}
				t.Labels = append(t.Labels, num.String())
			case isLabel[k]:
				return nil, fmt.Errorf("%s graph %d: attribute %q is %s, not a label like graph 0's", path, g, key, clip(raw))
			case !isNum:
				return nil, fmt.Errorf("%s graph %d: attribute %q is %s, not a number like graph 0's", path, g, key, clip(raw))
			default:
				v, err := num.Float64()
				if err != nil || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%s graph %d: attribute %q = %s is not a finite number", path, g, key, num)
				}
				row = append(row, v)
			}
		}
		if len(t.Names) > 0 {
			t.Values = append(t.Values, row)
		}
	}
	return t, nil
}

// nodeLinkDocs splits a node-link file into its documents.
func nodeLinkDocs(r io.Reader) ([]json.RawMessage, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var docs []json.RawMessage
	if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &docs); err != nil {
			return nil, err
		}
		return docs, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("graph %d: %w", len(docs), err)
		}
		docs = append(docs, raw)
	}
}

func attrNames(m map[string]json.RawMessage) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, strconv.Quote(k))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// clip shortens a JSON value for a message.
func clip(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// readMaybeGzip opens path, gzip-decompressed for a .gz name, hands it to
// read, and names the file in read's error.
func readMaybeGzip(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	if err := read(r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Fraction returns the fraction of the graphs gs that test accepts (0
// for none): for graphs sampled under a label, the share a checker of
// that class (ValidityTest's tree, planar, dag, connected, or one's own)
// assigns to it. A nil test accepts every graph.
func Fraction(gs []*graph.Graph, test func(*graph.Graph) bool) float64 {
	switch {
	case len(gs) == 0:
		return 0
	case test == nil:
		return 1
	}
	return float64(len(gs)-countInvalid(gs, test)) / float64(len(gs))
}
