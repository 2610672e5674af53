package nccl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"lgflow/dist"
	"lgflow/dist/mpi"
	"lgflow/internal/mpitest"
)

// subprocessCase names, in a subprocess's environment, the case it runs
// (see runSubprocessCase).
const subprocessCase = "LGFLOW_NCCL_TEST_CASE"

// runSubprocessCase is a rank of TestOpenTorchrun: Open by the torchrun
// variables, with the fake libnccl, then host collectives and Close.
func runSubprocessCase(name string) int {
	err := func() error {
		if name != "torchrun" {
			return fmt.Errorf("unknown case %q", name)
		}
		env, err := EnvFromOS()
		if err != nil {
			return err
		}
		c, err := Open(Options{Device: &fakeDevice{ordinal: env.LocalRank, stream: 0x5000}, Timeout: 20 * time.Second, RendezvousTimeout: 20 * time.Second})
		if err != nil {
			return err
		}
		if _, ok := c.Bootstrap().(*TCPComm); !ok {
			return fmt.Errorf("bootstrap is %T, want *TCPComm", c.Bootstrap())
		}
		sum := []float64{float64(c.Rank() + 1)}
		if err := c.AllReduceSum64(sum); err != nil {
			return err
		}
		n := float64(c.Size())
		if sum[0] != n*(n+1)/2 {
			return fmt.Errorf("host sum %v", sum[0])
		}
		fmt.Printf("ok rank %d of %d: %v\n", c.Rank(), c.Size(), c)
		return c.Close()
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// TestOpenTorchrun starts 3 processes with torchrun's variables: they meet
// on a localhost port, rank 0's unique id reaches the others (the fake
// ncclCommInitRank checks all 128 bytes), and host collectives work.
func TestOpenTorchrun(t *testing.T) {
	lib := fakeLib(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	const size = 3
	outs := make([]string, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(exe, "-test.run", "^$")
			cmd.Env = append(os.Environ(), subprocessCase+"=torchrun", "LGFLOW_NCCL_LIB="+lib)
			cmd.Env = append(cmd.Env, envList(localEnv(r, size, port))...)
			b, err := cmd.CombinedOutput()
			outs[r], errs[r] = string(b), err
		}()
	}
	wg.Wait()
	for r := range size {
		t.Logf("rank %d: %s", r, strings.TrimSpace(outs[r]))
		if errs[r] != nil || !strings.Contains(outs[r], fmt.Sprintf("ok rank %d of %d", r, size)) {
			t.Errorf("rank %d: %v", r, errs[r])
		}
	}
}

// openJob opens an NCCL Comm on size ranks (goroutines) with the fake
// libnccl, bootstrapped over a TCPComm, each on its own fake device; lib
// gives each rank's library ("" for the fake).
func openJob(t *testing.T, size int, timeout time.Duration, lib func(rank int) string, fn func(c *Comm, d *fakeDevice) error) []error {
	t.Helper()
	fl := fakeLib(t)
	port := freePort(t)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host, err := Rendezvous(localEnv(r, size, port), timeout)
			if err != nil {
				errs[r] = err
				return
			}
			defer host.Close()
			l := fl
			if lib != nil && lib(r) != "" {
				l = lib(r)
			}
			d := &fakeDevice{ordinal: r, stream: uintptr(0x1000 + r)}
			c, err := Open(Options{Device: d, Bootstrap: host, Lib: l, Timeout: timeout})
			if err != nil {
				errs[r] = err
				return
			}
			errs[r] = errors.Join(fn(c, d), c.Close())
		}()
	}
	wg.Wait()
	return errs
}

func ptr[T float32 | float64](s []T) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

