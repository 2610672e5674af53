package mpi

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"lgflow/dist/internal/errs"
)

// ErrTimeout is matched (errors.Is) by the error of a call that did not
// complete within the watchdog timeout (a *TimeoutError). It is the same
// value as dist.ErrTimeout.
var ErrTimeout = errs.ErrTimeout

// ErrClosed is matched by the error of a call on a closed Comm. It is the
// same value as dist.ErrClosed.
var ErrClosed = errs.ErrClosed

// Options configures Open.
type Options struct {
	// Lib is the libmpi file to load (a soname or a path). Empty: the file
	// named by the environment variable LGFLOW_MPI_LIB, else DefaultLibs.
	Lib string
	// Timeout is the watchdog: the longest that every collective and
	// Close may take before they return a *TimeoutError and the Comm
	// becomes unusable; MPI_Init_thread gets at least MinInitTimeout. Zero or negative: no watchdog (a
	// collective whose peer hangs then waits for ever; a peer that dies
	// under mpirun gets the whole job ended by mpirun).
	Timeout time.Duration
}

// MinInitTimeout is the least time the watchdog gives MPI_Init_thread:
// the ranks of a job start one by one, and on a busy machine the last can
// reach MPI_Init seconds after the first.
const MinInitTimeout = 30 * time.Second

// Comm is a communicator over every process of an MPI job (a duplicate of
// MPI_COMM_WORLD whose errors are returned, not fatal). It implements
// dist.Comm. Its methods are safe for concurrent use; they run one at a
// time, in the order they take its lock, on the Comm's MPI thread. Every
// rank must make the same collective calls in the same order with the same
// buffer lengths and root; the contents of a buffer may differ.
type Comm struct {
	lib        *library
	rank, size int
	comm       uintptr // the duplicate of MPI_COMM_WORLD
	provided   int     // the thread level MPI_Init_thread provided
	version    string  // MPI_Get_library_version's description

	timeout atomic.Int64 // the watchdog, in nanoseconds (<= 0: none)

	mu     sync.Mutex        // held for the whole of each call; guards the fields below
	reqs   chan func() error // work for the MPI thread
	done   chan error        // its results, one per request
	seq    uint64            // collectives started
	failed error             // the failure that made the Comm unusable
	closed bool
}

// process records whether this process has initialised MPI: MPI can be
// initialised once per process and never again after MPI_Finalize.
var process struct {
	sync.Mutex
	opened bool
}

// maxCount is the largest element count of one MPI call (count is a C
// int); longer buffers are reduced or broadcast in chunks of maxCount
// elements. A variable so that tests can exercise the chunking.
var maxCount = math.MaxInt32

// Open loads libmpi (see Options.Lib), starts the Comm's MPI thread and
// initialises MPI on it with MPI_Init_thread(MPI_THREAD_FUNNELED): every
// later MPI call of the Comm runs on that same OS thread. MPI can be
// opened once per process; a second Open returns an error (share the
// Comm). Under a launcher (mpirun, mpiexec, srun --mpi=pmix) the Comm
// spans the job's processes; started alone, Open MPI makes a job of one
// process (a singleton).
func Open(opts Options) (*Comm, error) {
	process.Lock()
	defer process.Unlock()
	if process.opened {
		return nil, errors.New("dist/mpi: MPI was already opened by this process (MPI is initialised once per process: share the Comm)")
	}
	lib, err := loadLibrary(opts.Lib)
	if err != nil {
		return nil, err
	}
	c := &Comm{lib: lib, rank: -1, version: lib.version(), reqs: make(chan func() error), done: make(chan error, 1)}
	c.timeout.Store(int64(opts.Timeout))
	go serve(c.reqs, c.done)
	process.opened = true // even on failure below: MPI may be half-initialised
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.exec("MPI_Init_thread", "", 0, c.init); err != nil {
		if !errors.Is(err, ErrTimeout) {
			close(c.reqs)
		}
		return nil, err
	}
	return c, nil
}

// LibraryVersion loads libmpi as Open would (lib: as Options.Lib) and
// returns MPI_Get_library_version's description, e.g. "Open MPI v4.1.4,
// package: Debian OpenMPI, ...", without initialising MPI. Its error says
// why Open would fail to load the library.
func LibraryVersion(lib string) (string, error) {
	l, err := loadLibrary(lib)
	if err != nil {
		return "", err
	}
	return l.version(), nil
}

// serve runs the requests of one Comm on one locked OS thread, for
// MPI_THREAD_FUNNELED: MPI is initialised, used and finalised by that
// thread only. It returns when reqs is closed, and its thread exits with it.
func serve(reqs <-chan func() error, done chan<- error) {
	runtime.LockOSThread()
	for f := range reqs {
		done <- f()
	}
}

