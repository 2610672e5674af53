package nccl

import "errors"

// NCCL is built for Linux only: on Windows every load fails.
const openLocal = 0

var errWindows = errors.New("NCCL's libnccl cannot be loaded on Windows (NCCL supports Linux only)")

func dlopen(file string, mode int) (uintptr, error) { return 0, errWindows }
func dlsym(h uintptr, name string) (uintptr, error) { return 0, errWindows }
func dlclose(h uintptr) error                       { return nil }
