package trainer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"lgflow/dist"
	"lgflow/nn"
	"lgflow/optim"
	"lgflow/tensor"
)

// Data-parallel training. Every rank of a dist.Comm runs the same loop on
// its share of each step's global batch (Share); Stepper sums the ranks'
// gradients (and losses) before it checks, clips and updates, so every rank
// takes the same decision and holds the same weights after every step.
// Rank 0 alone validates and writes (OnRoot). With one rank nothing of
// this runs: the results are those of single-process training.

// Distributed reports whether c has more than one rank (a nil c has one).
func Distributed(c dist.Comm) bool { return c != nil && c.Size() > 1 }

// Share returns the contiguous part [lo, hi) of a global batch of n items
// that rank computes among size ranks: a rule that depends only on n and
// size, so the union of the shares is the batch itself, in its order.
func Share(n, rank, size int) (lo, hi int) {
	return rank * n / size, (rank + 1) * n / size
}

// GradBuffers returns the gradient buffers of params as contiguous 1-D
// tensors: for a flattened module (Flatten) the one or two flat buffers
// holding every gradient, else one per run of adjacent gradients.
func GradBuffers(params []optim.Param) []*tensor.Tensor {
	var out []*tensor.Tensor
	optim.GradRuns(params, func(g *tensor.Tensor) { out = append(out, g) })
	return out
}

// DeviceBackend is a tensor backend whose tensors live in the memory of a
// dist.Device: package cuda's *Backend. When a Comm is a dist.DeviceComm
// on that same device, AllReduceTensor, AllReduceGrads, BroadcastTensor
// and BroadcastState hand it the tensors' device addresses (no copy
// through the host); otherwise they go through host slices. Package
// trainer never imports cuda: the backend is recognised by this interface.
type DeviceBackend interface {
	tensor.Backend
	dist.Device
	// DevicePointer returns the device address of t's first element; t
	// must be a tensor of this backend.
	DevicePointer(t *tensor.Tensor) (uintptr, error)
}

// DeviceBuffer returns the device buffer of t and c as a dist.DeviceComm
// when c reduces device memory and t is a contiguous float tensor in the
// memory of c's device; ok is false otherwise (use the host path). An
// empty tensor's buffer has Len 0 and Ptr 0.
func DeviceBuffer(c dist.Comm, t *tensor.Tensor) (dc dist.DeviceComm, buf dist.DeviceBuffer, ok bool, err error) {
	dc, ok = c.(dist.DeviceComm)
	if !ok {
		return nil, buf, false, nil
	}
	b, ok := t.Backend().(DeviceBackend)
	if !ok || !sameDevice(b, dc.Device()) || !t.IsContiguous() {
		return nil, buf, false, nil
	}
	if dt := t.DType(); dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, buf, false, nil
	}
	if t.Size() == 0 {
		return dc, dist.DeviceBuffer{Float64: t.DType() == tensor.Float64}, true, nil
	}
	p, err := b.DevicePointer(t)
	if err != nil {
		return nil, buf, false, fmt.Errorf("trainer: the device address of a tensor of shape %v: %w", t.Shape(), err)
	}
	return dc, dist.DeviceBuffer{Ptr: p, Len: t.Size(), Float64: t.DType() == tensor.Float64}, true, nil
}

// sameDevice reports whether the backend b is the device d (the same
// value: a *cuda.Backend is both).
func sameDevice(b DeviceBackend, d dist.Device) (same bool) {
	defer func() {
		if recover() != nil { // values of an incomparable type
			same = false
		}
	}()
	return d != nil && dist.Device(b) == d
}

// splitDevice sorts ts into the device buffers that c reduces in device
// memory (DeviceBuffer) and the tensors that go through the host, each
// in the order of ts.
func splitDevice(c dist.Comm, ts []*tensor.Tensor) (dc dist.DeviceComm, dev []dist.DeviceBuffer, host []*tensor.Tensor, err error) {
	for _, t := range ts {
		d, buf, ok, err := DeviceBuffer(c, t)
		if err != nil {
			return nil, nil, nil, err
		}
		if !ok {
			host = append(host, t)
			continue
		}
		if buf.Len > 0 {
			dc, dev = d, append(dev, buf)
		}
	}
	return dc, dev, host, nil
}

