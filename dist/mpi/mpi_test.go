package mpi_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"lgflow/dist/mpi"
	"lgflow/internal/mpitest"
)

func TestMain(m *testing.M) { mpitest.Main(m, cases) }

// cases are the bodies that run as ranks under mpirun. Each returns an
// error, printed and turned into exit status 1; nil exits 0.
var cases = map[string]func() error{
	"collectives": caseCollectives,
	"watchdog":    caseWatchdog,
	"sigkill":     caseSigkill,
	"bench":       caseBench,
}

// value is the deterministic element i of rank r's buffer: magnitudes
// from 1e-3 to 1e3, both signs.
func value(r, i int) float64 {
	x := uint64(r+1)*0x9E3779B97F4A7C15 + uint64(i)*0xBF58476D1CE4E5B9
	x ^= x >> 31
	x *= 0x94D049BB133111EB
	x ^= x >> 29
	u := float64(x>>11) / (1 << 53) // [0, 1)
	return (u - 0.5) * math.Pow(10, float64(int(x%7))-3)
}

func fill32(r, n int) []float32 {
	b := make([]float32, n)
	for i := range b {
		b[i] = float32(value(r, i))
	}
	return b
}

func fill64(r, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = value(r, i)
	}
	return b
}

// sum32 is what one process computes: the ranks' values summed in rank
// order in float32.
func sum32(size, n int) []float32 {
	out := make([]float32, n)
	for r := range size {
		for i, v := range fill32(r, n) {
			out[i] += v
		}
	}
	return out
}

func sum64(size, n int) []float64 {
	out := make([]float64, n)
	for r := range size {
		for i, v := range fill64(r, n) {
			out[i] += v
		}
	}
	return out
}

// near compares got to want: bit for bit on 2 ranks (a + b is the same
// in either order), to a few ulps of the terms otherwise.
func near[T float32 | float64](size int, got, want []T, eps float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if size == 2 && d != 0 || d > eps*float64(size)*(1e3) {
			return fmt.Errorf("element %d of %d: %v, want %v", i, len(got), got[i], want[i])
		}
	}
	return nil
}

func envInt(name string) int {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return -1
	}
	return v
}

var lengths = []int{0, 1, 2, 7, 1000, 65537, 300007}

