package mpi

import "errors"

// The MPI engine loads Open MPI, which does not run on Windows (Microsoft
// MPI has the MPICH family's ABI): every load fails.
const (
	openLocal  = 0
	openGlobal = 0
)

var errWindows = errors.New("Open MPI's libmpi cannot be loaded on Windows")

func dlopen(file string, mode int) (uintptr, error) { return 0, errWindows }
func dlsym(h uintptr, name string) (uintptr, error) { return 0, errWindows }
func dlclose(h uintptr) error                       { return nil }
