package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"lgflow/tensor"
)

// libNames lists the file names tried, in order, for each NVIDIA library.
// dlopen searches them on LD_LIBRARY_PATH and the ld.so cache.
type libNames struct {
	cuda, cublas, nvrtc []string
}

// defaultLibs are the sonames of the CUDA 13, 12 and 11 releases.
var defaultLibs = libNames{
	cuda:   []string{"libcuda.so.1", "libcuda.so"},
	cublas: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"},
	nvrtc:  []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11", "libnvrtc.so"},
}

// Error is a failure reported by a CUDA library function.
type Error struct {
	Op   string // the library function, e.g. "cuMemAlloc_v2"
	Code int    // its status code (CUresult, cublasStatus_t or nvrtcResult)
	Msg  string // the library's description of the code
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (code %d)", e.Op, e.Msg, e.Code)
}

// Is makes errors.Is(err, tensor.ErrDevice) true for every CUDA failure,
// and errors.Is(err, ErrOutOfMemory) for the out-of-memory codes of the
// driver (2) and cuBLAS (3).
func (e *Error) Is(target error) bool {
	if target == tensor.ErrDevice {
		return true
	}
	return target == ErrOutOfMemory && ((strings.HasPrefix(e.Op, "cu") && !strings.HasPrefix(e.Op, "cublas") && e.Code == 2) ||
		(strings.HasPrefix(e.Op, "cublas") && e.Code == 3))
}

// ErrOutOfMemory is matched (errors.Is) by the error a Backend method panics
// with when device memory is exhausted even after the allocator's cache has
// been released.
var ErrOutOfMemory = errors.New("cuda: out of device memory")

// sym binds one function of a library.
type sym struct {
	name     string
	p        *uintptr
	optional bool
}

// candidates expands library names: a name without a slash is tried first
// in the directories of LGFLOW_CUDA_PATH (colon-separated), then through
// dlopen's own search (LD_LIBRARY_PATH, the ld.so cache), then in
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
func candidates(names []string, envPath, cudaHome string) []string {
	var pre, post []string
	for _, d := range strings.Split(envPath, ":") {
		if d != "" {
			pre = append(pre, d)
		}
	}
	if cudaHome != "" {
		post = append(post, filepath.Join(cudaHome, "lib64"))
	}
	post = append(post, "/usr/local/cuda/lib64")
	var out []string
	add := func(dirs []string, n string) {
		for _, d := range dirs {
			out = append(out, filepath.Join(d, n))
		}
	}
	for _, n := range names {
		if strings.Contains(n, "/") {
			out = append(out, n)
			continue
		}
		add(pre, n)
		out = append(out, n)
	}
	for _, n := range names {
		if !strings.Contains(n, "/") {
			add(post, n)
		}
	}
	return out
}

// openLib dlopens the first loadable file of names (see candidates).
func openLib(what string, names []string) (uintptr, string, error) {
	var last error
	for _, n := range candidates(names, os.Getenv("LGFLOW_CUDA_PATH"), os.Getenv("CUDA_HOME")) {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, n, nil
		}
		last = err
	}
	if last == nil {
		return 0, "", fmt.Errorf("cuda: no file names given for %s", what)
	}
	return 0, "", fmt.Errorf("cuda: cannot load %s (tried %s; LGFLOW_CUDA_PATH adds directories): %v", what, strings.Join(names, ", "), last)
}

// bind resolves the symbols of table in the library h (named file).
func bind(h uintptr, file string, table []sym) error {
	for _, s := range table {
		p, err := purego.Dlsym(h, s.name)
		if err != nil || p == 0 {
			if s.optional {
				*s.p = 0
				continue
			}
			return fmt.Errorf("cuda: %s lacks symbol %s", file, s.name)
		}
		*s.p = p
	}
	return nil
}

// call invokes the C function fn with integer or pointer arguments and
// returns its int-sized status (the low 32 bits of the result register).
// Pointers passed as uintptr(unsafe.Pointer(p)) are kept alive and on the
// heap for the duration of the call (go:uintptrescapes); the C side must not
// keep them.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) int {
	r, _, _ := purego.SyscallN(fn, args...)
	return int(int32(uint32(r)))
}

// cstr returns s as a NUL-terminated byte slice on the heap.
func cstr(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// goString copies the NUL-terminated C string at p (nil gives "").
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
