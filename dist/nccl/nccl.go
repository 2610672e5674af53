package nccl

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"lgflow/dist"
)

// Options configures Open.
type Options struct {
	// Device is the GPU of this rank and the stream the collectives run
	// on: the compute backend's (package cuda's *Backend, opened on the
	// device of the local rank, LocalRank). Required.
	Device dist.Device
	// Bootstrap is the host communicator that carries NCCL's unique id
	// from rank 0 to the others and then serves the host collectives
	// (losses, checksums, configurations): typically the MPI engine's
	// *mpi.Comm under mpirun. Nil: Open meets the other ranks by the
	// torchrun convention (EnvFromOS, Rendezvous) and uses the resulting
	// *TCPComm, which the Comm closes with itself.
	Bootstrap dist.Comm
	// Lib is the libnccl file to load (a soname or a path). Empty: the
	// file named by the environment variable LGFLOW_NCCL_LIB, else
	// DefaultLibs.
	Lib string
	// Timeout is the watchdog of ncclCommInitRank, of every collective and
	// of Close (see dist.Comm.SetTimeout), and Open sets it on the
	// bootstrap communicator too. Zero: dist.DefaultTimeout; negative:
	// none.
	Timeout time.Duration
	// RendezvousTimeout bounds the torchrun rendezvous (Bootstrap nil).
	// Zero or negative: DefaultRendezvousTimeout.
	RendezvousTimeout time.Duration
}

// Comm is an NCCL communicator over one GPU per rank. It implements
// dist.DeviceComm: AllReduceSumDevice and BroadcastDevice run NCCL's
// collectives on the Device's stream, in device memory, and return once
// they completed on the device; the host-slice collectives of dist.Comm
// go through the bootstrap communicator. Its methods are safe for
// concurrent use and run one at a time.
//
// Watchdog: after queuing a collective the call polls the stream
// (Device.Done) and ncclCommGetAsyncError, backing off from a few
// microseconds to a millisecond. An asynchronous NCCL error (a peer's
// connection lost: ncclRemoteError, ncclSystemError) or a collective still
// running after the timeout aborts the communicator (ncclCommAbort, which
// also ends the stuck kernels so the stream drains) and returns an
// *Error or a *TimeoutError naming this rank; the Comm is unusable
// afterwards and the process should exit non-zero.
type Comm struct {
	lib       *library
	dev       dist.Device
	host      dist.Comm
	ownsHost  bool
	comm      atomic.Uintptr // the ncclComm_t; 0 once aborted or destroyed
	rank      int
	size      int
	timeout   atomic.Int64
	pollLimit time.Duration // the longest sleep between polls

	mu     sync.Mutex
	seq    uint64
	failed error
	closed bool
}

