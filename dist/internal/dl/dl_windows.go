package dl

import "errors"

// Open modes; on Windows nothing loads.
const (
	Local  = 0
	Global = 0
)

var errWindows = errors.New("dist: its engines' libraries (libmpi, libnccl) are not loaded on Windows")

// Open fails on Windows.
func Open(file string, mode int) (uintptr, error) { return 0, errWindows }

// Sym fails on Windows.
func Sym(h uintptr, name string) (uintptr, error) { return 0, errWindows }

// Close does nothing on Windows.
func Close(h uintptr) error { return nil }
