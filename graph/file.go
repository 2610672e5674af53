package graph

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"

	"lgflow/internal/atomicfile"
)

// WriteFileAtomic creates or replaces the file at path with what write
// produces, atomically: write gets a buffered writer on a temporary file
// in the same directory, which is flushed, synced, closed and renamed over
// path only if write succeeds. On error the temporary file is removed and
// path is left as it was. The new file has mode 0644.
func WriteFileAtomic(path string, write func(w io.Writer) error) error {
	return atomicfile.Write(path, write)
}

// readGraphsFile opens path (gzip-decompressed if the name ends in ".gz")
// and parses it with read; errors name the file.
func readGraphsFile(path string, read func(io.Reader) ([]*Graph, error)) ([]*Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	gs, err := read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gs, nil
}

// writeGraphsFile writes gs to path atomically with write (WriteFileAtomic),
// gzip-compressed if the name ends in ".gz".
func writeGraphsFile(path string, gs []*Graph, write func(io.Writer, []*Graph) error) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		if strings.HasSuffix(path, ".gz") {
			zw := gzip.NewWriter(w)
			if err := write(zw, gs); err != nil {
				return err
			}
			return zw.Close()
		}
		return write(w, gs)
	})
}
