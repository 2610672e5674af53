// Package modroot finds the root of the lgflow checkout (the directory
// holding go.mod) so that commands and examples can locate shipped files
// such as pretrained/ and the shared data directory beside the checkout.
package modroot

import (
	"errors"
	"os"
	"path/filepath"
)

// Find walks up from the working directory and returns the first directory
// holding a go.mod file.
func Find() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// File returns path joined to the module root when one is found, else path
// unchanged (relative to the working directory).
func File(path string) string {
	root, err := Find()
	if err != nil {
		return path
	}
	return filepath.Join(root, path)
}
