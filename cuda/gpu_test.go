package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"lgflow/tensor"
	"lgflow/tensor/backendtest"
)

// gpuBackend returns the initialised backend, or skips t when there is no
// usable GPU (fails it instead when LGFLOW_REQUIRE_GPU=1). A GPU that is
// present but fails to initialise (e.g. a kernel compile error) always
// fails t.
func gpuBackend(t testing.TB) *Backend {
	t.Helper()
	ok, why := Available()
	if !ok {
		if os.Getenv("LGFLOW_REQUIRE_GPU") == "1" {
			t.Fatalf("LGFLOW_REQUIRE_GPU=1 but CUDA is unavailable: %s", why)
		}
		t.Skipf("no GPU: %s", why)
	}
	b, err := Default()
	if err != nil {
		t.Fatalf("CUDA is available (%s) but Init failed: %v", why, err)
	}
	return b
}

// TestConformance runs the backend conformance suite on the GPU.
func TestConformance(t *testing.T) {
	b := gpuBackend(t)
	t.Logf("device: %+v", b.Device())
	backendtest.Run(t, b)
	t.Run("Atomic", func(t *testing.T) {
		b.SetDeterministic(false)
		defer b.SetDeterministic(true)
		backendtest.RunOne(t, b, "ScatterAdd")
		backendtest.RunOne(t, b, "SegmentSum")
	})
	t.Run("Extras", func(t *testing.T) { extras(t, b, 1) })
}

func TestRegistered(t *testing.T) {
	b := gpuBackend(t)
	if tensor.BackendByName("cuda") != tensor.Backend(b) {
		t.Fatal("Init did not register the backend as \"cuda\"")
	}
	i, err := Init()
	if err != nil || i != tensor.Backend(b) {
		t.Fatalf("Init = %v, %v; want the default backend", i, err)
	}
}

