package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"lgflow/dist"
	"lgflow/internal/cli"
	"lgflow/tensor"
	"lgflow/trainer"
)

// openComm returns the communicator of a training command (dist.Open):
// under mpirun the MPI job's, which makes the run data parallel, else one
// process (dist.Local) and nothing changes. closeComm ends it. The
// collectives' watchdog is dist.DefaultTimeout, or $LGFLOW_DIST_TIMEOUT
// (a duration such as 90s): a rank that waits longer for the others
// exits with an error naming the rank it waited for.
func openComm() (dist.Comm, error) {
	timeout, err := distTimeout()
	if err != nil {
		return nil, err
	}
	c, err := dist.Open(dist.Options{Timeout: timeout})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// distTimeout returns the watchdog $LGFLOW_DIST_TIMEOUT sets (0: unset,
// dist.DefaultTimeout) and makes trainer.OnRoot return to it after
// waiting for rank 0.
func distTimeout() (time.Duration, error) {
	v := os.Getenv("LGFLOW_DIST_TIMEOUT")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("LGFLOW_DIST_TIMEOUT=%q: want a positive duration such as 90s or 10m", v)
	}
	trainer.StepTimeout = d
	return d, nil
}

// openTraining returns the communicator and the backend of a training
// command (train-vae, train-flow): openComm's communicator and -device's
// backend, or on a GPU in a job of several processes NCCL's communicator
// (cli.Device.TrainBackend). done closes what it opened at the end of a
// command that returns *err (closeComm).
func openTraining(device *cli.Device) (comm dist.Comm, be tensor.Backend, done func(*error), err error) {
	boot, err := openComm()
	if err != nil {
		return nil, nil, nil, err
	}
	be, comm, err = device.TrainBackend(rankOut(boot, stderr), boot)
	if err != nil {
		return nil, nil, nil, err
	}
	if comm != boot {
		comm.SetTimeout(trainer.StepTimeout)
	}
	done = func(err *error) {
		if comm != boot {
			closeComm(comm, err)
		}
		closeComm(boot, err)
	}
	return comm, be, done, nil
}

// closeComm closes c at the end of a command that returns *err: on
// success (a collective on every rank); after an error it leaves c open,
// so that the process exits non-zero at once and the launcher ends the
// other ranks, rather than wait for ranks that may be gone.
func closeComm(c dist.Comm, err *error) {
	if *err != nil {
		return
	}
	if cerr := c.Close(); cerr != nil {
		*err = fmt.Errorf("closing the communicator of the job's processes: %w", cerr)
	}
}

// rankOut returns w on rank 0 of c and io.Discard on the others, so that
// a job's ranks do not repeat rank 0's messages.
func rankOut(c dist.Comm, w io.Writer) io.Writer {
	if c.Rank() == 0 {
		return w
	}
	return io.Discard
}
