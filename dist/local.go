package dist

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Local returns the communicator of a single process: Rank 0, Size 1, the
// all-reduces and broadcasts leave their buffers as they are, Barrier
// returns at once. Its calls fail only with a root other than 0 or after
// Close.
func Local() Comm { return &local{} }

type local struct{ closed atomic.Bool }

func (l *local) Rank() int                  { return 0 }
func (l *local) Size() int                  { return 1 }
func (l *local) SetTimeout(d time.Duration) {}

// String describes the engine.
func (l *local) String() string { return "local (1 process)" }

func (l *local) check(root int) error {
	if l.closed.Load() {
		return fmt.Errorf("dist: local: %w", ErrClosed)
	}
	if root != 0 {
		return fmt.Errorf("dist: local: broadcast root %d is not a rank of a job of 1", root)
	}
	return nil
}

func (l *local) AllReduceSum32(buf []float32) error        { return l.check(0) }
func (l *local) AllReduceSum64(buf []float64) error        { return l.check(0) }
func (l *local) Broadcast32(buf []float32, root int) error { return l.check(root) }
func (l *local) Broadcast64(buf []float64, root int) error { return l.check(root) }
func (l *local) BroadcastBytes(buf []byte, root int) error { return l.check(root) }
func (l *local) Barrier() error                            { return l.check(0) }
func (l *local) Close() error                              { l.closed.Store(true); return nil }
