//go:build !windows

package nccl

import "github.com/ebitengine/purego"

// openLocal: every symbol at once, private to the library.
const (
	openLocal = purego.RTLD_NOW | purego.RTLD_LOCAL
)

func dlopen(file string, mode int) (uintptr, error) { return purego.Dlopen(file, mode) }
func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
func dlclose(h uintptr) error                       { return purego.Dlclose(h) }
