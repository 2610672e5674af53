// Package mpitest runs cases of a test binary as the ranks of an MPI job:
// the test re-executes its own binary under mpirun with an environment
// variable that names the case, and the binary's TestMain runs the case
// instead of the tests (see Child).
package mpitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"lgflow/dist/mpi"
)

// Env names the environment variable that carries the case to a child.
const Env = "LGFLOW_DIST_MPI_CASE"

// Child returns the case this process is to run as a rank of an MPI job,
// or "" in an ordinary test run (Main runs it).
func Child() string { return os.Getenv(Env) }

// Main is a test binary's TestMain: in an ordinary run it runs the tests of
// m; in a rank of an MPI job (Child) it runs the case named from cases
// instead and exits 0 when it returns nil, 1 when it fails (saying so on
// stderr, with the rank) and 2 for an unknown case.
func Main(m *testing.M, cases map[string]func() error) {
	name := Child()
	if name == "" {
		os.Exit(m.Run())
	}
	f, ok := cases[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown case %q\n", name)
		os.Exit(2)
	}
	if err := f(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL rank %s: %v\n", os.Getenv("OMPI_COMM_WORLD_RANK"), err)
		os.Exit(1)
	}
	os.Exit(0)
}

var avail struct {
	once    sync.Once
	mpirun  string
	version string
	reason  string
}

// Available returns the path of Open MPI's mpirun and libmpi's version, or
// a reason why MPI tests cannot run here. LGFLOW_DIST_NO_MPI=1 disables
// them.
func Available() (mpirun, version, reason string) {
	avail.once.Do(func() {
		if os.Getenv("LGFLOW_DIST_NO_MPI") == "1" {
			avail.reason = "LGFLOW_DIST_NO_MPI=1"
			return
		}
		p, err := exec.LookPath("mpirun")
		if err != nil {
			avail.reason = "no mpirun on PATH (Debian: apt-get install openmpi-bin libopenmpi3)"
			return
		}
		out, _ := exec.Command(p, "--version").CombinedOutput()
		if !strings.Contains(string(out), "Open MPI") {
			avail.reason = fmt.Sprintf("%s is not Open MPI's mpirun (%q)", p, strings.TrimSpace(string(out)))
			return
		}
		v, err := mpi.LibraryVersion("")
		if err != nil {
			avail.reason = err.Error()
			return
		}
		avail.mpirun, avail.version = p, v
	})
	return avail.mpirun, avail.version, avail.reason
}

// Skip skips t, saying why, unless Open MPI's mpirun and libmpi are here.
func Skip(t testing.TB) {
	t.Helper()
	if _, _, reason := Available(); reason != "" {
		t.Skip("MPI test skipped: " + reason)
	}
}

// Result is the outcome of one mpirun.
type Result struct {
	Output  string        // mpirun's and the ranks' stdout and stderr, interleaved
	Err     error         // the error of mpirun's exit (nil: every rank exited 0)
	Elapsed time.Duration // from start to mpirun's exit
	End     time.Time     // when mpirun exited
	Killed  bool          // mpirun ran past the limit and was stopped
}

// ExitCode returns mpirun's exit status (0 when it succeeded, -1 when it
// was ended by a signal or did not start).
func (r Result) ExitCode() int {
	var ee *exec.ExitError
	if errors.As(r.Err, &ee) {
		return ee.ExitCode()
	}
	if r.Err != nil {
		return -1
	}
	return 0
}

// Job is one run of a case under mpirun.
type Job struct {
	NP    int           // the number of ranks
	Case  string        // the case the ranks run (see Child)
	Limit time.Duration // the job is stopped after this long
	Args  []string      // more mpirun options, before the program
	Env   []string      // more environment variables, "NAME=value"
}

// Command returns mpirun running argv (a program and its arguments) on np
// ranks on loopback (`--allow-run-as-root --oversubscribe`, shared memory
// and TCP on lo only, no probing of network devices), with env added to
// the environment, in a process group of its own that KillGroup ends; ctx
// ending sends mpirun SIGTERM, on which it ends the job. It skips t when
// MPI is not available.
func Command(t testing.TB, ctx context.Context, np int, argv []string, env ...string) *exec.Cmd {
	t.Helper()
	Skip(t)
	mpirun, _, _ := Available()
	args := []string{"--allow-run-as-root", "--oversubscribe", "-np", fmt.Sprint(np),
		"--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", "lo"}
	cmd := exec.CommandContext(ctx, mpirun, append(args, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// KillGroup kills what is left of the process group of a Command: mpirun
// and any rank that outlives it.
func KillGroup(cmd *exec.Cmd) { killGroup(cmd) }

// Run runs job.Case of the current test binary on job.NP ranks under
// mpirun (Command), and stops the job (SIGTERM to mpirun, then SIGKILL to
// its process group) if it runs longer than job.Limit. It skips t when MPI
// is not available.
func Run(t testing.TB, job Job) Result {
	t.Helper()
	Skip(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), job.Limit)
	defer cancel()
	argv := append(append([]string{}, job.Args...), self, "-test.run=^$")
	cmd := Command(t, ctx, job.NP, argv, append([]string{Env + "=" + job.Case}, job.Env...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	end := time.Now()
	r := Result{Output: out.String(), Err: err, Elapsed: end.Sub(start), End: end, Killed: ctx.Err() != nil}
	killGroup(cmd) // ranks that outlived mpirun
	return r
}
