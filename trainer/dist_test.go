package trainer

import (
	"errors"
	"slices"
	"testing"

	"lgflow/dist"
	"lgflow/nn"
	"lgflow/optim"
	"lgflow/tensor"
)

func TestShareCoversTheBatch(t *testing.T) {
	for _, n := range []int{1, 2, 7, 8, 64} {
		for size := 1; size <= min(n, 5); size++ {
			next := 0
			for rank := range size {
				lo, hi := Share(n, rank, size)
				if lo != next || hi < lo {
					t.Fatalf("Share(%d, %d, %d) = [%d, %d), want to start at %d", n, rank, size, lo, hi, next)
				}
				if hi-lo < n/size || hi-lo > n/size+1 {
					t.Errorf("Share(%d, %d, %d) holds %d items", n, rank, size, hi-lo)
				}
				next = hi
			}
			if next != n {
				t.Errorf("the shares of %d items on %d ranks end at %d", n, size, next)
			}
		}
	}
}

// TestGradBuffersAreFlat checks that a flattened module's gradients come
// as one or two flat buffers holding every gradient element.
func TestGradBuffersAreFlat(t *testing.T) {
	m := nn.NewLinear(tensor.NewRNG(1), 3, 4)
	if err := Flatten(m); err != nil {
		t.Fatal(err)
	}
	ps := OptimParams(m)
	bufs := GradBuffers(ps)
	if len(bufs) == 0 || len(bufs) > 2 {
		t.Fatalf("%d gradient buffers, want 1 or 2", len(bufs))
	}
	total := 0
	for _, b := range bufs {
		total += b.Size()
		b.Fill(1)
	}
	want := 0
	for _, p := range ps {
		want += p.Grad.Size()
		if slices.ContainsFunc(p.Grad.Float64s(), func(x float64) bool { return x != 1 }) {
			t.Errorf("gradient of %s is not in the buffers", p.Name)
		}
	}
	if total != want {
		t.Errorf("buffers hold %d elements, gradients %d", total, want)
	}
	// One process: summing changes nothing.
	if err := AllReduceGrads(dist.Local(), ps); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if slices.ContainsFunc(p.Grad.Float64s(), func(x float64) bool { return x != 1 }) {
			t.Errorf("AllReduceGrads on one process changed %s", p.Name)
		}
	}
	opt, err := optim.NewAdamW(ps, optim.DefaultAdamWConfig())
	if err != nil {
		t.Fatal(err)
	}
	var st RunState
	if err := BroadcastState(dist.Local(), m, opt, nil, &st); err != nil {
		t.Fatal(err)
	}
	if err := CheckAgree(dist.Local(), m, opt); err != nil {
		t.Fatal(err)
	}
}

func TestOnRootOneProcess(t *testing.T) {
	got, err := OnRoot(dist.Local(), func() ([]byte, error) { return []byte("x"), nil })
	if err != nil || string(got) != "x" {
		t.Errorf("OnRoot = %q, %v", got, err)
	}
	boom := errors.New("boom")
	if _, err := OnRoot(nil, func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("OnRoot error = %v, want boom", err)
	}
}

func TestResultMessage(t *testing.T) {
	data, err := decodeResult(encodeResult([]byte("score"), nil))
	if err != nil || string(data) != "score" {
		t.Errorf("ok message: %q, %v", data, err)
	}
	_, err = decodeResult(encodeResult(nil, errors.New("disk full")))
	if err == nil || err.Error() != "rank 0: disk full" {
		t.Errorf("error message: %v", err)
	}
	if _, err := decodeResult([]byte{1, 2}); err == nil {
		t.Error("a short message decoded")
	}
}
