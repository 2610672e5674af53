// Package nccl is the GPU engine of package dist: an NCCL communicator over
// one GPU per process, on NVIDIA's libnccl loaded at run time with purego
// (no cgo), so that lgflow builds and runs without NCCL and uses it when
// a job trains on several GPUs. Open returns a *Comm, which implements
// dist.DeviceComm: gradients and parameters are summed and broadcast in
// device memory, on the compute backend's stream, with no copy through
// the host (trainer.AllReduceGrads and trainer.BroadcastState take that
// path when the tensors are on the Comm's device).
//
// # Processes, devices and the unique id
//
// One process per GPU; the GPU of a process is its local rank (LocalRank:
// LOCAL_RANK, or Open MPI's OMPI_COMM_WORLD_LOCAL_RANK). NCCL needs rank 0's
// unique id (ncclGetUniqueId, 128 bytes) on every rank before
// ncclCommInitRank. Open carries it over a host communicator:
//
//   - under mpirun, the MPI engine (Options.Bootstrap = the *mpi.Comm that
//     dist.Open returned): rank 0 broadcasts it with BroadcastBytes;
//   - without MPI, by the torchrun convention (RANK, WORLD_SIZE,
//     LOCAL_RANK, MASTER_ADDR, MASTER_PORT; Env, Rendezvous): rank 0
//     listens on MASTER_PORT, the other ranks connect to
//     MASTER_ADDR:MASTER_PORT, and the resulting *TCPComm carries the id
//     and then the host collectives.
//
// The host collectives of a *Comm (losses, checksums, configurations on Go
// slices) go through that bootstrap communicator.
//
// # Library and versions
//
// NCCL 2 from 2.4 (MinVersion) is supported: libnccl.so.2, or the file
// named by LGFLOW_NCCL_LIB or Options.Lib. The watchdog needs
// ncclCommGetAsyncError and ncclCommAbort (NCCL 2.4); ncclUniqueId is
// passed to ncclCommInitRank by value, a 128-byte struct, which purego
// passes as the platform's C ABI says (on the stack on amd64, by
// reference on arm64). A library that is missing gives an error matching
// ErrLibrary, one of another major version or older than 2.4 an error
// matching ErrUnsupportedVersion.
//
// # Failures
//
// A device collective returns once it completed on the device: it polls
// the stream and ncclCommGetAsyncError until then. A peer that dies makes
// NCCL report an asynchronous error (ncclRemoteError or ncclSystemError)
// or stall; after the watchdog timeout (Options.Timeout, Comm.SetTimeout)
// the call aborts the communicator (ncclCommAbort) and returns a
// *TimeoutError, which names this rank and, on 2 ranks, the peer, and
// matches dist.ErrTimeout. The Comm is unusable afterwards: exit the
// process non-zero. The rendezvous and the *TCPComm fail within their
// timeouts too, naming the rank that did not connect or answer, and at
// once when a peer's connection closes.
//
// # What ran where
//
// The loader's errors, the torchrun rendezvous, the TCP communicator and
// the whole device path (Open, the id's broadcast and its by-value
// passing, grouped all-reduces and broadcasts, the watchdog's abort) are
// tested without a GPU, on a fake libnccl built from testdata/fakenccl.c
// whose "device" memory is host memory. No real libnccl or GPU has run
// this package yet: cuda/GPU_TODO.md lists the checks to run on one.
package nccl
