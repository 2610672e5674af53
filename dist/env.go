package dist

import (
	"fmt"
	"os"
	"time"

	"lgflow/dist/mpi"
)

// DefaultTimeout is the watchdog Open gives an MPI communicator when
// Options.Timeout is zero: long enough for any one training step, short
// enough that a job whose rank hangs does not hold its machines for ever.
const DefaultTimeout = 10 * time.Minute

// Options configures Open.
type Options struct {
	// Timeout is the watchdog of every collective (see Comm.SetTimeout).
	// Zero: DefaultTimeout; negative: none.
	Timeout time.Duration
	// MPILib is the libmpi file to load under an MPI launcher (see
	// mpi.Options.Lib; empty: LGFLOW_MPI_LIB, else libmpi.so.40).
	MPILib string
}

// Launch describes how the environment says this process was started.
type Launch struct {
	// MPI is true under an MPI launcher.
	MPI bool
	// Launcher names it: "Open MPI" (OMPI_COMM_WORLD_SIZE is set),
	// "PMIx" (PMIX_RANK), "PMI" (PMI_RANK or PMI_SIZE: MPICH's Hydra,
	// Intel MPI, srun --mpi=pmi2); "" when MPI is false.
	Launcher string
	// Rank and Size are the rank and world size the environment gives,
	// -1 where it gives none.
	Rank, Size int
}

// Launched reads the environment variables MPI launchers set for their
// processes: Open MPI's OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE,
// PMIx's PMIX_RANK, and PMI's PMI_RANK and PMI_SIZE.
func Launched() Launch {
	num := func(name string) int {
		var v int
		if s, ok := os.LookupEnv(name); !ok || s == "" {
			return -1
		} else if _, err := fmt.Sscan(s, &v); err != nil {
			return -1
		}
		return v
	}
	_, ompi := os.LookupEnv("OMPI_COMM_WORLD_SIZE")
	_, pmix := os.LookupEnv("PMIX_RANK")
	_, pmiRank := os.LookupEnv("PMI_RANK")
	_, pmiSize := os.LookupEnv("PMI_SIZE")
	switch {
	case ompi:
		return Launch{MPI: true, Launcher: "Open MPI", Rank: num("OMPI_COMM_WORLD_RANK"), Size: num("OMPI_COMM_WORLD_SIZE")}
	case pmix:
		return Launch{MPI: true, Launcher: "PMIx", Rank: num("PMIX_RANK"), Size: -1}
	case pmiRank || pmiSize:
		return Launch{MPI: true, Launcher: "PMI", Rank: num("PMI_RANK"), Size: num("PMI_SIZE")}
	}
	return Launch{Rank: -1, Size: -1}
}

// Open returns the communicator the environment asks for: under an MPI
// launcher (see Launched), the MPI engine (mpi.Open: Open MPI's libmpi,
// loaded at run time; its *mpi.Comm is returned), otherwise Local. Under
// a launcher it fails, rather than fall back to Local, when libmpi cannot
// be loaded or is not Open MPI's (errors.Is(err, mpi.ErrUnsupportedABI)):
// the other ranks would otherwise wait for it, or every rank would train
// alone. It fails too when MPI's rank or size differ from the launcher's
// (Open MPI under another MPI's launcher makes a job of each process).
func Open(opts Options) (Comm, error) {
	env := Launched()
	if !env.MPI {
		return Local(), nil
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	c, err := mpi.Open(mpi.Options{Lib: opts.MPILib, Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("dist: started by an MPI launcher (%s, rank %d), but MPI cannot be used: %w", env.Launcher, env.Rank, err)
	}
	// Open MPI started by another MPI's launcher makes every process a job
	// of its own (a singleton): each would train alone.
	if (env.Size >= 0 && c.Size() != env.Size) || (env.Rank >= 0 && c.Rank() != env.Rank) {
		err := fmt.Errorf("dist: the %s launcher says rank %d of %d, but %s says rank %d of %d: start lgflow with Open MPI's mpirun",
			env.Launcher, env.Rank, env.Size, c.Lib(), c.Rank(), c.Size())
		c.Close()
		return nil, err
	}
	return c, nil
}

// The MPI engine implements Comm.
var _ Comm = (*mpi.Comm)(nil)