func caseCollectives() error {
	c, err := mpi.Open(mpi.Options{Timeout: 20 * time.Second})
	if err != nil {
		return err
	}
	rank, size := c.Rank(), c.Size()
	if rank != envInt("OMPI_COMM_WORLD_RANK") || size != envInt("OMPI_COMM_WORLD_SIZE") {
		return fmt.Errorf("rank %d size %d, environment says %s of %s", rank, size, os.Getenv("OMPI_COMM_WORLD_RANK"), os.Getenv("OMPI_COMM_WORLD_SIZE"))
	}
	if c.ThreadLevel() < 1 {
		return fmt.Errorf("thread level %d", c.ThreadLevel())
	}
	if rank == 0 {
		fmt.Println("engine:", c)
	}
	if _, err := mpi.Open(mpi.Options{}); err == nil {
		return errors.New("a second Open succeeded")
	}
	// Go's own signal handling survives MPI_Init: a nil dereference
	// (SIGSEGV) and an integer division by zero (SIGFPE) are panics.
	for _, f := range []func(){
		func() { var p *int; _ = *p },
		func() { z := 0; _ = 1 / z },
	} {
		if !panics(f) {
			return errors.New("a runtime error did not panic after MPI_Init")
		}
	}
	runtime.GC()

	check := func(tag string) error {
		for _, n := range lengths {
			b32 := fill32(rank, n)
			if err := c.AllReduceSum32(b32); err != nil {
				return err
			}
			if err := near(size, b32, sum32(size, n), 1e-7); err != nil {
				return fmt.Errorf("%s AllReduceSum32 of %d: %v", tag, n, err)
			}
			b64 := fill64(rank, n)
			if err := c.AllReduceSum64(b64); err != nil {
				return err
			}
			if err := near(size, b64, sum64(size, n), 1e-16); err != nil {
				return fmt.Errorf("%s AllReduceSum64 of %d: %v", tag, n, err)
			}
			root := size - 1
			p32, p64 := fill32(rank, n), fill64(rank, n)
			pb := make([]byte, n)
			for i := range pb {
				pb[i] = byte(value(rank, i) * 1e3)
			}
			if err := c.Broadcast32(p32, root); err != nil {
				return err
			}
			if err := c.Broadcast64(p64, root); err != nil {
				return err
			}
			if err := c.BroadcastBytes(pb, root); err != nil {
				return err
			}
			w32, w64 := fill32(root, n), fill64(root, n)
			for i := range n {
				if p32[i] != w32[i] || p64[i] != w64[i] || pb[i] != byte(value(root, i)*1e3) {
					return fmt.Errorf("%s Broadcast of %d from %d: element %d differs", tag, n, root, i)
				}
			}
		}
		return c.Barrier()
	}
	if err := check("whole"); err != nil {
		return err
	}
	restore := mpi.SetMaxCount(7) // every call of more than 7 elements in chunks
	err = check("chunked")
	restore()
	if err != nil {
		return err
	}
	if err := c.Broadcast32(make([]float32, 3), size); err == nil {
		return errors.New("Broadcast from root == size succeeded")
	}
	if err := c.Broadcast64(make([]float64, 3), -1); err == nil {
		return errors.New("Broadcast from root -1 succeeded")
	}
	// The 1.2M-float gradient of the flow cpu preset.
	g := fill32(rank, 1_200_000)
	if err := c.AllReduceSum32(g); err != nil {
		return err
	}
	if err := near(size, g, sum32(size, len(g)), 1e-7); err != nil {
		return fmt.Errorf("AllReduceSum32 of 1.2M: %v", err)
	}
	if err := c.Close(); err != nil {
		return err
	}
	if err := c.Barrier(); !errors.Is(err, mpi.ErrClosed) {
		return fmt.Errorf("Barrier after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("second Close: %v", err)
	}
	fmt.Printf("ok collectives rank %d of %d\n", rank, size)
	return nil
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// caseWatchdog: rank 1 hangs (sleeps instead of reducing); rank 0's
// all-reduce must return ErrTimeout after its 2 s watchdog.
func caseWatchdog() error {
	c, err := mpi.Open(mpi.Options{Timeout: 20 * time.Second})
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if c.Rank() != 0 {
		time.Sleep(60 * time.Second)
		return errors.New("rank 1 was not stopped")
	}
	c.SetTimeout(2 * time.Second)
	buf := make([]float32, 1000)
	start := time.Now()
	err = c.AllReduceSum32(buf)
	took := time.Since(start)
	var te *mpi.TimeoutError
	if !errors.Is(err, mpi.ErrTimeout) || !errors.As(err, &te) {
		return fmt.Errorf("AllReduceSum32 with a hung peer: %v, want ErrTimeout", err)
	}
	if took < 2*time.Second || took > 10*time.Second {
		return fmt.Errorf("the watchdog fired after %v, want 2s", took)
	}
	if !strings.Contains(err.Error(), "rank 1") {
		return fmt.Errorf("the error does not name rank 1: %v", err)
	}
	if err := c.Barrier(); err == nil || !errors.Is(err, mpi.ErrTimeout) {
		return fmt.Errorf("Barrier after a timeout: %v, want the timeout", err)
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("Close after a timeout: %v", err)
	}
	fmt.Printf("WATCHDOG-OK after %v: %v\n", took.Round(time.Millisecond), err)
	os.Exit(3) // as a training command would: non-zero, without MPI_Finalize
	return nil
}

// caseSigkill: rank 1 kills itself with SIGKILL after a few all-reduces;
// rank 0 keeps reducing, under a 20 s watchdog (LGFLOW_DIST_TEST_TIMEOUT), until it fails or is
// ended by mpirun.
func caseSigkill() error {
	timeout := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("LGFLOW_DIST_TEST_TIMEOUT")); err == nil {
		timeout = d
	}
	c, err := mpi.Open(mpi.Options{Timeout: timeout})
	if err != nil {
		return err
	}
	buf := make([]float32, 100_000)
	start := time.Now()
	for i := range 100_000 {
		if i == 5 && c.Rank() == 1 {
			fmt.Printf("rank 1: SIGKILL at %d\n", time.Now().UnixNano())
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Kill() // SIGKILL
			}
			time.Sleep(time.Minute)
		}
		if err := c.AllReduceSum32(buf); err != nil {
			fmt.Printf("SURVIVOR-ERROR rank %d after %v: %v\n", c.Rank(), time.Since(start).Round(time.Millisecond), err)
			os.Exit(4)
		}
	}
	return errors.New("100000 all-reduces completed with a dead peer")
}

