package nccl

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Env is the torchrun launch convention: what torchrun (torch.distributed
// .run), and launchers that imitate it (Kubernetes' PyTorchJob, Slurm
// scripts), tell every process in its environment.
type Env struct {
	Rank       int    // RANK: this process's rank, 0 to WorldSize-1
	WorldSize  int    // WORLD_SIZE: the number of processes
	LocalRank  int    // LOCAL_RANK: the rank among this machine's processes (the GPU)
	MasterAddr string // MASTER_ADDR: the host of rank 0 (a name or an address)
	MasterPort int    // MASTER_PORT: the TCP port rank 0 listens on
}

// Addr returns MasterAddr:MasterPort, for net.Dial.
func (e Env) Addr() string { return net.JoinHostPort(e.MasterAddr, strconv.Itoa(e.MasterPort)) }

// TorchrunEnv reports whether the environment follows the torchrun
// convention: RANK and WORLD_SIZE are set.
func TorchrunEnv() bool {
	_, rank := os.LookupEnv("RANK")
	_, size := os.LookupEnv("WORLD_SIZE")
	return rank && size
}

// EnvFromOS reads the torchrun variables from the process environment (see
// ParseEnv).
func EnvFromOS() (Env, error) { return ParseEnv(os.LookupEnv) }

// ParseEnv reads the torchrun variables through lookup (os.LookupEnv, or a
// map's in tests). RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are
// required; LOCAL_RANK defaults to Open MPI's OMPI_COMM_WORLD_LOCAL_RANK,
// else to 0 when WORLD_SIZE is 1. The error names the variable that is
// missing or wrong.
func ParseEnv(lookup func(string) (string, bool)) (Env, error) {
	var e Env
	num := func(name string, p *int, lo, hi int) error {
		s, ok := lookup(name)
		if !ok || strings.TrimSpace(s) == "" {
			return fmt.Errorf("dist/nccl: torchrun convention: %s is not set (set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, or start under mpirun)", name)
		}
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < lo || v > hi {
			return fmt.Errorf("dist/nccl: torchrun convention: %s=%q is not a whole number from %d to %d", name, s, lo, hi)
		}
		*p = v
		return nil
	}
	const maxInt32 = 1<<31 - 1
	if err := num("WORLD_SIZE", &e.WorldSize, 1, maxInt32); err != nil {
		return Env{}, err
	}
	if err := num("RANK", &e.Rank, 0, e.WorldSize-1); err != nil {
		return Env{}, err
	}
	if _, ok := lookup("LOCAL_RANK"); ok {
		if err := num("LOCAL_RANK", &e.LocalRank, 0, maxInt32); err != nil {
			return Env{}, err
		}
	} else if _, ok := lookup("OMPI_COMM_WORLD_LOCAL_RANK"); ok {
		if err := num("OMPI_COMM_WORLD_LOCAL_RANK", &e.LocalRank, 0, maxInt32); err != nil {
			return Env{}, err
		}
	} else if e.WorldSize > 1 {
		return Env{}, fmt.Errorf("dist/nccl: torchrun convention: LOCAL_RANK is not set (it chooses the GPU of rank %d of %d)", e.Rank, e.WorldSize)
	}
	addr, ok := lookup("MASTER_ADDR")
	addr = strings.TrimSpace(addr)
	if !ok || addr == "" {
		return Env{}, fmt.Errorf("dist/nccl: torchrun convention: MASTER_ADDR is not set (the host of rank 0)")
	}
	e.MasterAddr = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	if err := num("MASTER_PORT", &e.MasterPort, 1, 65535); err != nil {
		return Env{}, err
	}
	return e, nil
}

// LocalRank returns the rank of this process among the processes of its
// machine, which chooses its GPU: LOCAL_RANK (torchrun), else
// OMPI_COMM_WORLD_LOCAL_RANK (Open MPI's mpirun), else MPI_LOCALRANKID
// (MPICH's Hydra), else SLURM_LOCALID (srun), else 0 with ok false.
func LocalRank() (rank int, ok bool, err error) {
	for _, name := range []string{"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"} {
		s, set := os.LookupEnv(name)
		if !set || strings.TrimSpace(s) == "" {
			continue
		}
		v, perr := strconv.Atoi(strings.TrimSpace(s))
		if perr != nil || v < 0 {
			return 0, false, fmt.Errorf("dist/nccl: %s=%q is not a local rank (a whole number from 0)", name, s)
		}
		return v, true, nil
	}
	return 0, false, nil
}
