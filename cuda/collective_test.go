package cuda

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lgflow/autograd"
	"lgflow/dist"
	"lgflow/dist/nccl"
	"lgflow/optim"
	"lgflow/tensor"
	"lgflow/trainer"
)

// The backend is a device for device communicators, and its tensors are
// recognised by trainer's device path.
var (
	_ dist.Device                = (*Backend)(nil)
	_ trainer.DeviceBackend      = (*Backend)(nil)
	_ interface{ Ordinal() int } = (*Backend)(nil)
)

func TestDeviceForLocalRank(t *testing.T) {
	for _, tc := range []struct {
		local   int
		visible string
		want    int
	}{
		{3, "", 3},
		{3, "0,1,2,3", 3},
		{3, "5", 0},
		{1, "GPU-8a1b2c3d-0000-1111-2222-333344445555", 0},
		{1, "MIG-1234", 0},
		{2, " 7 ", 0},
		{2, "none", 2},
	} {
		if got := deviceForLocalRank(tc.local, tc.visible); got != tc.want {
			t.Errorf("deviceForLocalRank(%d, %q) = %d, want %d", tc.local, tc.visible, got, tc.want)
		}
	}
}

// TestInitDevice checks that InitDevice agrees with Default: the same
// backend on device 0, or the same error without a GPU, and an error for
// a negative or different device.
func TestInitDevice(t *testing.T) {
	if _, err := InitDevice(-1); err == nil {
		t.Error("InitDevice(-1) succeeded")
	}
	b, err := InitDevice(0)
	d, derr := Default()
	if b != d || (err == nil) != (derr == nil) {
		t.Fatalf("InitDevice(0) = %p, %v; Default = %p, %v", b, err, d, derr)
	}
	if err != nil {
		t.Logf("no GPU: %v", err)
		return
	}
	if b.Ordinal() != 0 {
		t.Errorf("Ordinal = %d", b.Ordinal())
	}
	if _, err := InitDevice(1); err == nil || !strings.Contains(err.Error(), "already opened on device 0") {
		t.Errorf("InitDevice(1) after device 0: %v", err)
	}
}

// countingComm counts the device and host collectives of a DeviceComm.
type countingComm struct {
	dist.DeviceComm
	dev, host int
}

func (c *countingComm) AllReduceSumDevice(bufs []dist.DeviceBuffer) error {
	c.dev++
	return c.DeviceComm.AllReduceSumDevice(bufs)
}

func (c *countingComm) AllReduceSum32(buf []float32) error {
	c.host++
	return c.DeviceComm.AllReduceSum32(buf)
}

func (c *countingComm) AllReduceSum64(buf []float64) error {
	c.host++
	return c.DeviceComm.AllReduceSum64(buf)
}

// TestNCCLSingleRank checks NCCL on the GPU with a communicator of one
// rank (see checkNCCL). It skips without a GPU, or without libnccl unless
// LGFLOW_REQUIRE_NCCL=1.
func TestNCCLSingleRank(t *testing.T) {
	b := gpuBackend(t)
	v, file, err := nccl.LibraryVersion("")
	if err != nil {
		if os.Getenv("LGFLOW_REQUIRE_NCCL") == "1" {
			t.Fatalf("LGFLOW_REQUIRE_NCCL=1: %v", err)
		}
		t.Skipf("no NCCL: %v", err)
	}
	t.Logf("NCCL %v (%s) on %s", v, file, b.Device().Name)
	checkNCCL(t, b, "", 1)
}

// TestEmulatedNCCL runs checkNCCL on the emulated backend with the fake
// libnccl of package dist/nccl (its "device" memory is host memory, as the
// emulator's is), whose sums are doubled: the device path must write the
// tensors' own memory.
func TestEmulatedNCCL(t *testing.T) {
	b := emulatedBackend(t)
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler for the fake libnccl")
	}
	lib := filepath.Join(t.TempDir(), "libnccl-fake.so.2")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, filepath.Join("..", "dist", "nccl", "testdata", "fakenccl.c"), "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("building the fake libnccl: %v\n%s", err, out)
	}
	t.Setenv("FAKE_NCCL_SCALE", "2")
	checkNCCL(t, b, lib, 2)
}

