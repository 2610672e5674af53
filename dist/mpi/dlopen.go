//go:build !windows

package mpi

import "github.com/ebitengine/purego"

// dlopen flags: the library's symbols private to it, or added to the
// process's global scope.
const (
	openLocal  = purego.RTLD_NOW | purego.RTLD_LOCAL
	openGlobal = purego.RTLD_NOW | purego.RTLD_GLOBAL
)

func dlopen(file string, mode int) (uintptr, error) { return purego.Dlopen(file, mode) }
func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
func dlclose(h uintptr) error                       { return purego.Dlclose(h) }
