package main

import (
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"lgflow/graph"
	"lgflow/graph/mol"
	"lgflow/internal/bundle"
)

// Input formats of lgflow train -graphs (and tune -val): graph6 /
// digraph6 / sparse6 lines, edge lists, node-link JSON, SMILES.
const (
	inG6       = "g6"
	inEdgeList = "edgelist"
	// inEdgeListDirected is an edge list of directed graphs (u v: the edge
	// u -> v).
	inEdgeListDirected = "edgelist-directed"
	inNodeLink         = "nodelink"
	inSMILES           = "smiles"
)

// graphFile is a file of graphs read by readGraphFile.
type graphFile struct {
	path   string
	format string
	graphs []*graph.Graph
	// lines[i] is the line graph i starts on (0: not known).
	lines []int
	// molecules names the molecule encoding of SMILES ("" otherwise).
	molecules string
}

// where names graph i of the file for errors: its line where known.
func (f *graphFile) where(i int) string {
	if i >= 0 && i < len(f.lines) && f.lines[i] > 0 {
		return fmt.Sprintf("%s line %d", f.path, f.lines[i])
	}
	return fmt.Sprintf("%s graph %d", f.path, i)
}

// explain rewrites a *bundle.GraphError about f's graphs to name the
// line; other errors pass unchanged.
func (f *graphFile) explain(err error) error {
	var ge *bundle.GraphError
	if errors.As(err, &ge) {
		return fmt.Errorf("%s: %w", f.where(ge.Index), ge.Err)
	}
	return err
}

// addInputFormat registers -format, the format of the files of graphs
// that train and tune read.
func addInputFormat(fs *flag.FlagSet) *string {
	return fs.String("format", "", "format of the files of graphs: g6, edgelist, edgelist-directed (u v: the edge u -> v), nodelink or smiles (default: from the file name, else g6)")
}

// inputFormat resolves the format of a file of graphs: format when given
// (g6, edgelist, edgelist-directed, nodelink, smiles), else by the name: .json, .jsonl and
// .ndjson node-link JSON, .smi, .smiles and .csv SMILES, .edges,
// .edgelist and .el edge lists, anything else graph6 / digraph6 / sparse6
// lines (each may end in .gz).
func inputFormat(format, path string) (string, error) {
	switch format {
	case inG6, inEdgeList, inEdgeListDirected, inNodeLink, inSMILES:
		return format, nil
	case "":
	default:
		return "", usagef("unknown input format %q (want g6, edgelist, edgelist-directed, nodelink or smiles)", format)
	}
	switch {
	case graph.IsNodeLinkPath(path):
		return inNodeLink, nil
	case isSMILESPath(path):
		return inSMILES, nil
	case graph.IsEdgeListPath(path):
		return inEdgeList, nil
	}
	return inG6, nil
}

// readGraphFile reads a file of graphs in format (inputFormat). SMILES become molecular graphs of the
// encoding molName (moses, guacamol, or "" for moses where every atom is
// one of its types, else guacamol). An empty file, and a line that is not
// a graph, are errors naming the file and the line.
func readGraphFile(ctx context.Context, path, format, molName string) (*graphFile, error) {
	f := &graphFile{path: path, format: format}
	var err error
	switch format {
	case inG6:
		err = readLines(path, func(r io.Reader) error {
			return graph.ScanGraphs(r, func(line int, g *graph.Graph) error {
				f.graphs, f.lines = append(f.graphs, g), append(f.lines, line)
				return nil
			})
		})
	case inEdgeList, inEdgeListDirected:
		f.graphs, err = graph.ReadEdgeListFile(path, graph.EdgeListOptions{Directed: format == inEdgeListDirected})
	case inNodeLink:
		f.graphs, err = graph.ReadNodeLinkFile(path)
	case inSMILES:
		err = f.readSMILES(ctx, molName)
	}
	if err != nil {
		return nil, err
	}
	if len(f.graphs) == 0 {
		return nil, fmt.Errorf("%s: no graphs (an empty file, or blank lines and comments only)", path)
	}
	return f, nil
}

// readLines opens path (gzip-decompressed for a .gz name) and hands it to
// read; errors name the file.
func readLines(path string, read func(io.Reader) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	r, closeFn, err := maybeGzip(path, file)
	if err != nil {
		return err
	}
	defer closeFn()
	if err := read(r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readSMILES reads one SMILES per line (readSMILESFile's rules) and parses
// them into molecular graphs of the encoding molName.
func (f *graphFile) readSMILES(ctx context.Context, molName string) error {
	smiles, lines, err := readSMILESLines(f.path)
	if err != nil {
		return err
	}
	encs := []*mol.Encoding{mol.MOSES, mol.GuacaMol}
	switch molName {
	case "moses":
		encs = encs[:1]
	case "guacamol":
		encs = encs[1:]
	case "":
	default:
		return usagef("unknown molecule encoding %q (want moses or guacamol)", molName)
	}
	for k, enc := range encs {
		gs, err := enc.ParseGraphs(ctx, smiles, 0, nil)
		var pe *mol.ParseGraphError
		switch {
		case err == nil:
			f.graphs, f.lines, f.molecules = gs, lines, enc.Name
			return nil
		case errors.As(err, &pe) && k+1 < len(encs) && strings.Contains(pe.Err.Error(), "atom types"):
			continue // an atom the next encoding may have
		case errors.As(err, &pe):
			return fmt.Errorf("%s line %d: %q is no molecule of the %s encoding: %v", f.path, lines[pe.Index], pe.SMILES, enc.Name, pe.Err)
		default:
			return err
		}
	}
	return nil
}

// readSMILESLines is readSMILESFile with the line of every SMILES; "None"
// is an error here, where every line must be a molecule.
func readSMILESLines(path string) (smiles []string, lines []int, err error) {
	all, err := readSMILESFile(path)
	if err != nil {
		return nil, nil, err
	}
	// readSMILESFile keeps every line but a header "SMILES".
	base := 1
	if len(all) > 0 {
		if first, _ := firstSMILESLine(path); strings.EqualFold(first, "smiles") {
			base = 2
		}
	}
	for i, s := range all {
		switch s {
		case "":
			continue
		case "None":
			return nil, nil, fmt.Errorf("%s line %d: None is no molecule", path, base+i)
		}
		smiles, lines = append(smiles, s), append(lines, base+i)
	}
	return smiles, lines, nil
}

// maybeGzip returns a reader of file, gzip-decompressed for a .gz path,
// and the function that closes the decompressor.
func maybeGzip(path string, file io.Reader) (io.Reader, func() error, error) {
	if !strings.HasSuffix(path, ".gz") {
		return file, func() error { return nil }, nil
	}
	zr, err := gzip.NewReader(file)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return zr, zr.Close, nil
}

// firstSMILESLine returns the first field of the first line of path.
func firstSMILESLine(path string) (string, error) {
	var first string
	err := readLines(path, func(r io.Reader) error {
		b := make([]byte, 256)
		n, _ := io.ReadFull(r, b)
		s, _, _ := strings.Cut(string(b[:n]), "\n")
		s = strings.TrimSpace(s)
		if i := strings.IndexAny(s, " \t,"); i >= 0 {
			s = s[:i]
		}
		first = s
		return nil
	})
	return first, err
}