// Open creates the NCCL communicator of this rank: it loads libnccl
// (checking its version, see MinVersion), meets the other ranks over
// Options.Bootstrap (or the torchrun rendezvous), checks that every rank
// loaded NCCL, has rank 0 create the unique id (ncclGetUniqueId) and
// broadcast it, and calls ncclCommInitRank with the Device's context
// current, under the watchdog. Every rank calls Open at the same point.
// A rank that cannot load NCCL makes every rank's Open fail (with an
// error naming how many could not), rather than leave the others waiting.
func Open(opts Options) (*Comm, error) {
	if opts.Device == nil {
		return nil, errors.New("dist/nccl: Open: Options.Device is nil (open the CUDA backend on this rank's GPU and pass it)")
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = dist.DefaultTimeout
	}
	lib, libErr := loadLibrary(opts.Lib)
	host, owns := opts.Bootstrap, false
	if host == nil {
		env, err := EnvFromOS()
		if err != nil {
			return nil, errors.Join(err, libErr)
		}
		t, err := Rendezvous(env, opts.RendezvousTimeout)
		if err != nil {
			return nil, errors.Join(err, libErr)
		}
		host, owns = t, true
	}
	host.SetTimeout(timeout)
	fail := func(err error) (*Comm, error) {
		if owns {
			host.Close()
		}
		return nil, err
	}
	// Every rank learns whether every rank loaded NCCL.
	flag := []float64{0}
	if libErr != nil {
		flag[0] = 1
	}
	if err := host.AllReduceSum64(flag); err != nil {
		return fail(errors.Join(libErr, fmt.Errorf("dist/nccl: rank %d: checking that every rank loaded NCCL: %w", host.Rank(), err)))
	}
	if libErr != nil {
		return fail(libErr)
	}
	if flag[0] != 0 {
		return fail(fmt.Errorf("dist/nccl: rank %d: %v of %d ranks cannot load NCCL (their errors say why)", host.Rank(), flag[0], host.Size()))
	}
	c := &Comm{lib: lib, dev: opts.Device, host: host, ownsHost: owns, rank: host.Rank(), size: host.Size(), pollLimit: time.Millisecond}
	c.timeout.Store(int64(timeout))
	// Rank 0 creates the id; a status byte tells the others whether it could.
	msg := make([]byte, 1+uniqueIDBytes)
	if c.rank == 0 {
		id, err := lib.uniqueID()
		if err != nil {
			msg[0] = 1
			copy(msg[1:], err.Error())
			if berr := host.BroadcastBytes(msg, 0); berr != nil {
				err = errors.Join(err, berr)
			}
			return fail(err)
		}
		copy(msg[1:], id[:])
	}
	if err := host.BroadcastBytes(msg, 0); err != nil {
		return fail(fmt.Errorf("dist/nccl: rank %d: receiving NCCL's unique id from rank 0: %w", c.rank, err))
	}
	if msg[0] != 0 {
		return fail(fmt.Errorf("dist/nccl: rank %d: rank 0 could not create NCCL's unique id: %s", c.rank, cString(msg[1:])))
	}
	var id uniqueID
	copy(id.Internal[:], msg[1:])
	if err := c.initRank(id); err != nil {
		return fail(err)
	}
	return c, nil
}

