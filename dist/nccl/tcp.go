package nccl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"lgflow/dist"
)

// DefaultRendezvousTimeout is how long Rendezvous waits, when given no
// timeout, for every rank to connect to rank 0: launchers start ranks
// seconds apart, and a rank that does not come within it never will.
const DefaultRendezvousTimeout = 5 * time.Minute

// TCPComm is a host communicator over TCP for jobs started by the
// torchrun convention (Env), without MPI: rank 0 listens on MASTER_PORT,
// every other rank connects to MASTER_ADDR:MASTER_PORT, and every
// collective goes through rank 0 (a star). It carries NCCL's unique id
// from rank 0 to the others (Open) and the small host collectives of
// training (losses, checksums, configurations); the gradients go through
// NCCL. It implements dist.Comm.
//
// Sums are taken by rank 0 in rank order (rank 0's buffer, plus rank
// 1's, plus rank 2's, ...) and sent back, so every rank gets the same
// bits. Buffers travel in the machine's byte order (every platform lgflow
// runs on is little-endian). A peer that closes its connection (it died)
// fails the collective at once with an error naming it; a peer that hangs
// fails it after the watchdog timeout (SetTimeout), and rank 0 tells the
// other ranks which rank it waited for. Either failure makes the TCPComm
// unusable.
type TCPComm struct {
	rank, size int
	addr       string     // MASTER_ADDR:MASTER_PORT
	peers      []net.Conn // rank 0: peers[r] is rank r's connection (peers[0] nil); others: peers[0], the connection to rank 0

	timeout atomic.Int64 // the watchdog, in nanoseconds (<= 0: none)

	mu      sync.Mutex // held for the whole of each call; guards the fields below
	seq     uint64     // collectives started
	failed  error
	closed  bool
	scratch []byte
}

// The wire format: a handshake, then one frame per rank and collective.
const (
	magic        = "lgflowRV" // the first bytes of a handshake
	protoVersion = 1

	opAllReduce32 = 1
	opAllReduce64 = 2
	opBroadcast   = 3
	opBarrier     = 4
	opError       = 0xff // rank 0 reports a failure; the payload is its message

	headerBytes = 1 + 4 + 8 + 8 // op, root, seq, payload bytes
)

var opNames = map[byte]string{opAllReduce32: "all-reduce of float32", opAllReduce64: "all-reduce of float64",
	opBroadcast: "broadcast", opBarrier: "barrier", opError: "error report"}

// header starts every frame of a collective.
type header struct {
	op   byte
	root uint32
	seq  uint64
	n    uint64 // bytes of payload that follow
}

func (h header) bytes() []byte {
	b := make([]byte, headerBytes)
	b[0] = h.op
	binary.LittleEndian.PutUint32(b[1:], h.root)
	binary.LittleEndian.PutUint64(b[5:], h.seq)
	binary.LittleEndian.PutUint64(b[13:], h.n)
	return b
}

func parseHeader(b []byte) header {
	return header{op: b[0], root: binary.LittleEndian.Uint32(b[1:]), seq: binary.LittleEndian.Uint64(b[5:]), n: binary.LittleEndian.Uint64(b[13:])}
}

// Rendezvous connects the ranks of e: rank 0 listens on e.MasterPort (on
// every interface, as torchrun's store does) and waits for ranks 1 to
// WorldSize-1; the others connect to e.Addr(), retrying until rank 0
// listens. It returns once this rank is connected, or fails after timeout
// (<= 0: DefaultRendezvousTimeout) with an error that names the ranks that
// did not connect (rank 0) or the address that could not be reached. The
// TCPComm's watchdog starts at dist.DefaultTimeout.
func Rendezvous(e Env, timeout time.Duration) (*TCPComm, error) {
	if e.WorldSize < 1 || e.Rank < 0 || e.Rank >= e.WorldSize {
		return nil, fmt.Errorf("dist/nccl: rendezvous: rank %d is not a rank of a job of %d", e.Rank, e.WorldSize)
	}
	if timeout <= 0 {
		timeout = DefaultRendezvousTimeout
	}
	c := &TCPComm{rank: e.Rank, size: e.WorldSize, addr: e.Addr()}
	c.timeout.Store(int64(dist.DefaultTimeout))
	if e.WorldSize == 1 {
		return c, nil
	}
	deadline := time.Now().Add(timeout)
	var err error
	if e.Rank == 0 {
		err = c.serve(e.MasterPort, timeout, deadline)
	} else {
		err = c.dial(timeout, deadline)
	}
	if err != nil {
		c.closeConns()
		return nil, err
	}
	return c, nil
}