// init runs on the MPI thread: it initialises MPI, checks the thread
// level, duplicates MPI_COMM_WORLD with errors returned and reads the rank
// and size.
func (c *Comm) init() error {
	l := c.lib
	var flag int32
	if call(l.initialized, uintptr(unsafe.Pointer(&flag))) == mpiSuccess && flag != 0 {
		return fmt.Errorf("dist/mpi: MPI is already initialised in this process (by another library?)")
	}
	if call(l.finalized, uintptr(unsafe.Pointer(&flag))) == mpiSuccess && flag != 0 {
		return fmt.Errorf("dist/mpi: MPI was finalised in this process and cannot be initialised again")
	}
	var provided int32
	if err := c.status("MPI_Init_thread", call(l.initThread, 0, 0, threadFunneled, uintptr(unsafe.Pointer(&provided)))); err != nil {
		return err
	}
	c.provided = int(provided)
	if provided < threadFunneled {
		call(l.finalize)
		return fmt.Errorf("dist/mpi: %s provides thread level MPI_THREAD_%s, lgflow needs MPI_THREAD_FUNNELED", l.file, ThreadLevelName(int(provided)))
	}
	var comm uintptr
	if err := c.status("MPI_Comm_dup", call(l.commDup, l.commWorld, uintptr(unsafe.Pointer(&comm)))); err != nil {
		return err
	}
	c.comm = comm
	if err := c.status("MPI_Comm_set_errhandler", call(l.commSetErrhandler, comm, l.errorsReturn)); err != nil {
		return err
	}
	var rank, size int32
	if err := c.status("MPI_Comm_rank", call(l.commRank, comm, uintptr(unsafe.Pointer(&rank)))); err != nil {
		return err
	}
	if err := c.status("MPI_Comm_size", call(l.commSize, comm, uintptr(unsafe.Pointer(&size)))); err != nil {
		return err
	}
	c.rank, c.size = int(rank), int(size)
	return nil
}

// Rank returns this process's rank, 0 to Size()-1.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of processes in the job.
func (c *Comm) Size() int { return c.size }

// Lib returns the file name libmpi was loaded from.
func (c *Comm) Lib() string { return c.lib.file }

// Version returns MPI_Get_library_version's description of the library.
func (c *Comm) Version() string { return c.version }

// ThreadLevel returns the thread level MPI_Init_thread provided, as
// MPI_THREAD_SINGLE (0) to MPI_THREAD_MULTIPLE (3); at least FUNNELED (1).
func (c *Comm) ThreadLevel() int { return c.provided }

// ThreadLevelName names an MPI thread level: "SINGLE", "FUNNELED",
// "SERIALIZED" or "MULTIPLE".
func ThreadLevelName(level int) string {
	names := strings.Fields(threadNames)
	if level < 0 || level >= len(names) {
		return fmt.Sprintf("level %d", level)
	}
	return names[level]
}

// SetTimeout sets the watchdog of the calls that start afterwards (see
// Options.Timeout; d <= 0: none). A training loop can raise it around a
// phase where some ranks legitimately wait long for others (rank 0
// validating while the others wait in Barrier).
func (c *Comm) SetTimeout(d time.Duration) { c.timeout.Store(int64(d)) }

// Timeout returns the current watchdog timeout (<= 0: none).
func (c *Comm) Timeout() time.Duration { return time.Duration(c.timeout.Load()) }

// AllReduceSum32 replaces buf, on every rank, by the elementwise sum of
// every rank's buf (MPI_Allreduce in place, MPI_SUM on MPI_FLOAT). An
// empty buf returns at once.
func (c *Comm) AllReduceSum32(buf []float32) error {
	return c.reduce("float32", len(buf), c.lib.float32T, func(off int) unsafe.Pointer { return unsafe.Pointer(&buf[off]) })
}

// AllReduceSum64 is AllReduceSum32 for float64 (MPI_DOUBLE).
func (c *Comm) AllReduceSum64(buf []float64) error {
	return c.reduce("float64", len(buf), c.lib.float64T, func(off int) unsafe.Pointer { return unsafe.Pointer(&buf[off]) })
}

// Broadcast32 copies root's buf into every other rank's buf (MPI_Bcast).
// root must be a rank; every rank passes the same length.
func (c *Comm) Broadcast32(buf []float32, root int) error {
	return c.broadcast("float32", len(buf), root, c.lib.float32T, func(off int) unsafe.Pointer { return unsafe.Pointer(&buf[off]) })
}

