package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// array. Edges are taken from "edges" or, for older files, "links". An
// integer "label" on nodes becomes NodeLabels (0 for nodes without one)
// and on edges the edge label. Multigraphs, self-loops, unknown ids and
// non-integer labels are errors naming the node or edge.
func ReadNodeLink(r io.Reader) (*Graph, error) {
	var d nodeLink
	dec := json.NewDecoder(r)
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("node-link JSON: %w", err)
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
	key := func(raw json.RawMessage) string {
		var c bytes.Buffer
		if json.Compact(&c, raw) != nil {
			return string(raw)
		}
		return c.String()
	}
	var labels []int
	for i, nd := range d.Nodes {
		id, ok := nd["id"]
		if !ok {
			return nil, fmt.Errorf("node-link JSON: nodes[%d] has no \"id\"", i)
		}
		k := key(id)
		if _, dup := index[k]; dup {
			return nil, fmt.Errorf("node-link JSON: nodes[%d]: duplicate id %s", i, k)
		}
		index[k] = i
		if raw, ok := nd["label"]; ok {
			var l int
			if err := json.Unmarshal(raw, &l); err != nil {
				return nil, fmt.Errorf("node-link JSON: nodes[%d] (id %s): label %s is not an integer", i, k, raw)
			}
			if labels == nil {
				labels = make([]int, n)
			}
			labels[i] = l
		}
	}
	var g *Graph
	if d.Directed {
		g = NewDirected(n)
	} else {
		g = New(n)
	}
	g.NodeLabels = labels
	for i, e := range edges {
		var ends [2]int
		for j, name := range [2]string{"source", "target"} {
			raw, ok := e[name]
			if !ok {
				return nil, fmt.Errorf("node-link JSON: edges[%d] has no %q", i, name)
			}
			u, ok := index[key(raw)]
			if !ok {
				return nil, fmt.Errorf("node-link JSON: edges[%d]: %s %s is not a node id", i, name, raw)
			}
			ends[j] = u
		}
		label := 0
		if raw, ok := e["label"]; ok {
			if err := json.Unmarshal(raw, &label); err != nil {
				return nil, fmt.Errorf("node-link JSON: edges[%d]: label %s is not an integer", i, raw)
			}
		}
		if err := g.AddLabeledEdge(ends[0], ends[1], label); err != nil {
			return nil, fmt.Errorf("node-link JSON: edges[%d]: %w", i, err)
		}
	}
	return g, nil
}
