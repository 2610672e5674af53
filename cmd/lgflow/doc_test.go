package main

import (
	"os"
	"strings"
	"testing"
)

// TestPackageDocListsCommands: the package comment's list of commands
// names every registered command, and no command that does not exist.
func TestPackageDocListsCommands(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(src), "// The commands:\n")
	if !ok {
		t.Fatal(`main.go's package comment has no "The commands:" list`)
	}
	list, _, _ = strings.Cut(list, "\n//\n// ")
	listed := map[string]bool{}
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "//")); len(f) > 0 {
			listed[f[0]] = true
		}
	}
	for name := range commands {
		if !listed[name] {
			t.Errorf("command %q is not in the package comment's list", name)
		}
	}
	for name := range listed {
		if _, ok := commands[name]; !ok {
			t.Errorf("the package comment lists %q, which is not a command", name)
		}
	}
}
