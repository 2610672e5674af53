package mpi

import (
	"errors"
	"fmt"
	"lgflow/dist/internal/dl"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// DefaultLibs are the file names tried, in order, when neither Options.Lib
// nor LGFLOW_MPI_LIB names the library: Open MPI 3.x to 5.x's soname, then
// the development link. dlopen searches LD_LIBRARY_PATH and the ld.so cache.
var DefaultLibs = []string{"libmpi.so.40", "libmpi.so"}

// ErrUnsupportedABI is matched (errors.Is) by the error of Open and
// LibraryVersion when the loaded libmpi is not Open MPI's: an MPICH-family
// library (MPICH, Intel MPI, MVAPICH, Cray MPICH) represents handles as
// integers, not as addresses of ompi_mpi_* globals, and lacks the symbol
// ompi_mpi_comm_world.
var ErrUnsupportedABI = errors.New("not Open MPI's ABI (only Open MPI's libmpi is supported)")

// Open MPI's constants (mpi.h of Open MPI 3.x to 5.x).
const (
	mpiSuccess          = 0
	threadFunneled      = 1 // MPI_THREAD_FUNNELED (SINGLE is 0, SERIALIZED 2, MULTIPLE 3)
	inPlace             = 1 // MPI_IN_PLACE is (void *) 1
	maxErrorString      = 256
	maxLibraryVersion   = 256
	threadNames         = "SINGLE FUNNELED SERIALIZED MULTIPLE"
	predefinedCommWorld = "ompi_mpi_comm_world"
)

// library holds a loaded libmpi: its functions, and its predefined
// handles, which Open MPI defines as the addresses of global objects.
type library struct {
	file string

	// functions
	initThread, queryThread, initialized, finalized, finalize, abort uintptr
	commRank, commSize, commDup, commFree, commSetErrhandler         uintptr
	allreduce, bcast, barrier, errorString, getLibraryVersion        uintptr

	// predefined handles (addresses of ompi_mpi_* objects)
	commWorld, float32T, float64T, byteT, opSum, errorsReturn uintptr
}

// sym names one symbol of libmpi and where its address goes.
type sym struct {
	name string
	p    *uintptr
}

func (l *library) table() []sym {
	return []sym{
		{"MPI_Init_thread", &l.initThread},
		{"MPI_Query_thread", &l.queryThread},
		{"MPI_Initialized", &l.initialized},
		{"MPI_Finalized", &l.finalized},
		{"MPI_Finalize", &l.finalize},
		{"MPI_Abort", &l.abort},
		{"MPI_Comm_rank", &l.commRank},
		{"MPI_Comm_size", &l.commSize},
		{"MPI_Comm_dup", &l.commDup},
		{"MPI_Comm_free", &l.commFree},
		{"MPI_Comm_set_errhandler", &l.commSetErrhandler},
		{"MPI_Allreduce", &l.allreduce},
		{"MPI_Bcast", &l.bcast},
		{"MPI_Barrier", &l.barrier},
		{"MPI_Error_string", &l.errorString},
		{"MPI_Get_library_version", &l.getLibraryVersion},
		{predefinedCommWorld, &l.commWorld},
		{"ompi_mpi_float", &l.float32T},
		{"ompi_mpi_double", &l.float64T},
		{"ompi_mpi_byte", &l.byteT},
		{"ompi_mpi_op_sum", &l.opSum},
		{"ompi_mpi_errors_return", &l.errorsReturn},
	}
}

// loadLibrary dlopens the first loadable candidate, checks that it is
// Open MPI's and binds its symbols. A candidate is probed RTLD_LOCAL, so
// that a rejected library adds no symbols to the process; Open MPI's is
// then reopened RTLD_GLOBAL: it dlopens its own components (mca_*.so),
// which resolve libmpi's symbols through the global scope.
func loadLibrary(lib string) (*library, error) {
	names := dl.Candidates(lib, "LGFLOW_MPI_LIB", DefaultLibs)
	h, file, last := dl.OpenFirst(names, dl.Local)
	if h == 0 {
		return nil, fmt.Errorf("dist/mpi: cannot load Open MPI's libmpi (tried %s; LGFLOW_MPI_LIB names the file; on Debian: apt-get install openmpi-bin libopenmpi3): %v",
			strings.Join(names, ", "), last)
	}
	if p, err := dl.Sym(h, predefinedCommWorld); err != nil || p == 0 {
		what := "not an MPI library (no MPI_Init_thread)"
		if p, err := dl.Sym(h, "MPI_Init_thread"); err == nil && p != 0 {
			what = "an MPI library whose handles are not ompi_mpi_* objects (an MPICH-family ABI: MPICH, Intel MPI, MVAPICH?)"
		}
		_ = dl.Close(h)
		return nil, fmt.Errorf("dist/mpi: %s is %s: %w", file, what, ErrUnsupportedABI)
	}
	g, err := dl.Open(file, dl.Global)
	if err != nil {
		return nil, fmt.Errorf("dist/mpi: cannot reopen %s RTLD_GLOBAL: %v", file, err)
	}
	_ = dl.Close(h) // g holds the library
	l := &library{file: file}
	for _, s := range l.table() {
		p, err := dl.Sym(g, s.name)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("dist/mpi: %s lacks symbol %s (Open MPI older than 3.0?)", file, s.name)
		}
		*s.p = p
	}
	return l, nil
}

// version returns MPI_Get_library_version's string (callable before
// MPI_Init).
func (l *library) version() string {
	buf := make([]byte, maxLibraryVersion+1)
	var n int32
	if call(l.getLibraryVersion, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n))) != mpiSuccess {
		return ""
	}
	return strings.TrimSpace(cString(buf, int(n)))
}

// errorText returns MPI_Error_string's description of code.
func (l *library) errorText(code int) string {
	buf := make([]byte, maxErrorString+1)
	var n int32
	if call(l.errorString, uintptr(code), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n))) != mpiSuccess {
		return fmt.Sprintf("MPI error %d", code)
	}
	return cString(buf, int(n))
}

// cString returns buf up to its first NUL, at most n bytes when n >= 0.
func cString(buf []byte, n int) string {
	if n >= 0 && n < len(buf) {
		buf = buf[:n]
	}
	if i := strings.IndexByte(string(buf), 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf)
}

// call invokes the C function fn with integer or pointer arguments and
// returns its int status (the low 32 bits of the result register).
// Pointers passed as uintptr(unsafe.Pointer(p)) are kept alive for the
// duration of the call (go:uintptrescapes); libmpi must not keep them
// after the call returns, which holds for the blocking calls used here.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) int {
	r, _, _ := purego.SyscallN(fn, args...)
	return int(int32(uint32(r)))
}
