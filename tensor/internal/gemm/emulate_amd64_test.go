//go:build amd64 && !noasm

package gemm

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestEmulatedKernels checks the machine code of the assembly kernels
// (packed and the three direct forms), including the AVX-512 ones that cannot run on
// machines without AVX-512,
// by interpreting objdump's disassembly of this test binary with
// testdata/emulate_kernel.py and comparing the tiles with a reference.
// The emulator is itself checked by running the AVX2 kernels through it.
// It is skipped when python3 or objdump is missing.
func TestEmulatedKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (objdump of the test binary)")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("objdump (binutils) not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	s2, s512, d2, s2d, s512d, s2t, s512t, s2b, s512b := kernelAddrs()
	cmd := exec.Command(python, "testdata/emulate_kernel.py", self,
		fmt.Sprintf("sgemmKernelAVX512:%#x:12:32:4", s512),
		fmt.Sprintf("sgemmKernelAVX2:%#x:6:16:4", s2),
		fmt.Sprintf("dgemmKernelAVX2:%#x:6:8:8", d2),
		fmt.Sprintf("sgemmKernelAVX512Direct:%#x:12:32:4:direct", s512d),
		fmt.Sprintf("sgemmKernelAVX2Direct:%#x:6:16:4:direct", s2d),
		fmt.Sprintf("sgemmKernelAVX512DirectT:%#x:12:32:4:directT", s512t),
		fmt.Sprintf("sgemmKernelAVX2DirectT:%#x:6:16:4:directT", s2t),
		fmt.Sprintf("sgemmKernelAVX512DirectB:%#x:12:32:4:directB", s512b),
		fmt.Sprintf("sgemmKernelAVX2DirectB:%#x:6:16:4:directB", s2b))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("emulate_kernel.py: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "match the reference"); got != 9 {
		t.Fatalf("emulate_kernel.py checked %d kernels, want 9:\n%s", got, out)
	}
	t.Logf("%s", out)
}