// Broadcast64 is Broadcast32 for float64.
func (c *Comm) Broadcast64(buf []float64, root int) error {
	return c.broadcast("float64", len(buf), root, c.lib.float64T, func(off int) unsafe.Pointer { return unsafe.Pointer(&buf[off]) })
}

// BroadcastBytes is Broadcast32 for bytes (MPI_BYTE).
func (c *Comm) BroadcastBytes(buf []byte, root int) error {
	return c.broadcast("bytes", len(buf), root, c.lib.byteT, func(off int) unsafe.Pointer { return unsafe.Pointer(&buf[off]) })
}

// Barrier returns once every rank has called it (MPI_Barrier).
func (c *Comm) Barrier() error {
	return c.collective("MPI_Barrier", "", 0, func() error {
		return c.status("MPI_Barrier", call(c.lib.barrier, c.comm))
	})
}

// reduce sums n elements at addr(0) in place, in chunks of maxCount.
// addr(off) returns the address of element off; it is called on the MPI
// thread while the caller waits, so the buffer it captures stays alive.
func (c *Comm) reduce(kind string, n int, dtype uintptr, addr func(off int) unsafe.Pointer) error {
	if n == 0 {
		return c.checkUsable()
	}
	return c.collective("MPI_Allreduce", kind, n, func() error {
		for off := 0; off < n; off += maxCount {
			k := min(maxCount, n-off)
			if err := c.status("MPI_Allreduce", call(c.lib.allreduce, inPlace, uintptr(addr(off)), uintptr(k), dtype, c.lib.opSum, c.comm)); err != nil {
				return err
			}
		}
		return nil
	})
}

// broadcast broadcasts n elements at addr(0) from root, in chunks.
func (c *Comm) broadcast(kind string, n, root int, dtype uintptr, addr func(off int) unsafe.Pointer) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("dist/mpi: rank %d: broadcast root %d is not a rank of a job of %d", c.rank, root, c.size)
	}
	if n == 0 {
		return c.checkUsable()
	}
	return c.collective("MPI_Bcast", kind, n, func() error {
		for off := 0; off < n; off += maxCount {
			k := min(maxCount, n-off)
			if err := c.status("MPI_Bcast", call(c.lib.bcast, uintptr(addr(off)), uintptr(k), dtype, uintptr(root), c.comm)); err != nil {
				return err
			}
		}
		return nil
	})
}

// collective runs f on the MPI thread under the watchdog (see exec).
func (c *Comm) collective(op, kind string, n int, f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	c.seq++
	return c.exec(op, kind, n, f)
}

// exec runs f on the MPI thread and waits for it, at most the watchdog
// timeout. An MPI error or a timeout makes the Comm unusable: MPI's state
// after a failed collective is undefined, and a timed-out call stays
// blocked in libmpi, holding the MPI thread and the buffer. c.mu is held.
func (c *Comm) exec(op, kind string, n int, f func() error) error {
	c.reqs <- f
	d := time.Duration(c.timeout.Load())
	if op == "MPI_Init_thread" && d > 0 {
		d = max(d, MinInitTimeout)
	}
	var err error
	if d <= 0 {
		err = <-c.done
	} else {
		t := time.NewTimer(d)
		select {
		case err = <-c.done:
			t.Stop()
		case <-t.C:
			err = &TimeoutError{Rank: c.rank, Size: c.size, Op: op, Kind: kind, Count: n, Seq: c.seq, Timeout: d}
		}
	}
	if err != nil {
		c.failed = err
	}
	return err
}

// checkUsable is usable, taking c.mu.
func (c *Comm) checkUsable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usable()
}

// usable returns nil when the Comm can run a call. c.mu is held.
func (c *Comm) usable() error {
	if c.closed {
		return fmt.Errorf("dist/mpi: rank %d: %w", c.rank, ErrClosed)
	}
	if c.failed != nil {
		return fmt.Errorf("dist/mpi: rank %d: the communicator is unusable after an earlier failure: %w", c.rank, c.failed)
	}
	return nil
}

// Close frees the communicator and finalises MPI (MPI_Finalize, a
// collective call: every rank closes), under the watchdog, and ends the
// MPI thread. After a failure (a timeout or an MPI error) it does neither
// and returns nil: MPI cannot be finalised safely then, and the process
// should exit with a non-zero status, which makes mpirun end the job.
// Closing twice does nothing.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.failed != nil {
		return nil
	}
	err := c.exec("MPI_Finalize", "", 0, func() error {
		comm := c.comm
		if err := c.status("MPI_Comm_free", call(c.lib.commFree, uintptr(unsafe.Pointer(&comm)))); err != nil {
			return err
		}
		return c.status("MPI_Finalize", call(c.lib.finalize))
	})
	if err == nil {
		close(c.reqs)
	}
	return err
}

