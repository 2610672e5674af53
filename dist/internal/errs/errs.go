// Package errs holds the sentinel errors that package dist and its engines
// share (dist re-exports them), so that an engine need not import dist.
package errs

import "errors"

// ErrTimeout is matched (errors.Is) by the error of a collective that did not
// complete within the communicator's watchdog timeout.
var ErrTimeout = errors.New("collective timed out: a peer rank died or hangs")

// ErrClosed is matched by the error of a call on a closed communicator.
var ErrClosed = errors.New("communicator is closed")