// serve is rank 0's side of the rendezvous.
func (c *TCPComm) serve(port int, timeout time.Duration, deadline time.Time) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("dist/nccl: rank 0: cannot listen on port %d (MASTER_PORT) for the other %d ranks: %v", port, c.size-1, err)
	}
	defer ln.Close()
	c.peers = make([]net.Conn, c.size)
	missing := func() string {
		var m []int
		for r := 1; r < c.size; r++ {
			if c.peers[r] == nil {
				m = append(m, r)
			}
		}
		return rankList(m)
	}
	for joined := 1; joined < c.size; {
		_ = ln.(*net.TCPListener).SetDeadline(deadline)
		conn, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return &TimeoutError{Rank: 0, Size: c.size, Op: fmt.Sprintf("rendezvous on port %d", port), Timeout: timeout,
					Detail: fmt.Sprintf("%s of %d did not connect", missing(), c.size)}
			}
			return fmt.Errorf("dist/nccl: rank 0: accepting ranks on port %d: %v", port, err)
		}
		r, err := c.handshakeServer(conn, deadline)
		if errors.Is(err, errStray) {
			conn.Close()
			continue
		}
		if err != nil {
			conn.Close()
			return err
		}
		c.peers[r] = conn
		joined++
	}
	return nil
}

// errStray is the error of a connection that is not a rank's.
var errStray = errors.New("not an lgflow rank")

// handshakeServer reads a rank's handshake and answers it. It returns the
// rank, errStray for a connection that is not an lgflow rank's, or an
// error that ends the rendezvous: a rank of another job size, a rank
// twice.
func (c *TCPComm) handshakeServer(conn net.Conn, deadline time.Time) (int, error) {
	hs := time.Now().Add(10 * time.Second)
	if deadline.Before(hs) {
		hs = deadline
	}
	_ = conn.SetDeadline(hs)
	b := make([]byte, len(magic)+12)
	if _, err := io.ReadFull(conn, b); err != nil || string(b[:len(magic)]) != magic {
		return 0, errStray
	}
	ver := binary.LittleEndian.Uint32(b[len(magic):])
	r := int(binary.LittleEndian.Uint32(b[len(magic)+4:]))
	n := int(binary.LittleEndian.Uint32(b[len(magic)+8:]))
	var bad string
	switch {
	case ver != protoVersion:
		bad = fmt.Sprintf("a peer at %v speaks rendezvous protocol %d, rank 0 speaks %d (different lgflow builds?)", conn.RemoteAddr(), ver, protoVersion)
	case n != c.size:
		bad = fmt.Sprintf("rank %d (at %v) has WORLD_SIZE %d, rank 0 has %d", r, conn.RemoteAddr(), n, c.size)
	case r < 1 || r >= c.size:
		bad = fmt.Sprintf("a peer at %v claims rank %d of a job of %d", conn.RemoteAddr(), r, c.size)
	case c.peers[r] != nil:
		bad = fmt.Sprintf("two processes claim rank %d (from %v and %v): check RANK", r, c.peers[r].RemoteAddr(), conn.RemoteAddr())
	}
	reply := []byte{0}
	if bad != "" {
		reply = append([]byte{1}, bad...)
	}
	_, werr := conn.Write(append(binary.LittleEndian.AppendUint32(nil, uint32(len(reply))), reply...))
	if bad != "" {
		return 0, fmt.Errorf("dist/nccl: rank 0: rendezvous: %s", bad)
	}
	if werr != nil {
		return 0, fmt.Errorf("dist/nccl: rank 0: rendezvous: answering rank %d: %v", r, werr)
	}
	_ = conn.SetDeadline(time.Time{})
	return r, nil
}

