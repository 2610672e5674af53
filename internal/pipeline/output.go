package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"lgflow/graph"
	"lgflow/graph/render"
)

// maxSplitBytes bounds the size of a split written beside the samples:
// larger training splits (Planar-512: ~180 MB of graph6) are not written.
const maxSplitBytes = 64 << 20

// graph6Bytes estimates the size of gs as graph6 / digraph6 lines.
func graph6Bytes(gs []*graph.Graph) int {
	total := 0
	for _, g := range gs {
		n := g.N()
		bits := n * (n - 1) / 2
		if g.Directed() {
			bits = n * n
		}
		total += bits/6 + 8
	}
	return total
}

// graphFiles writes gs under base (a path without extension) as graph6
// (.g6) or digraph6 (.d6) lines, and as node-link JSON Lines (.jsonl)
// when labelled, and returns the file names written.
func graphFiles(base string, gs []*graph.Graph, labelled bool) ([]string, error) {
	ext := ".g6"
	if len(gs) > 0 && gs[0].Directed() {
		ext = ".d6"
	}
	if err := graph.WriteFile(base+ext, gs); err != nil {
		return nil, err
	}
	names := []string{filepath.Base(base + ext)}
	if labelled {
		if err := graph.WriteNodeLinkFile(base+".jsonl", gs); err != nil {
			return nil, err
		}
		names = append(names, filepath.Base(base+".jsonl"))
	}
	return names, nil
}

// writeOutputs writes the samples, samples.svg, the test split, the
// training split (when under maxSplitBytes) and, last, report.json into
// dir, recording the file names in rep.Files.
func writeOutputs(dir string, spec Spec, samples []*graph.Graph, splits *Splits, rep *Report) error {
	files := []string{"report.json"}
	names, err := graphFiles(filepath.Join(dir, "samples"), samples, spec.NodeLabels)
	if err != nil {
		return err
	}
	files = append(files, names...)
	if len(samples) > 0 {
		if err := WriteSVG(filepath.Join(dir, "samples.svg"), samples[:min(len(samples), 24)]); err != nil {
			return err
		}
		files = append(files, "samples.svg")
	}
	if names, err = graphFiles(filepath.Join(dir, "test"), splits.Test, spec.NodeLabels); err != nil {
		return err
	}
	files = append(files, names...)
	if graph6Bytes(splits.Novel) <= maxSplitBytes {
		if names, err = graphFiles(filepath.Join(dir, "train"), splits.Novel, spec.NodeLabels); err != nil {
			return err
		}
		files = append(files, names...)
	}
	rep.Files = files
	return WriteJSON(filepath.Join(dir, "report.json"), rep)
}

// WriteSVG draws gs as a grid of 6 columns into an SVG file, atomically.
func WriteSVG(path string, gs []*graph.Graph) error {
	return graph.WriteFileAtomic(path, func(w io.Writer) error {
		return render.GridSVG(w, gs, 6, render.Options{Width: 200, Height: 200})
	})
}

// WriteJSON writes v as indented JSON to path atomically.
func WriteJSON(path string, v any) error {
	return graph.WriteFileAtomic(path, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		if err := e.Encode(v); err != nil {
			return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
		}
		return nil
	})
}
