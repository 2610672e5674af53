package graph

import (
	"io"
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