// cString returns b up to its first NUL.
func cString(b []byte) string {
	for i, x := range b {
		if x == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// initRank calls ncclCommInitRank with the device current, under the
// watchdog. On a timeout the call stays blocked (ncclCommInitRank gives no
// handle to abort before it returns), holding the device.
func (c *Comm) initRank(id uniqueID) error {
	done := make(chan error, 1)
	go func() {
		done <- c.dev.Do(func(uintptr) error {
			var comm uintptr
			if r := c.lib.initRank(&comm, int32(c.size), id, int32(c.rank)); r != ncclSuccess {
				return &Error{Op: "ncclCommInitRank", Code: int(r), Msg: c.lib.errorText(int(r)), Rank: c.rank, Detail: c.lib.lastError(0)}
			}
			c.comm.Store(comm)
			return nil
		})
	}()
	d := c.Timeout()
	if d <= 0 {
		return <-done
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return &TimeoutError{Rank: c.rank, Size: c.size, Op: "ncclCommInitRank", Timeout: d,
			Detail: fmt.Sprintf("%s did not join (NCCL could not connect the ranks' GPUs, or a rank died)", peerName(c.rank, c.size))}
	}
}

// Rank returns this process's rank.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks.
func (c *Comm) Size() int { return c.size }

// Device returns the device the communicator runs on.
func (c *Comm) Device() dist.Device { return c.dev }

// Bootstrap returns the host communicator (Options.Bootstrap, or the
// *TCPComm of the torchrun rendezvous).
func (c *Comm) Bootstrap() dist.Comm { return c.host }

// Version returns the version of the loaded libnccl.
func (c *Comm) Version() Version { return c.lib.version }

// Lib returns the file libnccl was loaded from.
func (c *Comm) Lib() string { return c.lib.file }

// String describes the communicator, e.g. "NCCL 2.21.5 (libnccl.so.2)
// on GPU 1, rank 1 of 4".
func (c *Comm) String() string {
	return fmt.Sprintf("NCCL %v (%s) on GPU %d, rank %d of %d", c.lib.version, c.lib.file, c.dev.Ordinal(), c.rank, c.size)
}

// SetTimeout sets the watchdog of the calls that start afterwards, device
// and host ones (d <= 0: none).
func (c *Comm) SetTimeout(d time.Duration) {
	c.timeout.Store(int64(d))
	c.host.SetTimeout(d)
}

// Timeout returns the current watchdog timeout (<= 0: none).
func (c *Comm) Timeout() time.Duration { return time.Duration(c.timeout.Load()) }

// AllReduceSum32 sums host buffers over the bootstrap communicator.
func (c *Comm) AllReduceSum32(buf []float32) error {
	return c.hostCall(func() error { return c.host.AllReduceSum32(buf) })
}

// AllReduceSum64 sums host buffers over the bootstrap communicator.
func (c *Comm) AllReduceSum64(buf []float64) error {
	return c.hostCall(func() error { return c.host.AllReduceSum64(buf) })
}

// Broadcast32 broadcasts a host buffer over the bootstrap communicator.
func (c *Comm) Broadcast32(buf []float32, root int) error {
	return c.hostCall(func() error { return c.host.Broadcast32(buf, root) })
}

// Broadcast64 broadcasts a host buffer over the bootstrap communicator.
func (c *Comm) Broadcast64(buf []float64, root int) error {
	return c.hostCall(func() error { return c.host.Broadcast64(buf, root) })
}

// BroadcastBytes broadcasts host bytes over the bootstrap communicator.
func (c *Comm) BroadcastBytes(buf []byte, root int) error {
	return c.hostCall(func() error { return c.host.BroadcastBytes(buf, root) })
}

// Barrier returns once every rank has called it (on the bootstrap
// communicator; device work queued before it is not waited for).
func (c *Comm) Barrier() error { return c.hostCall(c.host.Barrier) }

// hostCall runs a host collective unless the Comm is closed or failed.
func (c *Comm) hostCall(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	return f()
}

// usable returns nil when the Comm can run a call. c.mu is held.
func (c *Comm) usable() error {
	if c.closed {
		return fmt.Errorf("dist/nccl: rank %d: %w", c.rank, dist.ErrClosed)
	}
	if c.failed != nil {
		return fmt.Errorf("dist/nccl: rank %d: the communicator is unusable after an earlier failure: %w", c.rank, c.failed)
	}
	return nil
}

// dtype returns NCCL's data type of a buffer.
func dtype(b dist.DeviceBuffer) uintptr {
	if b.Float64 {
		return ncclFloat64
	}
	return ncclFloat32
}

// AllReduceSumDevice replaces every buffer, on every rank, by the
// elementwise sum of the ranks' buffers: ncclAllReduce in place, on the
// Device's stream, the buffers in one ncclGroupStart/ncclGroupEnd group.
// It returns once the sums are complete on the device.
func (c *Comm) AllReduceSumDevice(bufs []dist.DeviceBuffer) error {
	return c.device("ncclAllReduce", bufs, func(b dist.DeviceBuffer, comm, stream uintptr) int {
		return call(c.lib.allReduce, b.Ptr, b.Ptr, uintptr(b.Len), dtype(b), ncclSum, comm, stream)
	})
}

// BroadcastDevice copies every buffer of rank root into the buffer of
// every other rank: ncclBroadcast in place, on the Device's stream.
func (c *Comm) BroadcastDevice(bufs []dist.DeviceBuffer, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("dist/nccl: rank %d: broadcast root %d is not a rank of a job of %d", c.rank, root, c.size)
	}
	return c.device("ncclBroadcast", bufs, func(b dist.DeviceBuffer, comm, stream uintptr) int {
		return call(c.lib.broadcast, b.Ptr, b.Ptr, uintptr(b.Len), dtype(b), uintptr(root), comm, stream)
	})
}

// device queues op on every non-empty buffer in one NCCL group, on the
// Device's stream, and waits for it under the watchdog.
func (c *Comm) device(op string, bufs []dist.DeviceBuffer, enqueue func(b dist.DeviceBuffer, comm, stream uintptr) int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	n := 0
	for i, b := range bufs {
		if b.Len < 0 || (b.Len > 0 && b.Ptr == 0) {
			return fmt.Errorf("dist/nccl: rank %d: %s: buffer %d has %d elements at device address %#x", c.rank, op, i, b.Len, b.Ptr)
		}
		n += b.Len
	}
	if n == 0 {
		return nil
	}
	c.seq++
	start := time.Now()
	err := c.enqueue(op, n, func(stream uintptr) error {
		// A call that ran late, after a timeout aborted the
		// communicator, must not touch it.
		comm := c.comm.Load()
		if comm == 0 {
			return fmt.Errorf("dist/nccl: rank %d: %s: the communicator was aborted", c.rank, op)
		}
		if r := call(c.lib.groupStart); r != ncclSuccess {
			return c.ncclError("ncclGroupStart", r)
		}
		var first error
		for _, b := range bufs {
			if b.Len == 0 {
				continue
			}
			if r := enqueue(b, comm, stream); r != ncclSuccess && first == nil {
				first = c.ncclError(op, r)
			}
		}
		if r := call(c.lib.groupEnd); r != ncclSuccess && r != ncclInProgress && first == nil {
			first = c.ncclError("ncclGroupEnd", r)
		}
		return first
	})
	if err == nil {
		err = c.wait(op, n, start)
	}
	if err != nil {
		c.fail(err)
	}
	return err
}

// enqueue runs f (queuing NCCL work) through the Device on another
// goroutine and waits for it at most the watchdog timeout: since NCCL
// 2.12 the first collective of a communicator connects the ranks on the
// calling thread, inside ncclGroupEnd, and a peer that died before it
// would leave the call blocked there. On a timeout the call stays
// blocked, holding the device, until the caller's failure aborts the
// communicator (ncclCommAbort, which NCCL allows from another thread).
func (c *Comm) enqueue(op string, n int, f func(stream uintptr) error) error {
	d := c.Timeout()
	if d <= 0 {
		return c.dev.Do(f)
	}
	done := make(chan error, 1)
	go func() { done <- c.dev.Do(f) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return &TimeoutError{Rank: c.rank, Size: c.size, Op: fmt.Sprintf("%s of %d elements", op, n), Seq: c.seq, Timeout: d,
			Detail: "queuing it did not return (NCCL connecting the ranks, or the device busy): " + peerName(c.rank, c.size) + " died or hangs"}
	}
}

// ncclError returns the *Error of NCCL call op with result r.
func (c *Comm) ncclError(op string, r int) *Error {
	return &Error{Op: op, Code: r, Msg: c.lib.errorText(r), Rank: c.rank, Detail: c.lib.lastError(c.comm.Load())}
}

// asyncError returns ncclCommGetAsyncError's error, nil when there is
// none (or the operation is still in progress).
func (c *Comm) asyncError() error {
	var r int32
	if code := call(c.lib.commGetAsyncError, c.comm.Load(), uintptr(unsafe.Pointer(&r))); code != ncclSuccess {
		return c.ncclError("ncclCommGetAsyncError", code)
	}
	if r != ncclSuccess && r != ncclInProgress {
		e := c.ncclError("ncclCommGetAsyncError", int(r))
		e.Detail = joinDetail(e.Detail, fmt.Sprintf("an asynchronous NCCL error during collective %d: %s died or lost its connection?", c.seq, peerName(c.rank, c.size)))
		return e
	}
	return nil
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// wait polls the stream and NCCL's asynchronous error until the work
// queued so far is complete, an error shows, or the watchdog, counted
// from start, fires.
func (c *Comm) wait(op string, n int, start time.Time) error {
	d := c.Timeout()
	sleep := time.Duration(0)
	for {
		done, err := c.dev.Done()
		if err != nil {
			return fmt.Errorf("dist/nccl: rank %d: %s (collective %d): %w", c.rank, op, c.seq, err)
		}
		if err := c.asyncError(); err != nil {
			return err
		}
		if done {
			return nil
		}
		if d > 0 && time.Since(start) > d {
			return &TimeoutError{Rank: c.rank, Size: c.size, Op: fmt.Sprintf("%s of %d elements", op, n), Seq: c.seq, Timeout: d,
				Detail: peerName(c.rank, c.size) + " died or hangs"}
		}
		switch {
		case sleep == 0:
			sleep = 5 * time.Microsecond
			runtime.Gosched()
			continue
		case sleep < c.pollLimit:
			sleep = min(2*sleep, c.pollLimit)
		}
		time.Sleep(sleep)
	}
}

// fail records err, aborting the NCCL communicator (ncclCommAbort ends
// its kernels, so the stream drains). c.mu is held.
func (c *Comm) fail(err error) {
	if c.failed == nil {
		c.failed = err
		c.abort()
	}
}

// abort calls ncclCommAbort once.
func (c *Comm) abort() {
	if comm := c.comm.Swap(0); comm != 0 {
		call(c.lib.commAbort, comm)
	}
}

// Abort aborts the NCCL communicator (ncclCommAbort): queued NCCL
// operations end without completing, on this rank, and the Comm is
// unusable afterwards. Use it when this rank cannot go on: the other
// ranks' collectives then fail through their watchdog or an asynchronous
// error. The host communicator is left as it is.
func (c *Comm) Abort() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("dist/nccl: rank %d: Abort: %w", c.rank, dist.ErrClosed)
	}
	c.fail(fmt.Errorf("dist/nccl: rank %d: aborted", c.rank))
	return nil
}