// TestDeviceCollectives sums and broadcasts "device" buffers (host memory
// for the fake libnccl) on 1, 2 and 3 ranks, in groups of float32 and
// float64 buffers, on each rank's stream.
func TestDeviceCollectives(t *testing.T) {
	for _, size := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(size, " ranks"), func(t *testing.T) {
			groups0 := fakeCounter(t, "fakeGroupCalls")
			destroys0 := fakeCounter(t, "fakeDestroys")
			errs := openJob(t, size, 10*time.Second, nil, func(c *Comm, d *fakeDevice) error {
				r := c.Rank()
				if c.Device() != dist.Device(d) || c.Size() != size {
					return fmt.Errorf("Device %v Size %d", c.Device(), c.Size())
				}
				a := []float32{float32(r), 1, 2}
				b := make([]float64, 5000)
				for i := range b {
					b[i] = float64(i * (r + 1))
				}
				err := c.AllReduceSumDevice([]dist.DeviceBuffer{
					{Ptr: ptr(a), Len: len(a)}, {}, {Ptr: ptr(b), Len: len(b), Float64: true},
				})
				runtime.KeepAlive(a)
				runtime.KeepAlive(b)
				if err != nil {
					return err
				}
				if got := fakeCounter(t, "fakeLastStream"); size == 1 && got != d.stream {
					return fmt.Errorf("NCCL got stream %#x, the device's is %#x", got, d.stream)
				}
				n := float32(size)
				if a[0] != n*(n-1)/2 || a[1] != n || a[2] != 2*n {
					return fmt.Errorf("float32 sums %v", a)
				}
				for i, x := range b {
					if want := float64(i) * float64(size*(size+1)/2); x != want {
						return fmt.Errorf("float64 sum [%d] = %v, want %v", i, x, want)
					}
				}
				root := size - 1
				w := []float32{float32(r), float32(-r)}
				err = c.BroadcastDevice([]dist.DeviceBuffer{{Ptr: ptr(w), Len: 2}}, root)
				runtime.KeepAlive(w)
				if err != nil {
					return err
				}
				if w[0] != float32(root) || w[1] != float32(-root) {
					return fmt.Errorf("broadcast from %d gave %v", root, w)
				}
				if err := c.BroadcastDevice(nil, size); err == nil {
					return errors.New("a broadcast from a rank outside the job succeeded")
				}
				if err := c.AllReduceSumDevice([]dist.DeviceBuffer{{Ptr: 0, Len: 3}}); err == nil {
					return errors.New("a buffer at address 0 was accepted")
				}
				// The host collectives go through the bootstrap.
				h := []float64{1}
				if err := c.AllReduceSum64(h); err != nil || h[0] != float64(size) {
					return fmt.Errorf("host sum %v, %v", h, err)
				}
				return c.Barrier()
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
			if got := fakeCounter(t, "fakeGroupCalls") - groups0; got != uintptr(2*size) {
				t.Errorf("%d NCCL groups, want 2 per rank", got)
			}
			if got := fakeCounter(t, "fakeDestroys") - destroys0; got != uintptr(size) {
				t.Errorf("%d communicators destroyed, want %d", got, size)
			}
		})
	}
}

// TestWatchdog checks that a device collective that does not complete
// (the stream never drains) or that NCCL reports an asynchronous error for
// aborts the communicator and returns an error naming the rank, within the
// timeout, and that the Comm is unusable afterwards.
func TestWatchdog(t *testing.T) {
	lib := fakeLib(t)
	for _, tc := range []struct {
		name    string
		hang    bool // the stream never drains
		block   bool // queuing never returns
		async   string
		timeout bool
		says    []string
	}{
		{name: "queuing never returns", block: true, timeout: true,
			says: []string{"rank 0", "ncclAllReduce of 4 elements (collective 1) did not complete within 300ms", "queuing it did not return"}},
		{name: "stream never drains", hang: true, timeout: true,
			says: []string{"rank 0", "ncclAllReduce of 4 elements (collective 1) did not complete within 300ms", "exit the process"}},
		{name: "asynchronous error", async: "6",
			says: []string{"rank 0", "ncclCommGetAsyncError", "ncclRemoteError", "fake last error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAKE_NCCL_ASYNC_ERROR", tc.async)
			d := &fakeDevice{stream: 7}
			c, err := Open(Options{Device: d, Bootstrap: dist.Local(), Lib: lib, Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			aborts := fakeCounter(t, "fakeAborts")
			d.hang.Store(tc.hang)
			if tc.block {
				d.block = make(chan struct{}) // never closed: the queuing goroutine stays blocked
			}
			buf := make([]float32, 4)
			start := time.Now()
			err = c.AllReduceSumDevice([]dist.DeviceBuffer{{Ptr: ptr(buf), Len: 4}})
			el := time.Since(start)
			t.Logf("after %v: %v", el.Round(time.Millisecond), err)
			if err == nil {
				t.Fatal("no error")
			}
			if el > 2*time.Second {
				t.Errorf("took %v", el)
			}
			if errors.Is(err, dist.ErrTimeout) != tc.timeout {
				t.Errorf("errors.Is(err, dist.ErrTimeout) = %v", !tc.timeout)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not say %q", s)
				}
			}
			if got := fakeCounter(t, "fakeAborts") - aborts; got != 1 {
				t.Errorf("%d ncclCommAbort calls, want 1", got)
			}
			if err := c.BroadcastDevice([]dist.DeviceBuffer{{Ptr: ptr(buf), Len: 4}}, 0); err == nil || !strings.Contains(err.Error(), "unusable") {
				t.Errorf("after the failure: %v", err)
			}
			if err := c.AllReduceSum64([]float64{1}); err == nil {
				t.Errorf("a host collective after the failure succeeded")
			}
			if err := c.Close(); err != nil {
				t.Errorf("Close after the failure: %v", err)
			}
			if err := c.Barrier(); !errors.Is(err, dist.ErrClosed) {
				t.Errorf("after Close: %v", err)
			}
		})
	}
}

