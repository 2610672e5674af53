package graph

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// ReadEdgeLists reads a file of graphs as edge lists: one graph per block
// of lines, blocks separated by one or more blank lines, each block read
// by ReadEdgeList with opt (an optional header "n m", then "u v" or
// "u v label" per edge; '#' starts a comment). A line holding only a
// comment does not separate blocks, and a block of comments is no graph. Errors name the file's line: "line 12
// (graph 3): ...".
func ReadEdgeLists(r io.Reader, opt EdgeListOptions) ([]*Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	var (
		gs    []*Graph
		block bytes.Buffer
		first int  // the block's first line
		data  bool // the block has a line that is not a comment
		line  int
	)
	flush := func() error {
		if !data {
			block.Reset() // comments only
			return nil
		}
		data = false
		g, err := ReadEdgeList(&block, opt)
		if err != nil {
			return fileLine(err, first-1, len(gs))
		}
		gs = append(gs, g)
		block.Reset()
		return nil
	}
	for sc.Scan() {
		line++
		s := sc.Text()
		if strings.TrimSpace(s) == "" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		if block.Len() == 0 {
			first = line
		}
		block.WriteString(s)
		block.WriteByte('\n')
		if c, _, _ := strings.Cut(s, "#"); strings.TrimSpace(c) != "" {
			data = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return gs, nil
}

// edgeListLine matches the line ReadEdgeList's errors begin with.
var edgeListLine = regexp.MustCompile(`^edge list line (\d+): `)

// fileLine rewrites an error of ReadEdgeList about a block that starts
// after line offset of its file to name the file's line and the graph.
func fileLine(err error, offset, graph int) error {
	msg := err.Error()
	if m := edgeListLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return fmt.Errorf("line %d (graph %d): %s", n+offset, graph, msg[len(m[0]):])
	}
	return fmt.Errorf("graph %d (from line %d): %w", graph, offset+1, err)
}

// WriteEdgeLists writes gs as ReadEdgeLists reads them: each graph as
// WriteEdgeList writes it (a header "n m", then its edges), graphs
// separated by a blank line.
func WriteEdgeLists(w io.Writer, gs []*Graph) error {
	for i, g := range gs {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := WriteEdgeList(w, g); err != nil {
			return err
		}
	}
	return nil
}

// IsEdgeListPath reports whether a file name says edge lists: it ends in
// .edges, .edgelist or .el, optionally followed by .gz.
func IsEdgeListPath(path string) bool {
	p := strings.TrimSuffix(strings.ToLower(path), ".gz")
	return strings.HasSuffix(p, ".edges") || strings.HasSuffix(p, ".edgelist") || strings.HasSuffix(p, ".el")
}

// ReadEdgeListFile reads the graphs of a file of edge lists
// (ReadEdgeLists; gzip-compressed if the name ends in ".gz"). Errors name
// the file.
func ReadEdgeListFile(path string, opt EdgeListOptions) ([]*Graph, error) {
	return readGraphsFile(path, func(r io.Reader) ([]*Graph, error) { return ReadEdgeLists(r, opt) })
}
