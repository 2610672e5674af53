package safetensors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lgflow/tensor"
)

// TestLoadHeader reads a file's header alone: metadata and tensor entries
// come back, and a damaged or missing file is an error naming the path.
func TestLoadHeader(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	ts := map[string]*tensor.Tensor{"w": tensor.FromFloat64([]float64{1, 2, 3, 4}, 2, 2).To(tensor.Float32)}
	if err := Save(path, ts, map[string]string{"kind": "test", "step": "7"}); err != nil {
		t.Fatal(err)
	}
	h, err := LoadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["kind"] != "test" || h.Metadata["step"] != "7" || len(h.Tensors) != 1 {
		t.Fatalf("header %+v", h)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"header cut", raw[:12]},
		{"not safetensors", []byte("hello, world\n")},
	} {
		p := filepath.Join(dir, tc.name+".safetensors")
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadHeader(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, p)
		}
	}
	if _, err := LoadHeader(filepath.Join(dir, "none.safetensors")); err == nil {
		t.Error("missing file: no error")
	}
}