// Abort asks the launcher to end every process of the job with exit code
// code (MPI_Abort on MPI_COMM_WORLD); it normally does not return, here
// or on any other rank. Use it when this rank cannot go on but the others
// would otherwise wait for it (a plain non-zero exit ends the job under
// mpirun too). After a timeout the MPI thread is blocked, and Abort calls
// MPI_Abort from the calling thread instead, outside the FUNNELED
// contract, as a last resort. It returns an error if MPI_Abort returns.
func (c *Comm) Abort(code int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	abort := func() error {
		return c.status("MPI_Abort", call(c.lib.abort, c.lib.commWorld, uintptr(code)))
	}
	if c.closed && c.failed == nil {
		return fmt.Errorf("dist/mpi: rank %d: Abort: %w", c.rank, ErrClosed)
	}
	var err error
	if _, timedOut := c.failed.(*TimeoutError); timedOut {
		runtime.LockOSThread()
		err = abort()
		runtime.UnlockOSThread()
	} else {
		c.reqs <- abort
		err = <-c.done
	}
	if err == nil {
		err = fmt.Errorf("dist/mpi: rank %d: MPI_Abort returned", c.rank)
	}
	return err
}

// status converts an MPI return code into an *Error (nil for MPI_SUCCESS).
func (c *Comm) status(op string, code int) error {
	if code == mpiSuccess {
		return nil
	}
	return &Error{Op: op, Code: code, Msg: c.lib.errorText(code), Rank: c.rank}
}

// Error is a failure reported by an MPI function.
type Error struct {
	Op   string // the MPI function, e.g. "MPI_Allreduce"
	Code int    // its return code
	Msg  string // MPI_Error_string's description of the code
	Rank int    // the rank of the process that got the error (-1 before MPI_Comm_rank)
}

// Error returns "dist/mpi: rank r: op: message (MPI error code)".
func (e *Error) Error() string {
	return fmt.Sprintf("dist/mpi: %s%s: %s (MPI error %d)", rankPrefix(e.Rank), e.Op, e.Msg, e.Code)
}

// rankPrefix returns "rank r: ", or "" before the rank is known (r < 0).
func rankPrefix(r int) string {
	if r < 0 {
		return ""
	}
	return fmt.Sprintf("rank %d: ", r)
}

// TimeoutError is the error of a call that did not complete within the
// watchdog timeout. errors.Is(err, ErrTimeout) is true for it. The Comm is
// unusable afterwards, and the buffer of the call may still be written by
// libmpi: the process should exit.
type TimeoutError struct {
	Rank, Size int           // this process's rank and the job's size (-1 and 0 in Open)
	Op         string        // the MPI function, e.g. "MPI_Allreduce"
	Kind       string        // the element type of the buffer ("" for none)
	Count      int           // the number of elements
	Seq        uint64        // the number of the collective, counted from 1 on every rank
	Timeout    time.Duration // the watchdog timeout it exceeded
}

// Error says which call of which rank timed out, and which peer it
// waited for where the job's size tells (2 ranks).
func (e *TimeoutError) Error() string {
	what := e.Op
	if e.Kind != "" {
		what = fmt.Sprintf("%s of %d %s", e.Op, e.Count, e.Kind)
	}
	if e.Seq > 0 {
		what += fmt.Sprintf(" (collective %d)", e.Seq)
	}
	peer := "a peer rank"
	switch {
	case e.Size == 2 && e.Rank >= 0:
		peer = fmt.Sprintf("rank %d", 1-e.Rank)
	case e.Size > 2 && e.Rank >= 0:
		peer = fmt.Sprintf("a rank other than %d (of 0..%d)", e.Rank, e.Size-1)
	}
	return fmt.Sprintf("dist/mpi: %s%s did not complete within %v: %s died or hangs (the communicator is unusable; exit the process)",
		rankPrefix(e.Rank), what, e.Timeout, peer)
}

// Is makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// String describes the communicator, e.g. "Open MPI v4.1.4 (libmpi.so.40),
// rank 0 of 2, MPI_THREAD_FUNNELED".
func (c *Comm) String() string {
	v := c.Version()
	if i := strings.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	return fmt.Sprintf("%s (%s), rank %d of %d, MPI_THREAD_%s", v, c.lib.file, c.rank, c.size, ThreadLevelName(c.provided))
}