func TestCollectives(t *testing.T) {
	r := mpitest.Run(t, mpitest.Job{NP: 2, Case: "collectives", Limit: 60 * time.Second})
	t.Logf("mpirun -np 2 (%v):\n%s", r.Elapsed.Round(time.Millisecond), r.Output)
	if r.Err != nil {
		t.Fatalf("mpirun: %v", r.Err)
	}
	for _, want := range []string{"ok collectives rank 0 of 2", "ok collectives rank 1 of 2"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestWatchdog(t *testing.T) {
	r := mpitest.Run(t, mpitest.Job{NP: 2, Case: "watchdog", Limit: 60 * time.Second})
	t.Logf("mpirun -np 2 (%v, exit %d):\n%s", r.Elapsed.Round(time.Millisecond), r.ExitCode(), r.Output)
	if !strings.Contains(r.Output, "WATCHDOG-OK") {
		t.Fatal("rank 0 did not report the timeout")
	}
	if r.ExitCode() == 0 || r.Killed {
		t.Errorf("mpirun: exit %d, killed %v; want a non-zero exit of its own", r.ExitCode(), r.Killed)
	}
	if r.Elapsed > 30*time.Second {
		t.Errorf("the job took %v to end", r.Elapsed)
	}
}

// TestSigkill: Open MPI's default: mpirun notices the killed rank and
// ends the job at once (the survivor is terminated by mpirun).
func TestSigkill(t *testing.T) {
	r := mpitest.Run(t, mpitest.Job{NP: 2, Case: "sigkill", Limit: 90 * time.Second})
	t.Logf("mpirun -np 2 (%v, exit %d, %s):\n%s", r.Elapsed.Round(time.Millisecond), r.ExitCode(), sinceKill(r), r.Output)
	if r.Killed || r.Elapsed > 60*time.Second {
		t.Fatalf("the job ran %v after a rank's SIGKILL (stopped by the test: %v)", r.Elapsed, r.Killed)
	}
	if r.ExitCode() == 0 {
		t.Errorf("mpirun exited 0 after a rank's SIGKILL")
	}
	if !strings.Contains(r.Output, "rank 1") {
		t.Errorf("the output does not name rank 1")
	}
}

// TestSigkillRecovery: with mpirun --enable-recovery the job is not ended
// when a rank dies; the survivor's all-reduce then waits for the dead
// peer, and the watchdog (3 s here) returns an error naming it. (mpirun
// itself then exits 0 in Open MPI 4.1, whatever its ranks' statuses: the
// survivor's status is checked through its output.)
func TestSigkillRecovery(t *testing.T) {
	r := mpitest.Run(t, mpitest.Job{NP: 2, Case: "sigkill", Limit: 90 * time.Second,
		Args: []string{"--enable-recovery"}, Env: []string{"LGFLOW_DIST_TEST_TIMEOUT=3s"}})
	t.Logf("mpirun --enable-recovery -np 2 (%v, exit %d, %s):\n%s", r.Elapsed.Round(time.Millisecond), r.ExitCode(), sinceKill(r), r.Output)
	if r.Killed || r.Elapsed > 60*time.Second {
		t.Fatalf("the job ran %v after a rank's SIGKILL (stopped by the test: %v)", r.Elapsed, r.Killed)
	}
	if !strings.Contains(r.Output, "SURVIVOR-ERROR rank 0") || !strings.Contains(r.Output, "rank 1 died or hangs") {
		t.Errorf("the survivor did not report an error naming rank 1")
	}
}

// sinceKill says how long the job outlived the SIGKILL of rank 1.
func sinceKill(r mpitest.Result) string {
	var ns int64
	for line := range strings.Lines(r.Output) {
		if _, err := fmt.Sscanf(line, "rank 1: SIGKILL at %d", &ns); err == nil {
			return fmt.Sprintf("ended %v after the SIGKILL", r.End.Sub(time.Unix(0, ns)).Round(time.Millisecond))
		}
	}
	return "no SIGKILL seen"
}