// dial is the side of ranks 1 to size-1: connect to rank 0 (retrying
// until it listens) and hand-shake.
func (c *TCPComm) dial(timeout time.Duration, deadline time.Time) error {
	var last error
	for {
		left := time.Until(deadline)
		if left <= 0 {
			if last == nil {
				last = errors.New("no attempt")
			}
			return &TimeoutError{Rank: c.rank, Size: c.size, Op: "rendezvous", Timeout: timeout,
				Detail: fmt.Sprintf("cannot reach rank 0 at %s (MASTER_ADDR:MASTER_PORT): %v", c.addr, last)}
		}
		conn, err := net.DialTimeout("tcp", c.addr, min(left, 5*time.Second))
		if err != nil {
			last = err
			time.Sleep(min(left, 100*time.Millisecond))
			continue
		}
		_ = conn.SetDeadline(deadline)
		b := []byte(magic)
		b = binary.LittleEndian.AppendUint32(b, protoVersion)
		b = binary.LittleEndian.AppendUint32(b, uint32(c.rank))
		b = binary.LittleEndian.AppendUint32(b, uint32(c.size))
		var n [4]byte
		_, err = conn.Write(b)
		if err == nil {
			_, err = io.ReadFull(conn, n[:])
		}
		if err != nil {
			conn.Close()
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return &TimeoutError{Rank: c.rank, Size: c.size, Op: "rendezvous", Timeout: timeout,
					Detail: fmt.Sprintf("rank 0 at %s accepted the connection but did not answer", c.addr)}
			}
			// Rank 0 may be restarting its listener, or something else
			// held the port for a while: retry.
			last = err
			time.Sleep(min(left, 100*time.Millisecond))
			continue
		}
		reply := make([]byte, min(binary.LittleEndian.Uint32(n[:]), 1<<16))
		if _, err := io.ReadFull(conn, reply); err != nil || len(reply) == 0 {
			conn.Close()
			return fmt.Errorf("dist/nccl: rank %d: rendezvous with rank 0 at %s: malformed answer (%v)", c.rank, c.addr, err)
		}
		if reply[0] != 0 {
			conn.Close()
			return fmt.Errorf("dist/nccl: rank %d: rank 0 at %s refused the rendezvous: %s", c.rank, c.addr, reply[1:])
		}
		_ = conn.SetDeadline(time.Time{})
		c.peers = []net.Conn{conn}
		return nil
	}
}

// rankList formats ranks as "rank 2" or "ranks 2, 3".
func rankList(rs []int) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", rs[0])
	}
	s := "ranks "
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(r)
	}
	return s
}

// Rank returns this process's rank.
func (c *TCPComm) Rank() int { return c.rank }

// Size returns the number of processes.
func (c *TCPComm) Size() int { return c.size }

// Addr returns the address of rank 0 (MASTER_ADDR:MASTER_PORT).
func (c *TCPComm) Addr() string { return c.addr }

// SetTimeout sets the watchdog of later calls (d <= 0: none).
func (c *TCPComm) SetTimeout(d time.Duration) { c.timeout.Store(int64(d)) }

// String describes the communicator, e.g. "TCP (rank 0 at host:29500),
// rank 1 of 4".
func (c *TCPComm) String() string {
	return fmt.Sprintf("TCP (rank 0 at %s), rank %d of %d", c.addr, c.rank, c.size)
}

// bytesOf returns the memory of buf as bytes.
func bytesOf[T float32 | float64 | byte](buf []T) []byte {
	if len(buf) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)*int(unsafe.Sizeof(buf[0])))
}

// AllReduceSum32 replaces buf, on every rank, by the elementwise sum of
// every rank's buf, summed in rank order by rank 0.
func (c *TCPComm) AllReduceSum32(buf []float32) error {
	return c.collective(opAllReduce32, 0, bytesOf(buf), func(in []byte) {
		for i, x := range unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(in))), len(buf)) {
			buf[i] += x
		}
	})
}

// AllReduceSum64 is AllReduceSum32 for float64.
func (c *TCPComm) AllReduceSum64(buf []float64) error {
	return c.collective(opAllReduce64, 0, bytesOf(buf), func(in []byte) {
		for i, x := range unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(in))), len(buf)) {
			buf[i] += x
		}
	})
}

// Broadcast32 copies buf of rank root into buf of every other rank.
func (c *TCPComm) Broadcast32(buf []float32, root int) error {
	return c.collective(opBroadcast, root, bytesOf(buf), nil)
}

// Broadcast64 is Broadcast32 for float64.
func (c *TCPComm) Broadcast64(buf []float64, root int) error {
	return c.collective(opBroadcast, root, bytesOf(buf), nil)
}

// BroadcastBytes is Broadcast32 for bytes.
func (c *TCPComm) BroadcastBytes(buf []byte, root int) error {
	return c.collective(opBroadcast, root, buf, nil)
}

// Barrier returns once every rank has called it.
func (c *TCPComm) Barrier() error { return c.collective(opBarrier, 0, nil, nil) }

// Close closes the connections (every rank closes). Later calls return an
// error matching dist.ErrClosed. Closing twice does nothing.
func (c *TCPComm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.closeConns()
	}
	return nil
}

func (c *TCPComm) closeConns() {
	for _, p := range c.peers {
		if p != nil {
			p.Close()
		}
	}
}

