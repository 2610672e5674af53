package nccl

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ebitengine/purego"

	"lgflow/dist/internal/dl"
	"lgflow/internal/mpitest"
)

// The fake libnccl (testdata/fakenccl.c), built once per test binary.
var fake struct {
	once sync.Once
	dir  string
	file string
	err  string
}

// fakeLib returns the path of the fake libnccl, building it with the C
// compiler on first use; without a compiler (or on Windows) the test is
// skipped.
func fakeLib(t testing.TB) string {
	t.Helper()
	fake.once.Do(func() {
		if runtime.GOOS == "windows" {
			fake.err = "NCCL is Linux-only"
			return
		}
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "cc"
		}
		if _, err := exec.LookPath(cc); err != nil {
			fake.err = "no C compiler (" + cc + ") to build the fake libnccl"
			return
		}
		dir, err := os.MkdirTemp("", "fakenccl")
		if err != nil {
			fake.err = err.Error()
			return
		}
		fake.dir = dir
		out := filepath.Join(dir, "libnccl-fake.so.2")
		cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", out, filepath.Join("testdata", "fakenccl.c"), "-lpthread")
		if b, err := cmd.CombinedOutput(); err != nil {
			fake.err = "building the fake libnccl: " + err.Error() + ": " + string(b)
			return
		}
		fake.file = out
	})
	if fake.file == "" {
		t.Skip(fake.err)
	}
	return fake.file
}

func TestMain(m *testing.M) {
	if c := os.Getenv(subprocessCase); c != "" {
		os.Exit(runSubprocessCase(c))
	}
	if mpitest.Child() != "" {
		mpitest.Main(m, map[string]func() error{"nccl-over-mpi": caseOverMPI})
	}
	code := m.Run()
	if fake.dir != "" {
		os.RemoveAll(fake.dir)
	}
	os.Exit(code)
}

// fakeCounter reads one of the fake library's counters (fakeInits,
// fakeAborts, fakeDestroys, fakeCalls, fakeGroupCalls, fakeLastStream).
func fakeCounter(t testing.TB, name string) uintptr {
	t.Helper()
	h, err := dl.Open(fakeLib(t), dl.Local)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dl.Sym(h, name)
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := purego.SyscallN(p)
	if name != "fakeLastStream" {
		r = uintptr(int32(uint32(r)))
	}
	return r
}

// fakeDevice is a dist.Device whose memory is host memory: the fake
// libnccl reads and writes the buffers' addresses directly.
type fakeDevice struct {
	ordinal int
	stream  uintptr
	mu      sync.Mutex
	hang    atomic.Bool   // Done reports false for ever
	block   chan struct{} // when not nil, Do waits for it to close before running fn
	doCalls atomic.Int64
}

func (d *fakeDevice) Ordinal() int { return d.ordinal }

func (d *fakeDevice) Do(fn func(stream uintptr) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d.doCalls.Add(1)
	if d.block != nil {
		<-d.block
	}
	return fn(d.stream)
}

func (d *fakeDevice) Done() (bool, error) { return !d.hang.Load(), nil }

// freePort returns a TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func localEnv(rank, size, port int) Env {
	return Env{Rank: rank, WorldSize: size, LocalRank: rank, MasterAddr: "127.0.0.1", MasterPort: port}
}

// envList formats an Env as torchrun's variables.
func envList(e Env) []string {
	return []string{
		"RANK=" + strconv.Itoa(e.Rank), "WORLD_SIZE=" + strconv.Itoa(e.WorldSize), "LOCAL_RANK=" + strconv.Itoa(e.LocalRank),
		"MASTER_ADDR=" + e.MasterAddr, "MASTER_PORT=" + strconv.Itoa(e.MasterPort),
	}
}