// TestOpenFailures checks Open's errors: no device, a missing or
// unsupported library, and one rank without NCCL (every rank fails, none
// waits for it).
func TestOpenFailures(t *testing.T) {
	lib := fakeLib(t)
	if _, err := Open(Options{Bootstrap: dist.Local(), Lib: lib}); err == nil || !strings.Contains(err.Error(), "Device is nil") {
		t.Errorf("no device: %v", err)
	}
	if _, err := Open(Options{Device: &fakeDevice{}, Bootstrap: dist.Local(), Lib: "/nonexistent/libnccl.so.2"}); !errors.Is(err, ErrLibrary) {
		t.Errorf("missing library: %v", err)
	}
	t.Run("unsupported version", func(t *testing.T) {
		t.Setenv("FAKE_NCCL_VERSION", "30000")
		if _, err := Open(Options{Device: &fakeDevice{}, Bootstrap: dist.Local(), Lib: lib}); !errors.Is(err, ErrUnsupportedVersion) {
			t.Errorf("NCCL 3: %v", err)
		}
	})
	t.Run("no torchrun variables", func(t *testing.T) {
		t.Setenv("RANK", "")
		if _, err := Open(Options{Device: &fakeDevice{}, Lib: lib}); err == nil || !strings.Contains(err.Error(), "not set") {
			t.Errorf("without Bootstrap nor RANK: %v", err)
		}
	})
	t.Run("one rank lacks NCCL", func(t *testing.T) {
		start := time.Now()
		errs := openJob(t, 3, 10*time.Second, func(r int) string {
			if r == 1 {
				return "/nonexistent/libnccl.so.2"
			}
			return ""
		}, func(c *Comm, d *fakeDevice) error { return nil })
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("took %v", el)
		}
		if !errors.Is(errs[1], ErrLibrary) {
			t.Errorf("rank 1: %v", errs[1])
		}
		for _, r := range []int{0, 2} {
			if errs[r] == nil || !strings.Contains(errs[r].Error(), "1 of 3 ranks cannot load NCCL") {
				t.Errorf("rank %d: %v", r, errs[r])
			}
		}
	})
}

// TestOpenOverMPI runs caseOverMPI on 2 ranks under mpirun.
func TestOpenOverMPI(t *testing.T) {
	lib := fakeLib(t)
	r := mpitest.Run(t, mpitest.Job{NP: 2, Case: "nccl-over-mpi", Limit: 60 * time.Second, Env: []string{"LGFLOW_NCCL_LIB=" + lib}})
	t.Logf("mpirun -np 2 (%v):\n%s", r.Elapsed.Round(time.Millisecond), r.Output)
	if r.Err != nil {
		t.Fatalf("mpirun: %v", r.Err)
	}
	for _, want := range []string{"ok nccl-over-mpi rank 0 of 2 on GPU 0", "ok nccl-over-mpi rank 1 of 2 on GPU 1"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// caseOverMPI: under mpirun, the GPU is the local rank (Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK), and Open with the MPI communicator as
// bootstrap carries rank 0's unique id to the other rank by MPI_Bcast (the
// fake ncclCommInitRank checks its 128 bytes); the host collectives go
// through MPI.
func caseOverMPI() error {
	host, err := dist.Open(dist.Options{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	if _, ok := host.(*mpi.Comm); !ok {
		return fmt.Errorf("dist.Open under mpirun returned %T", host)
	}
	local, ok, err := LocalRank()
	if err != nil || !ok || local != host.Rank() {
		return fmt.Errorf("LocalRank() = %d, %v, %v on rank %d of one machine", local, ok, err, host.Rank())
	}
	c, err := Open(Options{Device: &fakeDevice{ordinal: local, stream: 0x100}, Bootstrap: host, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	if c.Bootstrap() != host {
		return errors.New("the NCCL communicator does not use the MPI one")
	}
	sum := []float64{float64(c.Rank() + 1)}
	if err := c.AllReduceSum64(sum); err != nil || sum[0] != 3 {
		return fmt.Errorf("host sum %v, %v", sum, err)
	}
	if err := c.Close(); err != nil {
		return err
	}
	fmt.Printf("ok nccl-over-mpi rank %d of %d on GPU %d\n", c.Rank(), c.Size(), c.Device().Ordinal())
	return host.Close()
}