// extras checks what the conformance suite does not: large launches, the
// allocator, Release, TF32 and concurrent use. scale shrinks the sizes (for
// the emulator).
func extras(t *testing.T, b *Backend, scale int) {
	r := tensor.NewRNG(99)
	t.Run("Large", func(t *testing.T) {
		for _, c := range []struct {
			name string
			f    func(x *tensor.Tensor) *tensor.Tensor
			rows int
			cols int
		}{
			{"Sum long rows", func(x *tensor.Tensor) *tensor.Tensor { return tensor.Sum(nil, x, 1, false) }, 1, 300000},
			{"Sum long columns", func(x *tensor.Tensor) *tensor.Tensor { return tensor.Sum(nil, x, 0, false) }, 200000, 3},
			{"LogSumExp long columns", func(x *tensor.Tensor) *tensor.Tensor { return tensor.LogSumExp(nil, x, 0, true) }, 100000, 5},
			{"SumTo bias", func(x *tensor.Tensor) *tensor.Tensor {
				return tensor.SumTo(tensor.NewOn(x.Backend(), x.DType(), x.Dim(1)), x)
			}, 100000, 64},
			{"Softmax long rows", func(x *tensor.Tensor) *tensor.Tensor { return tensor.Softmax(nil, x, 1) }, 3, 100000},
			{"GELU", func(x *tensor.Tensor) *tensor.Tensor { return tensor.GELU(nil, x) }, 1000, 3001},
		} {
			rows, cols := c.rows, c.cols
			if rows > 1000 {
				rows /= scale
			}
			if cols > 1000 {
				cols /= scale
			}
			x := tensor.FillUniform(tensor.New(tensor.Float32, rows, cols), r, -1, 1)
			want := c.f(x)
			got := c.f(x.ToBackend(b))
			if got.Backend() != tensor.Backend(b) {
				t.Fatalf("%s: result on %s", c.name, got.Backend().Name())
			}
			g, w := got.Float64s(), want.Float64s()
			for i := range w {
				if math.Abs(g[i]-w[i]) > 1e-5*(1+math.Abs(w[i])) {
					t.Fatalf("%s: element %d = %v, want %v", c.name, i, g[i], w[i])
				}
			}
		}
		if got, want := tensor.SumAll(tensor.NewOn(b, tensor.Float32, 4000000/scale).Fill(0.5)), 2000000.0/float64(scale); got != want {
			t.Errorf("SumAll of %d halves = %v", 4000000/scale, got)
		}
	})
	t.Run("Allocator", func(t *testing.T) {
		// Let earlier garbage return its blocks first, so that the counters
		// move only with this test's tensors.
		runtime.GC()
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
		b.EmptyCache()
		before := b.MemStats()
		x := tensor.NewOn(b, tensor.Float32, 1000, 1000)
		st := b.MemStats()
		if st.InUse < before.InUse+4000000 || st.Reserved < st.InUse || st.Peak < st.InUse {
			t.Fatalf("after allocating 4 MB: %+v (before %+v)", st, before)
		}
		b.Release(x)
		b.Release(x) // a second Release is a no-op
		st2 := b.MemStats()
		if st2.InUse+4000000 > st.InUse || st2.Cached < st.Cached+4000000 {
			t.Fatalf("after Release: %+v (before %+v)", st2, st)
		}
		st = st2
		y := tensor.NewOn(b, tensor.Float32, 1000, 1000) // reuses the cached block, zeroed
		if m := tensor.MaxAbs(y); m != 0 {
			t.Fatalf("reused block not zeroed: max |y| = %v", m)
		}
		if st2 := b.MemStats(); st2.Reserved >= st.Reserved+4000000 {
			t.Errorf("allocation after Release did not reuse the cache: %+v then %+v", st, st2)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("using a released tensor did not panic")
				}
			}()
			tensor.Exp(nil, x)
		}()
		b.Release(y)
		b.EmptyCache()
		if st := b.MemStats(); st.Cached != 0 || st.Reserved != st.InUse {
			t.Errorf("after EmptyCache: %+v", st)
		}
		// Unreachable tensors return their memory through cleanups.
		for range 5 {
			tensor.NewOn(b, tensor.Float32, 1<<18)
		}
		runtime.GC()
		runtime.GC()
		if b.Synchronize() != nil {
			t.Fatal("Synchronize failed")
		}
		if p := b.Pointer(tensor.NewOn(b, tensor.Float32, 4).Slice(0, 1, 3)); p%4 != 0 || p == 0 {
			t.Errorf("Pointer of a view = %#x", p)
		}
	})
	t.Run("TF32", func(t *testing.T) {
		a := tensor.FillUniform(tensor.New(tensor.Float32, 128, 256), r, -1, 1)
		w := tensor.FillUniform(tensor.New(tensor.Float32, 256, 64), r, -1, 1)
		want := tensor.MatMul(nil, a, w, false, false)
		ga, gw := a.ToBackend(b), w.ToBackend(b)
		b.SetTF32(true)
		tf := tensor.MatMul(nil, ga, gw, false, false)
		b.SetTF32(false)
		exact := tensor.MatMul(nil, ga, gw, false, false)
		d32 := maxDiff(exact.Float64s(), want.Float64s())
		dtf := maxDiff(tf.Float64s(), want.Float64s())
		if d32 > 1e-4 || dtf > 0.1 {
			t.Errorf("max error: float32 %v, TF32 %v", d32, dtf)
		}
		t.Logf("max |error| vs CPU over k=256: float32 %.2g, TF32 %.2g", d32, dtf)
	})
	t.Run("Concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for g := range 4 {
			wg.Go(func() {
				rr := tensor.NewRNG(uint64(g))
				a := tensor.FillUniform(tensor.New(tensor.Float64, 40, 30), rr, -1, 1)
				want := tensor.Sum(nil, tensor.MatMul(nil, a, a, true, false), 0, false).Float64s()
				ga := a.ToBackend(b)
				for range 20 {
					got := tensor.Sum(nil, tensor.MatMul(nil, ga, ga, true, false), 0, false).Float64s()
					if d := maxDiff(got, want); d > 1e-10 {
						errs[g] = fmt.Errorf("goroutine %d: max diff %v", g, d)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	})
}

func maxDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(a[i]-b[i]))
	}
	return m
}
