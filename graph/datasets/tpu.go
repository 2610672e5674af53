package datasets

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"lgflow/graph"
)

// TPUNodeTypes is the number of TPU Tile op types: node labels are 0..46.
const TPUNodeTypes = 47

type tpuLine struct {
	NumNodes *int  `json:"num_nodes"`
	NodeType []int `json:"node_type"`
	Src      []int `json:"src"`
	Dst      []int `json:"dst"`
}

// ReadTPUTile reads TPU Tile DAGs from JSON lines, one graph per line:
//
//	{"num_nodes": n, "node_type": [...n ints in 0..46], "src": [...], "dst": [...], "y": f}
//
// Edge i goes src[i] -> dst[i]; node_type becomes NodeLabels; y is
// ignored. Each graph is validated (lengths, label and index ranges, no
// self-loops or repeated edges, acyclic) and errors name the line.
func ReadTPUTile(r io.Reader) ([]*graph.Graph, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var gs []*graph.Graph
	for lineNo := 1; ; lineNo++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if len(trimSpace(b)) > 0 {
			g, perr := parseTPULine(b)
			if perr != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, perr)
			}
			gs = append(gs, g)
		}
		if err == io.EOF {
			return gs, nil
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func parseTPULine(b []byte) (*graph.Graph, error) {
	// Keys are matched exactly, as Python's json does (encoding/json alone
	// would also take "Src" for "src").
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("byte %d: %w", se.Offset, err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("byte %d: the line is %s, not a JSON object", te.Offset, te.Value)
		}
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("the line is null, not a JSON object")
	}
	var l tpuLine
	for _, f := range []struct {
		key, want string
		dst       any
	}{
		{"num_nodes", "an integer", &l.NumNodes},
		{"node_type", "a list of integers", &l.NodeType},
		{"src", "a list of integers", &l.Src},
		{"dst", "a list of integers", &l.Dst},
	} {
		if raw, ok := obj[f.key]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				v := string(raw)
				if len(v) > 40 {
					v = v[:37] + "..."
				}
				return nil, fmt.Errorf("%q is %s, want %s", f.key, v, f.want)
			}
		}
	}
	if l.NumNodes == nil {
		return nil, errors.New(`missing "num_nodes"`)
	}
	n := *l.NumNodes
	if n < 0 {
		return nil, fmt.Errorf("num_nodes = %d", n)
	}
	if len(l.NodeType) != n {
		return nil, fmt.Errorf("node_type has %d entries, num_nodes = %d", len(l.NodeType), n)
	}
	for i, t := range l.NodeType {
		if t < 0 || t >= TPUNodeTypes {
			return nil, fmt.Errorf("node_type[%d] = %d outside 0..%d", i, t, TPUNodeTypes-1)
		}
	}
	if len(l.Src) != len(l.Dst) {
		return nil, fmt.Errorf("src has %d entries, dst has %d", len(l.Src), len(l.Dst))
	}
	g := graph.NewDirected(n)
	g.NodeLabels = l.NodeType
	for i := range l.Src {
		u, v := l.Src[i], l.Dst[i]
		if u < 0 || u >= n || v < 0 || v >= n {
			return nil, fmt.Errorf("edge %d: %d -> %d has a node outside 0..%d", i, u, v, n-1)
		}
		if u == v {
			return nil, fmt.Errorf("edge %d: self-loop at node %d", i, u)
		}
		if g.HasEdge(u, v) {
			return nil, fmt.Errorf("edge %d: %d -> %d repeated", i, u, v)
		}
		g.MustAddEdge(u, v)
	}
	if _, err := graph.TopologicalOrder(g); err != nil {
		return nil, err
	}
	return g, nil
}

// TPUTile reads a TPU Tile JSON-lines file (see ReadTPUTile); errors name
// the file and line.
func TPUTile(path string) ([]*graph.Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	defer f.Close()
	gs, err := ReadTPUTile(f)
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	return gs, nil
}

func loadTPU(ctx context.Context, split string, opt Options) ([]*graph.Graph, error) {
	dir, err := opt.dir()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, "tpu_tile", "tpu_tile_"+split+".jsonl")
	if _, err := os.Stat(p); err != nil {
		if split == "train" {
			return nil, fmt.Errorf("datasets: tpu: %s not found: the TPU Tile train split (5040 graphs) is not in the shared data; convert LayerDAG's train.pth to that file, or train on the val split", p)
		}
		return nil, fmt.Errorf("datasets: tpu: %w", err)
	}
	gs, err := TPUTile(p)
	if err != nil {
		return nil, err
	}
	if opt.Progress != nil {
		opt.Progress(len(gs), len(gs))
	}
	return gs, ctx.Err()
}
