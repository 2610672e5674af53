package graph

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// EdgeListHeader says how ReadEdgeList treats an optional first line "n m".
type EdgeListHeader int

const (
	// HeaderAuto treats the first data line "a b" as a header when b equals
	// the number of edge lines after it and every node id on them is below
	// a (the layout WriteEdgeList and ORCA use); otherwise it is an edge.
	HeaderAuto EdgeListHeader = iota
	// HeaderPresent requires the first data line to be "n m".
	HeaderPresent
	// HeaderAbsent treats every data line as an edge.
	HeaderAbsent
)

// EdgeListOptions configures ReadEdgeList.
type EdgeListOptions struct {
	// Directed makes "u v" the edge u -> v; otherwise the graph is
	// undirected.
	Directed bool
	// Header selects how a first line "n m" is recognised.
	Header EdgeListHeader
	// DropSelfLoops silently skips lines "u u"; otherwise they are an
	// error (Graph has no self-loops).
	DropSelfLoops bool
	// MaxNodes caps the number of nodes (the header's n, or the largest
	// node id + 1): a larger graph is an error naming the line, not an
	// allocation of that size. 0 means DefaultMaxNodes.
	MaxNodes int
}

// DefaultMaxNodes is the node limit of ReadEdgeList when
// EdgeListOptions.MaxNodes is 0: 2^24 nodes, whose adjacency lists alone
// take 400 MB.
const DefaultMaxNodes = 1 << 24

type edgeLine struct {
	line, u, v, label int
	labelled          bool
}

// ReadEdgeList reads a whitespace-separated edge list: one edge "u v" or
// "u v label" per line with 0-based node ids, '#' starting a comment, blank
// lines ignored, and an optional first line "n m" (see EdgeListHeader).
// With a header the graph has n nodes and must have m edge lines;
// without one it has max id + 1 nodes. Repeated edges keep the last
// label. Errors name the line and field.
func ReadEdgeList(r io.Reader, opt EdgeListOptions) (*Graph, error) {
	maxNodes := opt.MaxNodes
	if maxNodes <= 0 {
		maxNodes = DefaultMaxNodes
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	var lines []edgeLine
	lineNo := 0
	for sc.Scan() {
		lineNo++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 && len(f) != 3 {
			return nil, fmt.Errorf("edge list line %d: want \"u v\" or \"u v label\", got %d fields", lineNo, len(f))
		}
		e := edgeLine{line: lineNo}
		names := [3]string{"first node", "second node", "label"}
		for k, p := range f {
			x, err := strconv.Atoi(p)
			if err != nil {
				return nil, fmt.Errorf("edge list line %d: %s %q is not an integer", lineNo, names[k], p)
			}
			switch k {
			case 0:
				e.u = x
			case 1:
				e.v = x
			case 2:
				e.label, e.labelled = x, true
			}
		}
		for k, x := range [2]int{e.u, e.v} {
			if x < 0 {
				return nil, fmt.Errorf("edge list line %d: %s %d is negative", lineNo, names[k], x)
			}
		}
		lines = append(lines, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("edge list line %d: %w", lineNo+1, err)
	}
	n, headerLine := -1, 0
	if len(lines) > 0 && !lines[0].labelled && opt.Header != HeaderAbsent {
		h := lines[0]
		isHeader := opt.Header == HeaderPresent
		if opt.Header == HeaderAuto && h.v == len(lines)-1 {
			isHeader = true
			for _, e := range lines[1:] {
				if e.u >= h.u || e.v >= h.u {
					isHeader = false
					break
				}
			}
		}
		if isHeader {
			if h.v != len(lines)-1 {
				return nil, fmt.Errorf("edge list line %d: header says %d edges, found %d edge lines", h.line, h.v, len(lines)-1)
			}
			n, headerLine = h.u, h.line
			lines = lines[1:]
		}
	} else if opt.Header == HeaderPresent {
		if len(lines) == 0 {
			return nil, fmt.Errorf("edge list: missing header line \"n m\" (no data lines)")
		}
		return nil, fmt.Errorf("edge list line %d: want the header \"n m\", got 3 fields", lines[0].line)
	}
	if n > maxNodes {
		return nil, fmt.Errorf("edge list line %d: header says %d nodes, more than the limit %d", headerLine, n, maxNodes)
	}
	if n < 0 {
		n = 0
		for _, e := range lines {
			if m := max(e.u, e.v); m >= maxNodes {
				return nil, fmt.Errorf("edge list line %d: node %d is beyond the limit of %d nodes", e.line, m, maxNodes)
			}
			n = max(n, e.u+1, e.v+1)
		}
	}
	edges := make([]Edge, 0, len(lines))
	for _, e := range lines {
		if e.u >= n || e.v >= n {
			return nil, fmt.Errorf("edge list line %d: node %d out of range [0, %d) set by the header", e.line, max(e.u, e.v), n)
		}
		if e.u == e.v {
			if opt.DropSelfLoops {
				continue
			}
			return nil, fmt.Errorf("edge list line %d: self-loop at node %d", e.line, e.u)
		}
		edges = append(edges, Edge{From: e.u, To: e.v, Label: e.label})
	}
	g, err := FromEdges(n, opt.Directed, edges)
	if err != nil { // unreachable: every edge was checked above
		return nil, fmt.Errorf("edge list: %w", err)
	}
	return g, nil
}

// WriteEdgeList writes g as a header line "n m" followed by one line
// "u v" per edge (From < To for undirected graphs), or "u v label" on every
// line if any edge has a non-zero label. Node labels are not written.
func WriteEdgeList(w io.Writer, g *Graph) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d %d\n", g.N(), g.M())
	labelled := len(g.edgeLabels) > 0
	var b []byte
	for _, e := range g.Edges() {
		b = strconv.AppendInt(b[:0], int64(e.From), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.To), 10)
		if labelled {
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(e.Label), 10)
		}
		b = append(b, '\n')
		bw.Write(b)
	}
	return bw.Flush()
}
