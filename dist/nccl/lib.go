package nccl

import (
	"errors"
	"fmt"
	"lgflow/dist/internal/dl"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// DefaultLibs are the file names tried, in order, when neither Options.Lib
// nor LGFLOW_NCCL_LIB names the library: NCCL 2's soname, then the
// development link. dlopen searches LD_LIBRARY_PATH and the ld.so cache
// (the nvidia-nccl-cu12 wheel's library is under
// site-packages/nvidia/nccl/lib: name it with LGFLOW_NCCL_LIB).
var DefaultLibs = []string{"libnccl.so.2", "libnccl.so"}

// ErrLibrary is matched (errors.Is) by the error of Open and
// LibraryVersion when no candidate file of libnccl can be loaded.
var ErrLibrary = errors.New("libnccl cannot be loaded")

// ErrUnsupportedVersion is matched (errors.Is) by the error of Open and
// LibraryVersion when the loaded libnccl is not a supported version (see
// MinVersion).
var ErrUnsupportedVersion = errors.New("unsupported NCCL version")

// MinVersion is the oldest NCCL release supported: 2.4, the first with
// ncclCommGetAsyncError and ncclCommAbort, which the watchdog needs. Every
// NCCL 2 release from it keeps what this package relies on: the soname
// libnccl.so.2, the 128-byte ncclUniqueId passed by value to
// ncclCommInitRank, and the values ncclFloat32 = 7, ncclFloat64 = 8,
// ncclSum = 0. Other major versions are refused: a new major version may
// change that ABI.
var MinVersion = Version{Major: 2, Minor: 4}

// NCCL's constants (nccl.h of NCCL 2).
const (
	ncclSuccess    = 0
	ncclInProgress = 7 // NCCL 2.14+: a non-blocking operation is still running
	ncclFloat32    = 7
	ncclFloat64    = 8
	ncclSum        = 0
	uniqueIDBytes  = 128 // NCCL_UNIQUE_ID_BYTES
)

// resultNames are the names of ncclResult_t's values.
var resultNames = []string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}

// UniqueID is NCCL's ncclUniqueId: the 128 bytes that rank 0 creates
// (ncclGetUniqueId) and every rank passes to ncclCommInitRank. It holds
// the address of rank 0's bootstrap socket.
type UniqueID [128]byte

// uniqueID is ncclUniqueId as a C struct, for passing by value.
type uniqueID struct{ Internal [uniqueIDBytes]byte }

// Version is a release of NCCL.
type Version struct {
	Major, Minor, Patch int
}

// String returns "major.minor.patch".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// DecodeVersion converts ncclGetVersion's code: major*10000 + minor*100 +
// patch since NCCL 2.9, major*1000 + minor*100 + patch before.
func DecodeVersion(code int) Version {
	if code >= 10000 {
		return Version{code / 10000, code / 100 % 100, code % 100}
	}
	return Version{code / 1000, code / 100 % 10, code % 100}
}

// checkVersion returns an error matching ErrUnsupportedVersion unless v is
// supported.
func checkVersion(file string, v Version) error {
	if v.Major != MinVersion.Major || v.Less(MinVersion) {
		return fmt.Errorf("dist/nccl: %s is NCCL %v; lgflow supports NCCL %d.x from %d.%d (its watchdog needs ncclCommGetAsyncError and ncclCommAbort, and it relies on NCCL %d's ABI): %w",
			file, v, MinVersion.Major, MinVersion.Major, MinVersion.Minor, MinVersion.Major, ErrUnsupportedVersion)
	}
	return nil
}

// library holds a loaded libnccl.
type library struct {
	file    string
	version Version

	getVersion, getUniqueID, commDestroy, commAbort, commGetAsyncError uintptr
	getErrorString, allReduce, broadcast, groupStart, groupEnd         uintptr
	getLastError                                                       uintptr // NCCL 2.13+, else 0

	// errorString and lastErrorString are ncclGetErrorString and
	// ncclGetLastError, which return C strings (purego copies them).
	errorString     func(code int32) string
	lastErrorString func(comm uintptr) string

	// initRank is ncclCommInitRank, whose ncclUniqueId is passed by value
	// (a 128-byte struct: on the stack on amd64, by reference on arm64),
	// through purego's struct support.
	initRank func(comm *uintptr, nranks int32, id uniqueID, rank int32) int32
}

// sym names one symbol of libnccl and where its address goes.
type sym struct {
	name     string
	p        *uintptr
	optional bool
}