// usable returns nil when the communicator can run a call. c.mu is held.
func (c *TCPComm) usable() error {
	if c.closed {
		return fmt.Errorf("dist/nccl: tcp: rank %d: %w", c.rank, dist.ErrClosed)
	}
	if c.failed != nil {
		return fmt.Errorf("dist/nccl: tcp: rank %d: the communicator is unusable after an earlier failure: %w", c.rank, c.failed)
	}
	return nil
}

// collective runs one collective: op on data (this rank's buffer, in
// place), with root for a broadcast, and add (for a sum) adding another
// rank's buffer, given as bytes, to data.
func (c *TCPComm) collective(op byte, root int, data []byte, add func(in []byte)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if root < 0 || root >= c.size {
		return fmt.Errorf("dist/nccl: tcp: rank %d: broadcast root %d is not a rank of a job of %d", c.rank, root, c.size)
	}
	if c.size == 1 {
		return nil
	}
	c.seq++
	h := header{op: op, root: uint32(root), seq: c.seq, n: uint64(len(data))}
	var err error
	if c.rank == 0 {
		err = c.hub(h, data, add)
	} else {
		err = c.spoke(h, data)
	}
	if err != nil {
		c.failed = err
		c.closeConns()
	}
	return err
}

// deadline returns the deadline of a call starting now (zero: none);
// ranks other than 0 wait somewhat longer than rank 0, so that rank 0's
// report of which rank it waited for reaches them before their own
// watchdog fires.
func (c *TCPComm) deadline() (time.Time, time.Duration) {
	d := time.Duration(c.timeout.Load())
	if d <= 0 {
		return time.Time{}, d
	}
	if c.rank != 0 {
		return time.Now().Add(d + d/10 + time.Second), d
	}
	return time.Now().Add(d), d
}

// hasPayload reports whether rank r sends its buffer to rank 0 in
// collective h: every rank for a sum, the root alone for a broadcast.
func hasPayload(h header, r int) bool {
	return h.op == opAllReduce32 || h.op == opAllReduce64 || (h.op == opBroadcast && int(h.root) == r)
}

// hub is rank 0's part: read every rank's frame, in rank order (adding or
// copying its buffer), then answer every rank but a broadcast's root.
func (c *TCPComm) hub(h header, data []byte, add func(in []byte)) error {
	dl, d := c.deadline()
	for r := 1; r < c.size; r++ {
		conn := c.peers[r]
		_ = conn.SetDeadline(dl)
		got, err := c.readFrame(conn, r, h, d)
		if err == nil && (got.op != h.op || got.root != h.root || got.n != h.n) {
			err = fmt.Errorf("dist/nccl: tcp: rank 0: collective %d: rank %d called %s of %d bytes with root %d, rank 0 %s of %d bytes with root %d (the ranks' calls differ)",
				h.seq, r, opNames[got.op], got.n, got.root, opNames[h.op], h.n, h.root)
		}
		if err == nil && hasPayload(h, r) {
			var in []byte
			if in, err = c.readPayload(conn, r, got, d); err == nil {
				if add != nil {
					add(in)
				} else {
					copy(data, in)
				}
			}
		}
		if err != nil {
			c.report(r, err)
			return err
		}
	}
	for r := 1; r < c.size; r++ {
		if h.op == opBroadcast && r == int(h.root) {
			continue
		}
		conn := c.peers[r]
		_ = conn.SetDeadline(dl)
		if err := writeFrame(conn, h, data); err != nil {
			err = c.connError(r, h, d, err)
			c.report(r, err)
			return err
		}
	}
	return nil
}

// report tells every rank but bad that a collective failed (best effort:
// they fail at once rather than after their own timeout, and learn which
// rank failed).
func (c *TCPComm) report(bad int, err error) {
	msg := []byte(err.Error())
	kind := byte(0)
	if errors.Is(err, dist.ErrTimeout) {
		kind = 1
	}
	msg = append([]byte{kind}, msg...)
	for r := 1; r < c.size; r++ {
		if r == bad {
			continue
		}
		_ = c.peers[r].SetWriteDeadline(time.Now().Add(time.Second))
		_ = writeFrame(c.peers[r], header{op: opError, seq: c.seq, n: uint64(len(msg))}, msg)
	}
}

