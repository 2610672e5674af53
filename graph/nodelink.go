package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// nodeLink is networkx's node-link layout (node_link_data /
// node_link_graph). networkx >= 3.4 writes the edge list under "edges";
// older versions under "links".
type nodeLink struct {
	Directed   bool                         `json:"directed"`
	Multigraph bool                         `json:"multigraph"`
	Graph      map[string]json.RawMessage   `json:"graph"`
	Nodes      []map[string]json.RawMessage `json:"nodes"`
	Edges      []map[string]json.RawMessage `json:"edges,omitempty"`
	Links      []map[string]json.RawMessage `json:"links,omitempty"`
}

// WriteNodeLink writes g as networkx node-link JSON:
//
//	{"directed": false, "multigraph": false, "graph": {},
//	 "nodes": [{"id": 0}, ...], "edges": [{"source": 0, "target": 1}, ...]}
//
// Node ids are 0..N-1. Node labels (if g.NodeLabels is not nil) are written
// as "label" on every node, and edge labels as "label" on every edge if any
// edge label is non-zero. networkx reads it back with
// nx.node_link_graph(data) (networkx >= 3.4; older versions need
// edges="edges").
func WriteNodeLink(w io.Writer, g *Graph) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"directed": %t, "multigraph": false, "graph": {}, "nodes": [`, g.directed)
	for u := 0; u < g.N(); u++ {
		if u > 0 {
			b.WriteString(", ")
		}
		if g.NodeLabels != nil {
			fmt.Fprintf(&b, `{"label": %d, "id": %d}`, g.NodeLabels[u], u)
		} else {
			fmt.Fprintf(&b, `{"id": %d}`, u)
		}
	}
	b.WriteString(`], "edges": [`)
	labelled := len(g.edgeLabels) > 0
	for i, e := range g.Edges() {
		if i > 0 {
			b.WriteString(", ")
		}
		if labelled {
			fmt.Fprintf(&b, `{"label": %d, "source": %d, "target": %d}`, e.Label, e.From, e.To)
		} else {
			fmt.Fprintf(&b, `{"source": %d, "target": %d}`, e.From, e.To)
		}
	}
	b.WriteString("]}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// ReadNodeLink reads one graph in networkx node-link JSON. Node ids may be
// any JSON values; nodes are numbered 0..N-1 in the order of the "nodes"
// array. Ids are compared as JSON values, the way Python compares what
// json.load returns: strings by their decoded text ("a" and "\u0061" are
// one id), numbers by value (1, 1.0 and 1e0 are one id), arrays element
// by element; true and false are ids of their own. Edges are taken from
// "edges" or, for older files, "links". An integer "label" on nodes
// becomes NodeLabels (0 for nodes without one) and on edges the edge
// label. Malformed JSON is an error giving the byte offset; anything after
// the graph's closing brace other than white space is an error too.
// Multigraphs, self-loops, unknown ids and non-integer labels are errors
// naming the node or edge.
func ReadNodeLink(r io.Reader) (*Graph, error) {
	// Keys are matched exactly, as Python does (encoding/json alone would
	// also take "Directed" for "directed").
	var top map[string]json.RawMessage
	dec := json.NewDecoder(r)
	if err := dec.Decode(&top); err != nil {
		return nil, jsonError(err, dec.InputOffset())
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("node-link JSON: byte %d: data after the graph object", dec.InputOffset())
	}
	if top == nil {
		return nil, errors.New("node-link JSON: the document is null, not a graph object")
	}
	var d nodeLink
	for _, f := range []struct {
		key, want string
		dst       any
	}{
		{"directed", "true or false", &d.Directed},
		{"multigraph", "true or false", &d.Multigraph},
		{"nodes", "a list of objects", &d.Nodes},
		{"edges", "a list of objects", &d.Edges},
		{"links", "a list of objects", &d.Links},
	} {
		if raw, ok := top[f.key]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return nil, fmt.Errorf("node-link JSON: %q is %s, want %s", f.key, clip(raw), f.want)
			}
		}
	}
	if d.Multigraph {
		return nil, errors.New("node-link JSON: multigraphs are not supported")
	}
	edges := d.Edges
	if edges == nil {
		edges = d.Links
	}
	n := len(d.Nodes)
	index := make(map[string]int, n)
	var labels []int
	for i, nd := range d.Nodes {
		id, ok := nd["id"]
		if !ok {
			return nil, fmt.Errorf("node-link JSON: nodes[%d] has no \"id\"", i)
		}
		k, err := idKey(id)
		if err != nil {
			return nil, fmt.Errorf("node-link JSON: nodes[%d]: id %s: %w", i, id, err)
		}
		if j, dup := index[k]; dup {
			return nil, fmt.Errorf("node-link JSON: nodes[%d]: duplicate id %s (nodes[%d] has it)", i, id, j)
		}
		index[k] = i
		if raw, ok := nd["label"]; ok {
			var l int
			if err := json.Unmarshal(raw, &l); err != nil {
				return nil, fmt.Errorf("node-link JSON: nodes[%d] (id %s): label %s is not an integer", i, id, raw)
			}
			if labels == nil {
				labels = make([]int, n)
			}
			labels[i] = l
		}
	}
	es := make([]Edge, len(edges))
	for i, e := range edges {
		var ends [2]int
		for j, name := range [2]string{"source", "target"} {
			raw, ok := e[name]
			if !ok {
				return nil, fmt.Errorf("node-link JSON: edges[%d] has no %q", i, name)
			}
			k, err := idKey(raw)
			if err != nil {
				return nil, fmt.Errorf("node-link JSON: edges[%d]: %s %s: %w", i, name, raw, err)
			}
			u, ok := index[k]
			if !ok {
				return nil, fmt.Errorf("node-link JSON: edges[%d]: %s %s is not a node id", i, name, raw)
			}
			ends[j] = u
		}
		if ends[0] == ends[1] {
			return nil, fmt.Errorf("node-link JSON: edges[%d]: graph: self-loop at node %d (id %s)", i, ends[0], e["source"])
		}
		label := 0
		if raw, ok := e["label"]; ok {
			if err := json.Unmarshal(raw, &label); err != nil {
				return nil, fmt.Errorf("node-link JSON: edges[%d]: label %s is not an integer", i, raw)
			}
		}
		es[i] = Edge{From: ends[0], To: ends[1], Label: label}
	}
	g, err := FromEdges(n, d.Directed, es)
	if err != nil { // unreachable: every edge was checked above
		return nil, fmt.Errorf("node-link JSON: %w", err)
	}
	g.NodeLabels = labels
	return g, nil
}

// jsonError turns a decoding error into one that says where: the byte
// offset of a syntax error, or the offset and field of a value of the
// wrong type.
func jsonError(err error, offset int64) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("node-link JSON: byte %d: %w", se.Offset, err)
	case errors.As(err, &te):
		return fmt.Errorf("node-link JSON: byte %d: %q is %s, want %s", te.Offset, te.Field, te.Value, te.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("node-link JSON: byte %d: unexpected end of input", offset)
	}
	return fmt.Errorf("node-link JSON: byte %d: %w", offset, err)
}

// clip returns raw JSON for an error message, shortened to 40 bytes.
func clip(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:37]) + "..."
	}
	return string(raw)
}

// idKey returns a canonical text for a JSON node id, equal for ids that
// Python's json module would load as equal dictionary keys: strings by
// their decoded text, numbers by value (integers exactly, integral floats
// as the integer they equal, other floats in shortest form), arrays
// element by element. Objects are rejected, as networkx rejects dicts
// as node ids.
func idKey(raw json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := appendIDKey(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func appendIDKey(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprintf(b, "%t", v)
	case string:
		b.WriteString(strconv.Quote(v))
	case json.Number:
		s := string(v)
		if i, ok := new(big.Int).SetString(s, 10); ok {
			b.WriteString(i.String())
			return nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return fmt.Errorf("number %s is out of range", s)
		}
		if f == math.Trunc(f) {
			i, _ := new(big.Float).SetFloat64(f).Int(nil)
			b.WriteString(i.String())
			return nil
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendIDKey(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		return errors.New("objects cannot be node ids")
	}
	return nil
}
