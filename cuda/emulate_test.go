package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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

// emulatedBackend returns a Backend on the fake libcuda/libcublas, or skips
// t unless LGFLOW_CUDA_EMULATE=1 and g++ and NVRTC are there.
func emulatedBackend(t *testing.T) *Backend {
	t.Helper()
	if os.Getenv("LGFLOW_CUDA_EMULATE") != "1" {
		t.Skip("set LGFLOW_CUDA_EMULATE=1 to run (needs g++ and NVRTC)")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++")
	}
	if _, err := loadNVRTC(defaultLibs.nvrtc); err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	lib := buildFakeCUDA(t, gxx)
	b, err := open(libNames{cuda: []string{lib}, cublas: []string{lib}, nvrtc: defaultLibs.nvrtc}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildFakeCUDA compiles the kernels with testdata/emu into a shared library
// exporting the driver and cuBLAS functions the backend uses.
func buildFakeCUDA(t *testing.T, gxx string) string {
	src, err := kernelSource()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("#include \"emu.h\"\n")
	b.WriteString(src)
	b.WriteString("\n#include \"fake.inc\"\nstatic void register_all() {\n")
	for _, e := range allKernelExprs() {
		fmt.Fprintf(&b, "\treg(%q, &%s);\n", e, e)
	}
	b.WriteString("}\n")
	dir := t.TempDir()
	cc := filepath.Join(dir, "fakecuda.cc")
	if err := os.WriteFile(cc, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	inc, err := filepath.Abs("testdata/emu")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libfakecuda.so")
	args := []string{"-std=c++17", "-O1", "-g", "-shared", "-fPIC", "-w", "-I", inc, "-o", lib, cc}
	args = append(args, strings.Fields(os.Getenv("LGFLOW_CUDA_EMULATE_CFLAGS"))...)
	cmd := exec.Command(gxx, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fake CUDA library: %v\n%s", err, out)
	}
	return lib
}
