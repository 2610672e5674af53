// Package mpi is the MPI engine of package dist: a communicator over the
// processes of an MPI job, on Open MPI's libmpi loaded at run time with
// purego (no cgo), so that lgflow builds and runs without MPI and uses it
// when launched by mpirun. Open returns a *Comm, which implements
// dist.Comm; dist.Open calls it under a launcher.
//
// # Library and ABI
//
// Only Open MPI's ABI is supported (Open MPI 3.x to 5.x, soname
// libmpi.so.40; developed and tested with Debian bookworm's Open MPI 4.1,
// packages openmpi-bin and libopenmpi3). Open MPI's predefined handles
// (MPI_COMM_WORLD, MPI_FLOAT, MPI_DOUBLE, MPI_BYTE, MPI_SUM,
// MPI_ERRORS_RETURN) are the addresses of global objects (ompi_mpi_comm_world,
// ompi_mpi_float, ...), read with dlsym. The MPICH family (MPICH, Intel
// MPI, MVAPICH, Cray MPICH) represents handles as integer constants
// compiled into callers; a library without ompi_mpi_comm_world is
// rejected with an error matching ErrUnsupportedABI. The environment
// variable LGFLOW_MPI_LIB names another file to load (Options.Lib too).
//
// # Threads
//
// MPI is initialised with MPI_Init_thread(MPI_THREAD_FUNNELED) on a
// goroutine locked to its OS thread (runtime.LockOSThread), the Comm's MPI
// thread: every MPI call of the Comm, MPI_Finalize included, runs there,
// handed over through a channel, so the calling goroutines may run on any
// thread. FUNNELED is the level every MPI library provides, and Open MPI
// needs no locks for it; Open fails if the library provides less. The
// hand-over costs a few microseconds per call (a one-float all-reduce on
// 2 ranks takes about 7 µs in all).
//
// # Buffers
//
// Collectives work in place on Go slices (MPI_IN_PLACE), which the
// calling goroutine keeps alive while the MPI thread uses them. MPI counts
// are C ints: buffers of more than 2^31-1 elements are reduced and
// broadcast in chunks of at most 2^31-1.
//
// # Failures
//
// The Comm's communicator is a duplicate of MPI_COMM_WORLD whose MPI errors
// are returned (MPI_ERRORS_RETURN) as *Error instead of aborting. Under
// Open MPI 4.1's mpirun, when a rank dies (SIGKILL included) or exits
// non-zero, mpirun notices at once, names the rank ("mpirun noticed that
// process rank 1 ... exited on signal 9"), terminates the other ranks and
// exits non-zero; the survivors get no error, they are ended. A rank that
// hangs, or a job whose launcher does not end it (mpirun
// --enable-recovery), leaves the others blocked in libmpi: the watchdog
// (Options.Timeout, Comm.SetTimeout) then returns a *TimeoutError, which
// names this rank and, on 2 ranks, the peer, and matches ErrTimeout. The
// blocked call cannot be cancelled: the Comm is unusable afterwards (every
// call returns the failure), the buffer may still be written, Close does
// not finalise MPI, and the process should exit non-zero, which makes
// mpirun end the job.
package mpi