// Close waits for the queued NCCL work, destroys the communicator
// (ncclCommDestroy, with the device current) under the watchdog, and
// closes the bootstrap communicator when Open created it. After a failure
// the NCCL communicator was aborted already: Close only closes the
// bootstrap communicator. Every rank closes; closing twice does nothing.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var err error
	if c.failed == nil && c.comm.Load() != 0 {
		if err = c.wait("Close", 0, time.Now()); err == nil {
			done := make(chan error, 1)
			comm := c.comm.Swap(0)
			go func() {
				done <- c.dev.Do(func(uintptr) error {
					if r := call(c.lib.commDestroy, comm); r != ncclSuccess {
						return c.ncclError("ncclCommDestroy", r)
					}
					return nil
				})
			}()
			if d := c.Timeout(); d > 0 {
				t := time.NewTimer(d)
				select {
				case err = <-done:
				case <-t.C:
					err = &TimeoutError{Rank: c.rank, Size: c.size, Op: "ncclCommDestroy", Timeout: d, Detail: peerName(c.rank, c.size) + " did not close"}
				}
				t.Stop()
			} else {
				err = <-done
			}
		} else {
			c.fail(err)
		}
	}
	if c.ownsHost {
		err = errors.Join(err, c.host.Close())
	}
	return err
}

