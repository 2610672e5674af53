package mpi

import (
	"errors"
	"lgflow/dist/internal/dl"
	"strings"
	"testing"
	"time"
)

// fakeComm returns a Comm of rank 0 of size with its MPI thread running
// but no library: only calls that fail before reaching libmpi work.
func fakeComm(size int) *Comm {
	c := &Comm{lib: &library{}, rank: 0, size: size, reqs: make(chan func() error), done: make(chan error, 1)}
	go serve(c.reqs, c.done)
	return c
}

// The watchdog, without MPI: a call that blocks on the MPI thread returns
// a *TimeoutError after the timeout, and the Comm is unusable afterwards.
func TestWatchdogNoMPI(t *testing.T) {
	c := fakeComm(2)
	release := make(chan struct{})
	defer close(release)
	if err := c.collective("MPI_Test", "", 0, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	c.SetTimeout(50 * time.Millisecond)
	start := time.Now()
	err := c.collective("MPI_Allreduce", "float32", 12, func() error { <-release; return nil })
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Errorf("returned after %v, want 50ms", took)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) || te.Seq != 2 || te.Count != 12 {
		t.Fatalf("blocked call: %v (%#v), want a *TimeoutError of collective 2", err, te)
	}
	want := "dist/mpi: rank 0: MPI_Allreduce of 12 float32 (collective 2) did not complete within 50ms: rank 1 died or hangs"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want prefix %q", err, want)
	}
	for _, f := range []func() error{c.Barrier, func() error { return c.AllReduceSum32([]float32{1}) },
		func() error { return c.AllReduceSum64(nil) }, func() error { return c.BroadcastBytes([]byte{1}, 1) }} {
		if err := f(); !errors.Is(err, ErrTimeout) {
			t.Errorf("call after a timeout: %v, want the timeout", err)
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close after a timeout: %v", err)
	}
	if err := c.Barrier(); !errors.Is(err, ErrClosed) {
		t.Errorf("Barrier after Close: %v, want ErrClosed", err)
	}
}

func TestArgumentErrorsNoMPI(t *testing.T) {
	c := fakeComm(3)
	for _, root := range []int{-1, 3} {
		if err := c.Broadcast32([]float32{1}, root); err == nil || !strings.Contains(err.Error(), "not a rank") {
			t.Errorf("root %d: %v", root, err)
		}
	}
	// An argument error does not spoil the Comm; an empty buffer needs no MPI.
	if err := c.AllReduceSum32(nil); err != nil {
		t.Errorf("empty all-reduce: %v", err)
	}
	te := &TimeoutError{Rank: 1, Size: 3, Op: "MPI_Barrier", Timeout: time.Second}
	if s := te.Error(); !strings.Contains(s, "rank 1: MPI_Barrier did not complete within 1s: a rank other than 1 (of 0..2)") {
		t.Errorf("3 ranks: %s", s)
	}
	te = &TimeoutError{Rank: -1, Op: "MPI_Init_thread", Timeout: time.Second}
	if s := te.Error(); !strings.HasPrefix(s, "dist/mpi: MPI_Init_thread did not complete within 1s: a peer rank") {
		t.Errorf("before the rank is known: %s", s)
	}
}

func TestLibraryNoMPI(t *testing.T) {
	if _, err := LibraryVersion("libc.so.6"); !errors.Is(err, ErrUnsupportedABI) || !strings.Contains(err.Error(), "not an MPI library") {
		t.Errorf("libc: %v", err)
	}
	if _, err := LibraryVersion("/nonexistent/libmpi.so.40"); err == nil || !strings.Contains(err.Error(), "cannot load Open MPI's libmpi") {
		t.Errorf("missing file: %v", err)
	}
	t.Setenv("LGFLOW_MPI_LIB", "/opt/mpi/libmpi.so")
	if got := dl.Candidates("", "LGFLOW_MPI_LIB", DefaultLibs); len(got) != 1 || got[0] != "/opt/mpi/libmpi.so" {
		t.Errorf("candidates with LGFLOW_MPI_LIB: %v", got)
	}
	if got := dl.Candidates("x.so", "LGFLOW_MPI_LIB", DefaultLibs); len(got) != 1 || got[0] != "x.so" {
		t.Errorf("candidates with Options.Lib: %v", got)
	}
	for level, name := range []string{"SINGLE", "FUNNELED", "SERIALIZED", "MULTIPLE"} {
		if ThreadLevelName(level) != name {
			t.Errorf("ThreadLevelName(%d) = %s", level, ThreadLevelName(level))
		}
	}
}
