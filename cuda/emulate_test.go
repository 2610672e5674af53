package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"

	"lgflow/tensor/backendtest"
)

// TestEmulatedConformance runs the conformance suite on a Backend whose
// libcuda and libcublas are fakes on host memory (testdata/emu): the
// kernels are compiled twice, by NVRTC (for their lowered names, exactly as
// on a GPU) and by g++ as host C++, and run one block at a time with every
// CUDA thread a fiber. It checks the host code, the argument packing and
// the kernels' arithmetic without a GPU (not the memory model or cuBLAS).
// It needs g++ and an NVRTC library, takes a minute or two, and runs only
// with LGFLOW_CUDA_EMULATE=1. LGFLOW_CUDA_EMULATE_CFLAGS adds compiler flags,
// e.g. -fsanitize=address (then run the test binary with
// LD_PRELOAD=$(g++ -print-file-name=libasan.so)).
func TestEmulatedConformance(t *testing.T) {
	b := emulatedBackend(t)
	t.Logf("emulated device: %+v", b.Device())
	for _, det := range []bool{true, false} {
		b.SetDeterministic(det)
		t.Run(fmt.Sprintf("deterministic=%v", det), func(t *testing.T) {
			if !det {
				// Only the methods that depend on the mode.
				t.Run("ScatterAdd", func(t *testing.T) { backendtest.RunOne(t, b, "ScatterAdd") })
				t.Run("SegmentSum", func(t *testing.T) { backendtest.RunOne(t, b, "SegmentSum") })
				return
			}
			backendtest.Run(t, b)
		})
	}
	t.Run("Extras", func(t *testing.T) { extras(t, b, 10) })
	st := b.MemStats()
	t.Logf("allocator: %+v", st)
	b.EmptyCache()
	if st2 := b.MemStats(); st2.Cached != 0 || st2.Reserved != st2.InUse {
		t.Errorf("after EmptyCache: %+v", st2)
	}
}

// The fake library and the Backend on it are built once per test process
// (compiling takes most of a minute) and shared by the emulated tests.
var (
	emuOnce    sync.Once
	emuBackend *Backend
	emuLib     uintptr // dlopen handle of the fake library
	emuDir     string  // temporary directory holding it
	emuSkip    string  // why the emulator cannot run, if it cannot
	emuErr     error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if emuDir != "" {
		os.RemoveAll(emuDir)
	}
	os.Exit(code)
}

// emulatedBackend returns the Backend on the fake libcuda/libcublas, or
// skips t unless LGFLOW_CUDA_EMULATE=1 and g++ and NVRTC are there.
func emulatedBackend(t *testing.T) *Backend {
	t.Helper()
	if os.Getenv("LGFLOW_CUDA_EMULATE") != "1" {
		t.Skip("set LGFLOW_CUDA_EMULATE=1 to run (needs g++ and NVRTC)")
	}
	emuOnce.Do(func() {
		gxx, err := exec.LookPath("g++")
		if err != nil {
			emuSkip = "no g++"
			return
		}
		if _, err := loadNVRTC(defaultLibs.nvrtc); err != nil {
			emuSkip = fmt.Sprintf("no NVRTC: %v", err)
			return
		}
		if emuDir, err = os.MkdirTemp("", "lgflow-fakecuda"); err != nil {
			emuErr = err
			return
		}
		lib, err := buildFakeCUDA(emuDir, gxx)
		if err != nil {
			emuErr = err
			return
		}
		if emuLib, err = purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL); err != nil {
			emuErr = err
			return
		}
		emuBackend, emuErr = open(libNames{cuda: []string{lib}, cublas: []string{lib}, nvrtc: defaultLibs.nvrtc}, 0)
	})
	if emuSkip != "" {
		t.Skip(emuSkip)
	}
	if emuErr != nil {
		t.Fatal(emuErr)
	}
	return emuBackend
}

// fakeCall calls a test hook of the fake library (fakecuda_*).
func fakeCall(t *testing.T, name string, args ...uintptr) int {
	t.Helper()
	fn, err := purego.Dlsym(emuLib, name)
	if err != nil {
		t.Fatalf("fake CUDA library: %v", err)
	}
	return call(fn, args...)
}

// failAllocsAfter makes the fake cuMemAlloc fail with out-of-memory after
// n more successful allocations, until the test ends.
func failAllocsAfter(t *testing.T, n int) {
	t.Helper()
	fakeCall(t, "fakecuda_fail_allocs", uintptr(n))
	t.Cleanup(func() { fakeCall(t, "fakecuda_fail_allocs", ^uintptr(0)) })
}

// buildFakeCUDA compiles the kernels with testdata/emu into a shared library
// in dir exporting the driver and cuBLAS functions the backend uses.
func buildFakeCUDA(dir, gxx string) (string, error) {
	src, err := kernelSource()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#include \"emu.h\"\n")
	b.WriteString(src)
	b.WriteString("\n#include \"fake.inc\"\nstatic void register_all() {\n")
	for _, e := range allKernelExprs() {
		fmt.Fprintf(&b, "\treg(%q, &%s);\n", e, e)
	}
	b.WriteString("}\n")
	cc := filepath.Join(dir, "fakecuda.cc")
	if err := os.WriteFile(cc, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	inc, err := filepath.Abs("testdata/emu")
	if err != nil {
		return "", err
	}
	args := []string{"-std=c++17", "-O1", "-g", "-shared", "-fPIC", "-w", "-I", inc}
	args = append(args, strings.Fields(os.Getenv("LGFLOW_CUDA_EMULATE_CFLAGS"))...)
	// A library built from the same sources and flags is reused from the
	// user's cache directory (the build takes most of a minute).
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%q\x00", b.String(), args)
	for _, f := range []string{"emu.h", "fake.inc"} {
		data, err := os.ReadFile(filepath.Join(inc, f))
		if err != nil {
			return "", err
		}
		h.Write(data)
	}
	cached := ""
	if cdir, err := os.UserCacheDir(); err == nil {
		cached = filepath.Join(cdir, "lgflow", "fakecuda", hex.EncodeToString(h.Sum(nil))[:24]+".so")
		if _, err := os.Stat(cached); err == nil {
			return cached, nil
		}
	}
	lib := filepath.Join(dir, "libfakecuda.so")
	cmd := exec.Command(gxx, append(args, "-o", lib, cc)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the fake CUDA library: %v\n%s", err, out)
	}
	if cached != "" {
		// Best effort: copy into the cache and rename into place.
		if data, err := os.ReadFile(lib); err == nil && os.MkdirAll(filepath.Dir(cached), 0o755) == nil {
			tmp := cached + ".tmp" + strconv.Itoa(os.Getpid())
			if os.WriteFile(tmp, data, 0o755) == nil && os.Rename(tmp, cached) != nil {
				os.Remove(tmp)
			}
		}
	}
	return lib, nil
}