func (l *library) table(initRank *uintptr) []sym {
	return []sym{
		{"ncclGetVersion", &l.getVersion, false},
		{"ncclGetUniqueId", &l.getUniqueID, false},
		{"ncclCommInitRank", initRank, false},
		{"ncclCommDestroy", &l.commDestroy, false},
		{"ncclCommAbort", &l.commAbort, false},
		{"ncclCommGetAsyncError", &l.commGetAsyncError, false},
		{"ncclGetErrorString", &l.getErrorString, false},
		{"ncclAllReduce", &l.allReduce, false},
		{"ncclBroadcast", &l.broadcast, false},
		{"ncclGroupStart", &l.groupStart, false},
		{"ncclGroupEnd", &l.groupEnd, false},
		{"ncclGetLastError", &l.getLastError, true},
	}
}

// loadLibrary dlopens the first loadable candidate, checks its version
// and binds its symbols. Loading twice returns the same library (dlopen
// counts references).
func loadLibrary(lib string) (*library, error) {
	names := dl.Candidates(lib, "LGFLOW_NCCL_LIB", DefaultLibs)
	h, file, last := dl.OpenFirst(names, dl.Local)
	if h == 0 {
		return nil, fmt.Errorf("dist/nccl: cannot load NCCL (tried %s; LGFLOW_NCCL_LIB names the file; NVIDIA's libnccl2 package, or the nvidia-nccl-cu12 wheel's lib/libnccl.so.2): %v: %w",
			strings.Join(names, ", "), last, ErrLibrary)
	}
	l := &library{file: file}
	var initRank uintptr
	for _, s := range l.table(&initRank) {
		p, err := dl.Sym(h, s.name)
		if err != nil || p == 0 {
			if s.optional {
				continue
			}
			_ = dl.Close(h)
			return nil, fmt.Errorf("dist/nccl: %s lacks symbol %s (not NCCL %d.%d or newer?): %w", file, s.name, MinVersion.Major, MinVersion.Minor, ErrUnsupportedVersion)
		}
		*s.p = p
	}
	purego.RegisterFunc(&l.errorString, l.getErrorString)
	if l.getLastError != 0 {
		purego.RegisterFunc(&l.lastErrorString, l.getLastError)
	}
	var code int32
	if r := call(l.getVersion, uintptr(unsafe.Pointer(&code))); r != ncclSuccess {
		_ = dl.Close(h)
		return nil, fmt.Errorf("dist/nccl: %s: ncclGetVersion failed: %s", file, l.errorText(r))
	}
	l.version = DecodeVersion(int(code))
	if err := checkVersion(file, l.version); err != nil {
		_ = dl.Close(h)
		return nil, err
	}
	purego.RegisterFunc(&l.initRank, initRank)
	return l, nil
}

// errorText returns "ncclName: ncclGetErrorString's description".
func (l *library) errorText(code int) string {
	name := fmt.Sprintf("ncclResult %d", code)
	if code >= 0 && code < len(resultNames) {
		name = resultNames[code]
	}
	if l.errorString == nil {
		return name
	}
	if msg := l.errorString(int32(code)); msg != "" {
		return name + ": " + msg
	}
	return name
}

// lastError returns ncclGetLastError's description of the last failure
// of comm ("" before NCCL 2.13, or when it says nothing).
func (l *library) lastError(comm uintptr) string {
	if l.lastErrorString == nil {
		return ""
	}
	return l.lastErrorString(comm)
}

// call invokes the C function fn with integer or pointer arguments and
// returns its ncclResult_t (the low 32 bits of the result register).
// Pointers passed as uintptr(unsafe.Pointer(p)) are kept alive for the
// duration of the call (go:uintptrescapes); libnccl does not keep them.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) int {
	r, _, _ := purego.SyscallN(fn, args...)
	return int(int32(uint32(r)))
}

// LibraryVersion loads libnccl (lib: a file name or path; empty: the file
// named by LGFLOW_NCCL_LIB, else DefaultLibs) and returns its version and
// file name, without a GPU. Its error says why Open would fail to load the
// library: it matches ErrLibrary (no file loads) or ErrUnsupportedVersion.
func LibraryVersion(lib string) (Version, string, error) {
	l, err := loadLibrary(lib)
	if err != nil {
		return Version{}, "", err
	}
	return l.version, l.file, nil
}

// NewUniqueID creates a communicator's id with ncclGetUniqueId (lib as in
// LibraryVersion). Rank 0 calls it and hands the id to the other ranks;
// Open does so through its bootstrap communicator.
func NewUniqueID(lib string) (UniqueID, error) {
	l, err := loadLibrary(lib)
	if err != nil {
		return UniqueID{}, err
	}
	return l.uniqueID()
}

func (l *library) uniqueID() (UniqueID, error) {
	var id UniqueID
	if r := call(l.getUniqueID, uintptr(unsafe.Pointer(&id[0]))); r != ncclSuccess {
		return UniqueID{}, fmt.Errorf("dist/nccl: ncclGetUniqueId: %s", l.errorText(r))
	}
	return id, nil
}