// spoke is the part of ranks 1 to size-1: send this rank's frame (with
// its buffer for a sum, or when it is a broadcast's root), then read rank
// 0's answer (the root of a broadcast gets none).
func (c *TCPComm) spoke(h header, data []byte) error {
	dl, d := c.deadline()
	conn := c.peers[0]
	_ = conn.SetDeadline(dl)
	var payload []byte
	if hasPayload(h, c.rank) {
		payload = data
	}
	if err := writeFrame(conn, h, payload); err != nil {
		return c.connError(0, h, d, err)
	}
	if h.op == opBroadcast && int(h.root) == c.rank {
		return nil
	}
	got, err := c.readFrame(conn, 0, h, d)
	if err != nil {
		return err
	}
	if got.op == opError {
		msg, err := c.readPayload(conn, 0, got, d)
		if err != nil || len(msg) == 0 {
			return fmt.Errorf("dist/nccl: tcp: rank %d: collective %d failed on rank 0 (its report did not arrive: %v)", c.rank, h.seq, err)
		}
		return &PeerError{Rank: c.rank, Seq: h.seq, Msg: string(msg[1:]), timeout: msg[0] == 1}
	}
	if got.op != h.op || got.n != h.n {
		return fmt.Errorf("dist/nccl: tcp: rank %d: collective %d: rank 0 answered %s of %d bytes to %s of %d bytes", c.rank, h.seq, opNames[got.op], got.n, opNames[h.op], h.n)
	}
	if h.op != opBarrier {
		if _, err := io.ReadFull(conn, data); err != nil {
			return c.connError(0, h, d, err)
		}
	}
	return nil
}

// readFrame reads the header of rank peer's frame of collective h.
func (c *TCPComm) readFrame(conn net.Conn, peer int, h header, d time.Duration) (header, error) {
	b := make([]byte, headerBytes)
	if _, err := io.ReadFull(conn, b); err != nil {
		return header{}, c.connError(peer, h, d, err)
	}
	got := parseHeader(b)
	if got.op != opError && got.seq != h.seq {
		return got, fmt.Errorf("dist/nccl: tcp: rank %d: rank %d is at collective %d, this rank at %d (the ranks' calls differ)", c.rank, peer, got.seq, h.seq)
	}
	if _, ok := opNames[got.op]; !ok {
		return got, fmt.Errorf("dist/nccl: tcp: rank %d: malformed frame from rank %d (op %d)", c.rank, peer, got.op)
	}
	return got, nil
}

// readPayload reads the payload of a frame whose header is got.
func (c *TCPComm) readPayload(conn net.Conn, peer int, got header, d time.Duration) ([]byte, error) {
	if got.n > 1<<40 {
		return nil, fmt.Errorf("dist/nccl: tcp: rank %d: rank %d announced %d bytes", c.rank, peer, got.n)
	}
	if uint64(cap(c.scratch)) < got.n {
		c.scratch = make([]byte, got.n)
	}
	in := c.scratch[:got.n]
	if _, err := io.ReadFull(conn, in); err != nil {
		return nil, c.connError(peer, header{op: got.op, seq: got.seq, n: got.n}, d, err)
	}
	return in, nil
}

// writeFrame writes a header and its payload.
func writeFrame(conn net.Conn, h header, payload []byte) error {
	bufs := net.Buffers{h.bytes(), payload}
	_, err := bufs.WriteTo(conn)
	return err
}

// connError describes a failure of the connection to rank peer during
// collective h: a timeout (a *TimeoutError), or the peer gone.
func (c *TCPComm) connError(peer int, h header, d time.Duration, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		detail := fmt.Sprintf("rank %d did not answer", peer)
		if c.rank != 0 {
			detail = "rank 0 did not answer (it waits for every rank: the late rank may be another)"
		}
		return &TimeoutError{Rank: c.rank, Size: c.size, Op: opNames[h.op], Seq: h.seq, Timeout: d, Detail: detail}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("dist/nccl: tcp: rank %d: %s (collective %d): rank %d closed its connection (it exited or died)", c.rank, opNames[h.op], h.seq, peer)
	}
	return fmt.Errorf("dist/nccl: tcp: rank %d: %s (collective %d): connection to rank %d: %v", c.rank, opNames[h.op], h.seq, peer, err)
}

// PeerError is the error of a collective that failed on rank 0 (another
// rank timed out, died, or called another collective), as rank 0 reported
// it to this rank. It matches dist.ErrTimeout when rank 0 timed out.
type PeerError struct {
	Rank    int    // this rank
	Seq     uint64 // the collective's number
	Msg     string // rank 0's error
	timeout bool
}

// Error returns "dist/nccl: rank r: collective n failed on rank 0: msg".
func (e *PeerError) Error() string {
	return fmt.Sprintf("dist/nccl: rank %d: collective %d failed on rank 0: %s", e.Rank, e.Seq, e.Msg)
}

// Is makes errors.Is(err, dist.ErrTimeout) true when rank 0 timed out.
func (e *PeerError) Is(target error) bool { return e.timeout && target == dist.ErrTimeout }

// The TCP communicator implements dist.Comm.
var _ dist.Comm = (*TCPComm)(nil)
