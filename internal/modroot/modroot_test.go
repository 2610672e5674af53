package modroot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	root, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("Find returned %s without a go.mod: %v", root, err)
	}
	if got := File("README.md"); got != filepath.Join(root, "README.md") {
		t.Fatalf("File = %s", got)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if _, err := Find(); err == nil {
		t.Fatalf("Find succeeded in %s, which has no go.mod above it", dir)
	}
	if got := File("x"); got != "x" {
		t.Fatalf("File outside a module = %q, want x", got)
	}
}
