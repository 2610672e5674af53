package dist_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"lgflow/dist"
	"lgflow/dist/mpi"
	"lgflow/internal/mpitest"
)

func TestMain(m *testing.M) {
	mpitest.Main(m, map[string]func() error{"data-parallel": caseDataParallel})
}

func TestLocal(t *testing.T) {
	c := dist.Local()
	if c.Rank() != 0 || c.Size() != 1 {
		t.Fatalf("rank %d size %d", c.Rank(), c.Size())
	}
	f32, f64, b := []float32{1, 2.5}, []float64{-3, 4}, []byte("cfg")
	for _, err := range []error{
		dist.AllReduceSum(c, f32), dist.AllReduceSum(c, f64),
		dist.AllReduceMean(c, f32), dist.AllReduceMean(c, f64),
		dist.AllReduceSum(c, []float32{}), dist.AllReduceMean(c, []float64(nil)),
		dist.Broadcast(c, f32, 0), dist.Broadcast(c, f64, 0), dist.Broadcast(c, b, 0),
		c.Barrier(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if f32[0] != 1 || f32[1] != 2.5 || f64[0] != -3 || f64[1] != 4 || string(b) != "cfg" {
		t.Fatalf("buffers changed: %v %v %q", f32, f64, b)
	}
	if got, err := dist.BroadcastData(c, []byte("config"), 0); err != nil || string(got) != "config" {
		t.Fatalf("BroadcastData: %q, %v", got, err)
	}
	for _, root := range []int{1, -1} {
		if err := c.Broadcast32(f32, root); err == nil {
			t.Errorf("Broadcast32 from root %d succeeded", root)
		}
	}
	c.SetTimeout(1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.AllReduceSum32(f32); !errors.Is(err, dist.ErrClosed) {
		t.Errorf("AllReduceSum32 after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// clearLaunchEnv removes the MPI launchers' variables for the test.
func clearLaunchEnv(t *testing.T) {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"} {
		if old, ok := os.LookupEnv(v); ok {
			os.Unsetenv(v)
			t.Cleanup(func() { os.Setenv(v, old) })
		}
	}
}

func TestLaunched(t *testing.T) {
	clearLaunchEnv(t)
	if l := dist.Launched(); l.MPI || l.Rank != -1 || l.Size != -1 {
		t.Errorf("no launcher: %+v", l)
	}
	c, err := dist.Open(dist.Options{})
	if err != nil || c.Size() != 1 {
		t.Fatalf("Open without a launcher: %v, %v", c, err)
	}
	c.Close()

	t.Setenv("PMI_RANK", "3")
	t.Setenv("PMI_SIZE", "8")
	if l := dist.Launched(); !l.MPI || l.Launcher != "PMI" || l.Rank != 3 || l.Size != 8 {
		t.Errorf("PMI: %+v", l)
	}
	t.Setenv("PMIX_RANK", "2")
	if l := dist.Launched(); !l.MPI || l.Launcher != "PMIx" || l.Rank != 2 {
		t.Errorf("PMIx: %+v", l)
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "4")
	t.Setenv("OMPI_COMM_WORLD_RANK", "1")
	if l := dist.Launched(); !l.MPI || l.Launcher != "Open MPI" || l.Rank != 1 || l.Size != 4 {
		t.Errorf("Open MPI: %+v", l)
	}
}

// Under a launcher, Open fails clearly when libmpi is missing or is not
// Open MPI's, and never falls back to Local. (MPI is never initialised
// here: the library is rejected before.)
func TestOpenBadLibrary(t *testing.T) {
	clearLaunchEnv(t)
	t.Setenv("PMI_RANK", "0")
	t.Setenv("PMI_SIZE", "2")
	_, err := dist.Open(dist.Options{MPILib: "/nonexistent/libmpi.so.40"})
	if err == nil || !strings.Contains(err.Error(), "MPI launcher (PMI, rank 0)") || !strings.Contains(err.Error(), "cannot load Open MPI's libmpi") {
		t.Errorf("missing libmpi: %v", err)
	}
	// A library that is not MPI at all (the C library).
	_, err = dist.Open(dist.Options{MPILib: "libc.so.6"})
	if !errors.Is(err, mpi.ErrUnsupportedABI) {
		t.Errorf("libc as libmpi: %v, want ErrUnsupportedABI", err)
	}
	t.Log(err)
	// MPICH's library (Debian's libmpich12), where installed.
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libmpich.so.12"); err == nil {
		_, err = dist.Open(dist.Options{MPILib: "libmpich.so.12"})
		if !errors.Is(err, mpi.ErrUnsupportedABI) || !strings.Contains(err.Error(), "MPICH-family") {
			t.Errorf("MPICH's libmpich.so.12: %v, want ErrUnsupportedABI naming the MPICH family", err)
		}
		t.Log(err)
	}
}
