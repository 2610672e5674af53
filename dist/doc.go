// Package dist holds the collectives of data-parallel training: every
// process (rank) of a job trains a replica of the model on its share of
// the batch, sums the gradients with the others (AllReduceSum) before the
// optimiser step, and starts from the same weights, optimiser state and
// configuration (Broadcast from rank 0).
//
// A Comm is one engine's communicator. Local is the single-process one
// (Size 1, every collective a no-op); package lgflow/dist/mpi is the MPI
// engine (Open MPI's libmpi loaded at run time, no cgo). Open picks the
// engine from the environment: under an MPI launcher (mpirun or mpiexec
// of Open MPI, an MPICH-style PMI launcher, srun --mpi=pmix) it opens
// MPI, otherwise it returns Local, so that single-process use needs
// neither MPI nor a change of code:
//
//	c, err := dist.Open(dist.Options{})
//	if err != nil { ... }
//	defer c.Close()
//	// every rank: forward and backward on its share of the batch, then
//	err = dist.AllReduceSum(c, grads) // grads: the flat gradient buffer
//
// On GPUs, package lgflow/dist/nccl is the NCCL engine: a DeviceComm,
// whose AllReduceSumDevice and BroadcastDevice sum and copy buffers in
// device memory (DeviceBuffer) on the compute backend's stream (Device,
// which package cuda's *Backend implements); trainer.AllReduceGrads and
// trainer.BroadcastState take that path when the tensors live on the
// communicator's device. Open does not return it: the GPU of a process
// must be chosen (nccl.LocalRank, cuda.InitDevice) before the engine
// opens, so a GPU command calls nccl.Open itself, with the Comm of Open as
// its bootstrap under mpirun, or none under torchrun's convention.
//
// Every rank must make the same collective calls in the same order, with
// the same buffer lengths and roots. Methods return errors and never panic
// on bad input or a failed peer. A collective that does not complete
// within the watchdog timeout (Options.Timeout) returns an error matching
// ErrTimeout, and the Comm is unusable afterwards: the process should exit
// non-zero, which makes mpirun end the whole job.
package dist
