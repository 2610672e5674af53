package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "one"); return err }); err != nil {
		t.Fatal(err)
	}
	// A failing writer leaves the old content and no temporary file.
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error { io.WriteString(w, "partial"); return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "one" {
		t.Fatalf("content %q, %v; want the old content", b, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("%d files in dir, want 1 (temporary file left behind?)", len(ents))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), func(io.Writer) error { return nil }); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

func TestWriteJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, map[string]any{"a": 1, "b": []int{2, 3}}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ]\n}\n"; string(got) != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	if err := WriteJSON(path, func() {}); err == nil {
		t.Error("an unencodable value: no error")
	}
	if again, _ := os.ReadFile(path); string(again) != string(got) {
		t.Error("a failed write changed the file")
	}
}
