//go:build !windows

package dl

import "github.com/ebitengine/purego"

// Open modes: every symbol bound at once, private to the library (Local)
// or added to the process's global scope (Global), where libraries the
// library itself loads can find them.
const (
	Local  = purego.RTLD_NOW | purego.RTLD_LOCAL
	Global = purego.RTLD_NOW | purego.RTLD_GLOBAL
)

// Open loads the shared library file (a soname or a path).
func Open(file string, mode int) (uintptr, error) { return purego.Dlopen(file, mode) }

// Sym returns the address of the symbol name of the library h.
func Sym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// Close releases a handle from Open.
func Close(h uintptr) error { return purego.Dlclose(h) }
