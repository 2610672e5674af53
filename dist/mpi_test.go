package dist_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"lgflow/autograd"
	"lgflow/dist"
	"lgflow/dist/mpi"
	"lgflow/internal/mpitest"
	"lgflow/nn"
	"lgflow/tensor"
	"lgflow/trainer"
)

// TestDataParallel runs caseDataParallel on 2 ranks under mpirun.
func TestDataParallel(t *testing.T) {
	r := mpitest.Run(t, mpitest.Job{NP: 2, Case: "data-parallel", Limit: 60 * time.Second})
	t.Logf("mpirun -np 2 (%v):\n%s", r.Elapsed.Round(time.Millisecond), r.Output)
	if r.Err != nil {
		t.Fatalf("mpirun: %v", r.Err)
	}
	for _, want := range []string{"ok data-parallel rank 0 of 2", "ok data-parallel rank 1 of 2"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// caseDataParallel: Open picks MPI from mpirun's environment; the generic
// helpers work; and a model's gradient summed over the ranks' shares of a
// batch equals the gradient one process computes on the whole batch, in
// float32 and float64, after the ranks' differently initialised weights
// were replaced by rank 0's.
func caseDataParallel() error {
	c, err := dist.Open(dist.Options{Timeout: 20 * time.Second})
	if err != nil {
		return err
	}
	if _, ok := c.(*mpi.Comm); !ok {
		return fmt.Errorf("Open under mpirun returned %T, want *mpi.Comm", c)
	}
	rank, size := c.Rank(), c.Size()
	if l := dist.Launched(); l.Launcher != "Open MPI" || l.Rank != rank || l.Size != size {
		return fmt.Errorf("Launched: %+v, Comm rank %d of %d", l, rank, size)
	}

	// Mean, and the generic helpers.
	m32 := []float32{float32(rank), 1, 3}
	m64 := []float64{float64(rank), -2, 0.5, 7}
	if err := dist.AllReduceMean(c, m32); err != nil {
		return err
	}
	if err := dist.AllReduceMean(c, m64); err != nil {
		return err
	}
	wantRank := float64(size-1) / 2
	if m32[0] != float32(wantRank) || m32[1] != 1 || m32[2] != 3 || m64[0] != wantRank || m64[1] != -2 || m64[2] != 0.5 || m64[3] != 7 {
		return fmt.Errorf("AllReduceMean: %v %v", m32, m64)
	}
	cfg := []byte(`{"preset":"cpu","batch":64}`)
	mine := []byte("ignored")
	if rank == size-1 {
		mine = cfg
	}
	got, err := dist.BroadcastData(c, mine, size-1)
	if err != nil || string(got) != string(cfg) {
		return fmt.Errorf("BroadcastData from %d: %q, %v", size-1, got, err)
	}
	if got, err = dist.BroadcastData(c, nil, 0); err != nil || len(got) != 0 {
		return fmt.Errorf("BroadcastData of nothing: %q, %v", got, err)
	}

	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		if err := gradientsMatch(c, dt); err != nil {
			return fmt.Errorf("%v: %w", dt, err)
		}
	}
	if err := c.Close(); err != nil {
		return err
	}
	if err := dist.AllReduceSum(c, m32); !errors.Is(err, dist.ErrClosed) {
		return fmt.Errorf("after Close: %v, want ErrClosed", err)
	}
	fmt.Printf("ok data-parallel rank %d of %d\n", rank, size)
	return nil
}

// flat returns the flat tensor that trainer.Flatten made the tensors ts
// (every parameter's value, or every gradient) views of.
func flat(ts []*tensor.Tensor) (*tensor.Tensor, error) {
	n := 0
	for _, t := range ts {
		if t.Storage() != ts[0].Storage() {
			return nil, errors.New("parameters in more than one flat tensor")
		}
		n += t.Size()
	}
	if n != ts[0].Storage().Len() {
		return nil, fmt.Errorf("parameters cover %d of %d elements", n, ts[0].Storage().Len())
	}
	return tensor.NewView(ts[0].Storage(), 0, []int{n}, []int{1}), nil
}

func gradientsMatch(c dist.Comm, dt tensor.DType) error {
	const batch, in, out = 37, 6, 3 // 37 rows: an uneven split
	rank, size := c.Rank(), c.Size()
	// Each rank initialises differently; rank 0's weights are broadcast.
	m := nn.NewMLP(tensor.NewRNG(uint64(11+rank)), []int{in, 16, 16, out}, nn.WithDType(dt), nn.WithActivation(nn.GELU))
	if err := trainer.Flatten(m); err != nil {
		return err
	}
	ps := trainer.OptimParams(m)
	var values, grads []*tensor.Tensor
	for _, p := range ps {
		values, grads = append(values, p.Value), append(grads, p.Grad)
	}
	w, err := flat(values)
	if err != nil {
		return err
	}
	g, err := flat(grads)
	if err != nil {
		return err
	}
	bcast := func(t *tensor.Tensor) error {
		if dt == tensor.Float32 {
			return dist.Broadcast(c, t.Data32(), 0)
		}
		return dist.Broadcast(c, t.Data64(), 0)
	}
	if err := bcast(w); err != nil {
		return err
	}
	// The batch: the same on every rank.
	rng := tensor.NewRNG(5)
	x := tensor.RandN(rng, dt, batch, in)
	y := tensor.RandN(rng, dt, batch, out)
	// grad computes the gradient of the summed squared error of rows
	// [lo, hi) into the flat gradient and returns a copy of it.
	grad := func(lo, hi int) *tensor.Tensor {
		trainer.ZeroGrad(ps)
		tp := autograd.NewTape()
		pred := m.Forward(tp, autograd.NewConst(x.Slice(0, lo, hi).Contiguous()))
		diff := tp.Sub(pred, autograd.NewConst(y.Slice(0, lo, hi).Contiguous()))
		tp.Backward(tp.SumAll(tp.Square(diff)))
		tp.Release()
		return g.Clone()
	}
	whole := grad(0, batch)
	// This rank's share of the rows, summed over the ranks in place.
	grad(rank*batch/size, (rank+1)*batch/size)
	if dt == tensor.Float32 {
		err = dist.AllReduceSum(c, g.Data32())
	} else {
		err = dist.AllReduceSum(c, g.Data64())
	}
	if err != nil {
		return err
	}
	got, want := g.Float64s(), whole.Float64s()
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	tol := 1e-5 * scale
	if dt == tensor.Float64 {
		tol = 1e-12 * scale
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			return fmt.Errorf("gradient element %d of %d: ranks' sum %v, one process %v (tolerance %v)", i, len(got), got[i], want[i], tol)
		}
	}
	// Every rank now holds identical weights and gradients: compare a
	// checksum with rank 0's.
	sum := []float64{0, 0}
	for _, v := range w.Float64s() {
		sum[0] += v
	}
	for _, v := range got {
		sum[1] += v
	}
	ref := append([]float64(nil), sum...)
	if err := c.Broadcast64(ref, 0); err != nil {
		return err
	}
	if ref[0] != sum[0] || ref[1] != sum[1] {
		return fmt.Errorf("rank %d holds weights or gradients unlike rank 0's (checksums %v, rank 0 %v)", rank, sum, ref)
	}
	return nil
}