// peerName names the ranks other than rank in a job of size: "rank 1" on
// 2 ranks, "a rank other than 2 (of 0..3)" on more.
func peerName(rank, size int) string {
	switch {
	case size == 2 && rank >= 0:
		return fmt.Sprintf("rank %d", 1-rank)
	case size > 2 && rank >= 0:
		return fmt.Sprintf("a rank other than %d (of 0..%d)", rank, size-1)
	}
	return "a peer rank"
}

// Error is a failure reported by an NCCL function.
type Error struct {
	Op     string // the NCCL function, e.g. "ncclAllReduce"
	Code   int    // its ncclResult_t
	Msg    string // the result's name and ncclGetErrorString's description
	Rank   int    // the rank that got the error
	Detail string // ncclGetLastError's description (NCCL 2.13+), and what it suggests
}

// Error returns "dist/nccl: rank r: op: message (detail)".
func (e *Error) Error() string {
	s := fmt.Sprintf("dist/nccl: rank %d: %s: %s", e.Rank, e.Op, e.Msg)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// TimeoutError is the error of a call that did not complete within the
// watchdog timeout (a collective, ncclCommInitRank, the rendezvous).
// errors.Is(err, dist.ErrTimeout) is true for it. The communicator is
// unusable afterwards: the process should exit non-zero.
type TimeoutError struct {
	Rank, Size int           // this process's rank and the job's size
	Op         string        // what timed out, e.g. "ncclAllReduce of 1200000 elements"
	Seq        uint64        // the number of the collective, counted from 1 on every rank (0: not a collective)
	Timeout    time.Duration // the timeout it exceeded
	Detail     string        // which rank it waited for, where known
}

// Error says which call of which rank timed out, and what it waited for.
func (e *TimeoutError) Error() string {
	what := e.Op
	if e.Seq > 0 {
		what += fmt.Sprintf(" (collective %d)", e.Seq)
	}
	s := fmt.Sprintf("dist/nccl: rank %d: %s did not complete within %v", e.Rank, what, e.Timeout)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Seq > 0 || strings.HasPrefix(e.Op, "nccl") {
		s += " (the communicator is unusable; exit the process)"
	}
	return s
}

// Is makes errors.Is(err, dist.ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == dist.ErrTimeout }

// The NCCL engine implements dist.DeviceComm.
var _ dist.DeviceComm = (*Comm)(nil)