// checkNCCL opens a one-rank NCCL communicator on b (lib: the libnccl
// file, "" for the default) and checks: an all-reduce of a known device
// buffer of 1M+3 float32 and of float64 (each element times scale, the
// number of identical ranks the library's sums stand for) and a
// broadcast; that trainer.AllReduceGrads takes the device path for a
// flattened model on b (one device call per step, no host call); and that
// 3 training steps through it give the weights of 3 steps without it, bit
// for bit (with scale 1).
func checkNCCL(t *testing.T, b *Backend, lib string, scale float64) {
	c, err := nccl.Open(nccl.Options{Device: b, Bootstrap: dist.Local(), Lib: lib, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	t.Logf("communicator: %v", c)

	t.Run("buffers", func(t *testing.T) {
		n := 1<<20 + 3
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(i%1000) - 500
		}
		x := tensor.FromFloat32(vals, n).ToBackend(b)
		y := tensor.FromFloat64([]float64{1.5, -2, math.Pi}, 3).ToBackend(b)
		px, err := b.DevicePointer(x)
		if err != nil {
			t.Fatal(err)
		}
		py, _ := b.DevicePointer(y)
		start := time.Now()
		if err := c.AllReduceSumDevice([]dist.DeviceBuffer{{Ptr: px, Len: n}, {Ptr: py, Len: 3, Float64: true}}); err != nil {
			t.Fatal(err)
		}
		t.Logf("all-reduce of %d float32 and 3 float64: %v", n, time.Since(start))
		got := x.Float64s()
		for i, v := range vals {
			if got[i] != float64(v)*scale {
				t.Fatalf("float32 sum [%d] = %v, want %v", i, got[i], float64(v)*scale)
			}
		}
		if g := y.Float64s(); !slices.Equal(g, []float64{1.5 * scale, -2 * scale, math.Pi * scale}) {
			t.Errorf("float64 sum %v", g)
		}
		before := x.Float64s()
		if err := c.BroadcastDevice([]dist.DeviceBuffer{{Ptr: px, Len: n}}, 0); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(x.Float64s(), before) {
			t.Error("a broadcast from rank 0 of a job of 1 changed the buffer")
		}
		if err := c.BroadcastDevice([]dist.DeviceBuffer{{Ptr: px, Len: n}}, 1); err == nil {
			t.Error("a broadcast from rank 1 of a job of 1 succeeded")
		}
	})

	t.Run("training", func(t *testing.T) {
		if scale != 1 {
			t.Setenv("FAKE_NCCL_SCALE", "1")
		}
		a, ref := newStepModel(t, b), newStepModel(t, b)
		cc := &countingComm{DeviceComm: c}
		const steps = 3
		for step := range steps {
			for i, m := range []*stepModel{a, ref} {
				x1, mask := m.batch(step)
				tp := autograd.NewTape()
				loss := m.cfg.Loss(tp, m.net, x1, mask, tensor.NewRNG(uint64(step)))
				optim.ZeroGrad(m.params)
				tp.Backward(loss)
				tp.Release()
				if i == 0 {
					if err := trainer.AllReduceGrads(cc, m.params); err != nil {
						t.Fatal(err)
					}
				}
				m.opt.Step()
			}
		}
		if cc.dev != steps || cc.host != 0 {
			t.Errorf("%d device and %d host all-reduces in %d steps: want the device path, once a step", cc.dev, cc.host, steps)
		}
		for i, p := range a.params {
			if !slices.Equal(p.Value.Float64s(), ref.params[i].Value.Float64s()) {
				t.Errorf("%s differs from the run without the all-reduce", p.Name)
			}
		}
	})

	if _, err := b.DevicePointer(tensor.New(tensor.Float32, 2)); err == nil {
		t.Error("DevicePointer of a CPU tensor succeeded")
	}
	if done, err := b.Done(); !done || err != nil {
		t.Errorf("Done after the checks = %v, %v", done, err)
	}
	if err := b.Do(func(uintptr) error { return errors.New("boom") }); err == nil || err.Error() != "boom" {
		t.Errorf("Do returned %v, want fn's error", err)
	}
}
