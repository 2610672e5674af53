package mol

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataDir locates shared/data: $LGFLOW_DATA, else ../shared/data next to
// the directory holding go.mod. It skips the test when absent.
func dataDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("LGFLOW_DATA"); d != "" {
		if _, err := os.Stat(d); err == nil {
			return d
		}
		t.Skipf("LGFLOW_DATA=%s not found", d)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Skip(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "data")
			if _, err := os.Stat(d); err != nil {
				t.Skipf("shared data not found at %s", d)
			}
			return d
		}
		if filepath.Dir(dir) == dir {
			t.Skip("go.mod not found")
		}
	}
}

// readLines returns the lines of a (possibly gzipped) text file.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("fixture missing: %v", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer gz.Close()
		r = gz
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