// AllReduceTensor replaces t, on every rank of c, by the elementwise sum of
// every rank's t: in device memory when c is a dist.DeviceComm on t's
// device (DeviceBuffer), in place for a contiguous CPU tensor, through a
// host copy otherwise.
func AllReduceTensor(c dist.Comm, t *tensor.Tensor) error {
	if dc, buf, ok, err := DeviceBuffer(c, t); err != nil || ok {
		if err != nil || buf.Len == 0 {
			return err
		}
		return dc.AllReduceSumDevice([]dist.DeviceBuffer{buf})
	}
	return onHost(t, func(h *tensor.Tensor) error {
		if h.DType() == tensor.Float32 {
			return c.AllReduceSum32(h.Data32())
		}
		return c.AllReduceSum64(h.Data64())
	})
}

// BroadcastTensor copies t of rank root into t of every other rank of c
// (device to device when c is a dist.DeviceComm on t's device).
func BroadcastTensor(c dist.Comm, t *tensor.Tensor, root int) error {
	if dc, buf, ok, err := DeviceBuffer(c, t); err != nil || ok {
		if err != nil || buf.Len == 0 {
			return err
		}
		return dc.BroadcastDevice([]dist.DeviceBuffer{buf}, root)
	}
	return onHost(t, func(h *tensor.Tensor) error {
		if h.DType() == tensor.Float32 {
			return c.Broadcast32(h.Data32(), root)
		}
		return c.Broadcast64(h.Data64(), root)
	})
}

// broadcastTensors broadcasts ts from root: the device buffers in one
// device call (one NCCL group), then the others one by one, in order.
// Every rank must hold the same tensors on the same kind of backend.
func broadcastTensors(c dist.Comm, ts []*tensor.Tensor, root int) error {
	dc, dev, host, err := splitDevice(c, ts)
	if err != nil {
		return err
	}
	if len(dev) > 0 {
		if err := dc.BroadcastDevice(dev, root); err != nil {
			return err
		}
	}
	for _, t := range host {
		if err := BroadcastTensor(c, t, root); err != nil {
			return err
		}
	}
	return nil
}

// onHost runs fn on t itself when it is a contiguous CPU tensor, otherwise
// on a host copy that is then copied back into t.
func onHost(t *tensor.Tensor, fn func(h *tensor.Tensor) error) error {
	if t.Backend() == tensor.CPU && t.IsContiguous() {
		return fn(t)
	}
	h := t.ToBackend(tensor.CPU)
	if err := fn(h); err != nil {
		return err
	}
	tensor.Copy(t, h.ToBackend(t.Backend()))
	return nil
}

// AllReduceGrads sums the gradients of params over the ranks of c, in
// place, one flat buffer at a time (GradBuffers). When c is a
// dist.DeviceComm on the device holding the buffers (package dist/nccl on
// the CUDA backend), they are summed in device memory in one call, on the
// backend's stream, with no copy through the host; otherwise through host
// slices (the CPU backend, MPI).
func AllReduceGrads(c dist.Comm, params []optim.Param) error {
	wrap := func(err error) error {
		return fmt.Errorf("trainer: summing gradients over %d ranks: %w", c.Size(), err)
	}
	dc, dev, host, err := splitDevice(c, GradBuffers(params))
	if err != nil {
		return wrap(err)
	}
	if len(dev) > 0 {
		if err := dc.AllReduceSumDevice(dev); err != nil {
			return wrap(err)
		}
	}
	for _, g := range host {
		if err := AllReduceTensor(c, g); err != nil {
			return wrap(err)
		}
	}
	return nil
}

// BroadcastState makes every rank of c start from rank 0's training state:
// the weights and buffers of m, the optimiser state of opt (when not nil),
// the tensors of extra (the optimiser's or an EMA's own, updated in place,
// such as optim.EMA.Weights) and st. Call it on every rank after building (and, on resume, loading)
// the model, so that ranks that could not read the state file, or read
// another, still agree.
func BroadcastState(c dist.Comm, m nn.Module, opt *optim.AdamW, extra map[string]*tensor.Tensor, st *RunState) error {
	if !Distributed(c) {
		return nil
	}
	wrap := func(err error) error { return fmt.Errorf("trainer: broadcasting rank 0's training state: %w", err) }
	var ts []*tensor.Tensor
	for _, sd := range []map[string]*tensor.Tensor{nn.StateDict(m), extra} {
		for _, k := range slices.Sorted(maps.Keys(sd)) {
			ts = append(ts, sd[k])
		}
	}
	if err := broadcastTensors(c, ts, 0); err != nil {
		return wrap(err)
	}
	if opt != nil {
		osd := opt.StateDict()
		ts = ts[:0]
		for _, k := range slices.Sorted(maps.Keys(osd)) {
			ts = append(ts, osd[k])
		}
		if err := broadcastTensors(c, ts, 0); err != nil {
			return wrap(err)
		}
		if c.Rank() != 0 {
			if err := opt.LoadStateDict(osd); err != nil {
				return wrap(err)
			}
		}
	}
	data, err := dist.BroadcastData(c, []byte(MarshalMeta(*st)), 0)
	if err != nil {
		return wrap(err)
	}
	if c.Rank() != 0 {
		var got RunState
		if err := UnmarshalMeta(map[string]string{MetaRun: string(data)}, MetaRun, &got); err != nil {
			return wrap(err)
		}
		*st = got
	}
	return CheckAgree(c, m, opt)
}

