package dist

import (
	"encoding/binary"
	"fmt"
	"time"

	"lgflow/dist/internal/errs"
)

// Comm is a communicator: the processes (ranks) of a data-parallel job and
// the collective operations among them. Every buffer operation works in
// place. Every rank must call the collectives (every method but Rank, Size
// and SetTimeout) in the same order with the same lengths and roots; a
// buffer's contents may differ between ranks. Implementations are safe
// for concurrent use but run one call at a time.
type Comm interface {
	// Rank returns this process's rank, 0 to Size()-1.
	Rank() int
	// Size returns the number of processes (the world size), at least 1.
	Size() int
	// AllReduceSum32 replaces buf, on every rank, by the elementwise sum
	// of every rank's buf.
	AllReduceSum32(buf []float32) error
	// AllReduceSum64 is AllReduceSum32 for float64.
	AllReduceSum64(buf []float64) error
	// Broadcast32 copies buf of rank root into buf of every other rank.
	Broadcast32(buf []float32, root int) error
	// Broadcast64 is Broadcast32 for float64.
	Broadcast64(buf []float64, root int) error
	// BroadcastBytes is Broadcast32 for bytes.
	BroadcastBytes(buf []byte, root int) error
	// Barrier returns once every rank has called it.
	Barrier() error
	// SetTimeout sets the watchdog of later calls: a call that takes
	// longer returns an error matching ErrTimeout (d <= 0: no watchdog).
	SetTimeout(d time.Duration)
	// Close releases the communicator (a collective: every rank closes).
	// Later calls return an error matching ErrClosed.
	Close() error
}

// ErrTimeout is matched (errors.Is) by the error of a collective that did
// not complete within the Comm's watchdog timeout: a peer died or hangs.
// The Comm is unusable afterwards and the call's buffer may still change:
// exit the process (non-zero, so that the launcher ends the job).
var ErrTimeout = errs.ErrTimeout

// ErrClosed is matched (errors.Is) by the error of a call on a closed Comm.
var ErrClosed = errs.ErrClosed

// Float is the element type of gradient and parameter buffers.
type Float interface{ float32 | float64 }

// AllReduceSum replaces buf, on every rank, by the elementwise sum of every
// rank's buf (c.AllReduceSum32 or c.AllReduceSum64).
func AllReduceSum[T Float](c Comm, buf []T) error {
	switch b := any(buf).(type) {
	case []float32:
		return c.AllReduceSum32(b)
	default:
		return c.AllReduceSum64(any(buf).([]float64))
	}
}

// AllReduceMean replaces buf, on every rank, by the elementwise mean of
// every rank's buf: the sum divided by c.Size(). To average gradients by
// the number of samples when ranks hold different numbers, sum instead
// and divide by the total count.
func AllReduceMean[T Float](c Comm, buf []T) error {
	if err := AllReduceSum(c, buf); err != nil {
		return err
	}
	if n := T(c.Size()); n != 1 {
		for i := range buf {
			buf[i] /= n
		}
	}
	return nil
}

// Broadcast copies buf of rank root into buf of every other rank
// (c.Broadcast32, c.Broadcast64 or c.BroadcastBytes).
func Broadcast[T float32 | float64 | byte](c Comm, buf []T, root int) error {
	switch b := any(buf).(type) {
	case []float32:
		return c.Broadcast32(b, root)
	case []float64:
		return c.Broadcast64(b, root)
	default:
		return c.BroadcastBytes(any(buf).([]byte), root)
	}
}

// BroadcastData returns, on every rank, the data of rank root, whose
// length the other ranks need not know (a configuration, a serialised
// optimiser state): two broadcasts, the length and then the bytes. The
// other ranks' data is ignored; root's result is data itself.
func BroadcastData(c Comm, data []byte, root int) ([]byte, error) {
	var n [8]byte
	if c.Rank() == root {
		binary.LittleEndian.PutUint64(n[:], uint64(len(data)))
	}
	if err := c.BroadcastBytes(n[:], root); err != nil {
		return nil, err
	}
	if c.Rank() == root {
		return data, c.BroadcastBytes(data, root)
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > 1<<40 {
		return nil, fmt.Errorf("dist: BroadcastData: rank %d announced %d bytes", root, size)
	}
	out := make([]byte, size)
	return out, c.BroadcastBytes(out, root)
}
