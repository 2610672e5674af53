// Package dl loads the shared libraries of dist's engines (Open MPI's
// libmpi, NCCL's libnccl) at run time, through purego: no cgo, so the
// module builds everywhere and a missing library is an error, not a
// link failure. On Windows every load fails.
package dl

import (
	"errors"
	"os"
)

// Candidates returns the files to try, in order: lib when set, else the
// file the environment variable env names when set, else defaults.
func Candidates(lib, env string, defaults []string) []string {
	if lib != "" {
		return []string{lib}
	}
	if f := os.Getenv(env); f != "" {
		return []string{f}
	}
	return defaults
}

// OpenFirst opens (Open, with mode) the first of names that loads and
// returns its handle and name, or the last failure when none loads.
func OpenFirst(names []string, mode int) (h uintptr, file string, err error) {
	err = errors.New("dist: no library file to load")
	for _, n := range names {
		if h, err = Open(n, mode); err == nil {
			return h, n, nil
		}
	}
	return 0, "", err
}