// Checksum returns a fingerprint of the weights of m and the optimiser
// state of opt (when not nil): a sum of their elements, each weighted by
// a function of its position, in float64.
func Checksum(m nn.Module, opt *optim.AdamW) float64 {
	var s float64
	add := func(sd map[string]*tensor.Tensor) {
		for _, k := range slices.Sorted(maps.Keys(sd)) {
			for i, x := range sd[k].Float64s() {
				s += x * (1 + float64(i%97)/97)
			}
		}
	}
	add(nn.StateDict(m))
	if opt != nil {
		add(opt.StateDict())
	}
	return s
}

// CheckAgree returns an error unless every rank of c holds the same weights
// and optimiser state as rank 0 (by Checksum).
func CheckAgree(c dist.Comm, m nn.Module, opt *optim.AdamW) error {
	if !Distributed(c) {
		return nil
	}
	mine := Checksum(m, opt)
	buf := []float64{mine}
	if err := c.Broadcast64(buf, 0); err != nil {
		return fmt.Errorf("trainer: comparing the ranks' training states: %w", err)
	}
	differ := 0.0
	if buf[0] != mine && !(math.IsNaN(buf[0]) && math.IsNaN(mine)) {
		differ = 1
	}
	flag := []float64{differ}
	if err := c.AllReduceSum64(flag); err != nil {
		return fmt.Errorf("trainer: comparing the ranks' training states: %w", err)
	}
	if flag[0] != 0 {
		return fmt.Errorf("trainer: %v of %d ranks hold training states that differ from rank 0's", flag[0], c.Size())
	}
	return nil
}

// RootWait is the watchdog of the collectives that wait for rank 0 while it
// validates or writes (OnRoot): much longer than a training step.
var RootWait = 4 * time.Hour

// StepTimeout is the watchdog OnRoot sets back after waiting for rank 0
// (the one dist.Open gives).
var StepTimeout = dist.DefaultTimeout

// OnRoot runs fn on rank 0 of c alone (validation, writing files) while
// the other ranks wait, and returns, on every rank, rank 0's result and
// error (rebuilt from its message on the other ranks). Without c, or with
// one rank, it is fn(). Every rank must call it at the same point.
func OnRoot(c dist.Comm, fn func() ([]byte, error)) ([]byte, error) {
	if !Distributed(c) {
		return fn()
	}
	var msg []byte
	var data []byte
	var ferr error
	if c.Rank() == 0 {
		data, ferr = fn()
		msg = encodeResult(data, ferr)
	} else {
		c.SetTimeout(RootWait)
		defer c.SetTimeout(StepTimeout)
	}
	got, err := dist.BroadcastData(c, msg, 0)
	if err != nil {
		return nil, errors.Join(ferr, fmt.Errorf("trainer: waiting for rank 0: %w", err))
	}
	if c.Rank() == 0 {
		return data, ferr
	}
	return decodeResult(got)
}

// encodeResult packs a result and an error message: a byte saying whether
// there is an error, the error's length and text, then the data.
func encodeResult(data []byte, err error) []byte {
	var text string
	if err != nil {
		text = err.Error()
	}
	out := make([]byte, 9, 9+len(text)+len(data))
	if err != nil {
		out[0] = 1
	}
	binary.LittleEndian.PutUint64(out[1:], uint64(len(text)))
	out = append(out, text...)
	return append(out, data...)
}

func decodeResult(b []byte) ([]byte, error) {
	if len(b) < 9 {
		return nil, errors.New("trainer: malformed message from rank 0")
	}
	n := binary.LittleEndian.Uint64(b[1:9])
	if uint64(len(b)-9) < n {
		return nil, errors.New("trainer: malformed message from rank 0")
	}
	text, data := string(b[9:9+n]), b[9+n:]
	if b[0] != 0 {
		return data, fmt.Errorf("rank 0: %s", text)
	}
	return data, nil
}
