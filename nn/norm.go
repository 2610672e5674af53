package nn

import (
	"fmt"

	"lgflow/autograd"
	"lgflow/tensor"
)

// LayerNorm normalises over the last axis and applies a learnable affine map
// y = (x − mean)/√(var + eps)·Gamma + Beta. Gamma and Beta (D) start at 1
// and 0; both are nil for a LayerNorm built WithBias(false) (no affine map).
// Parameter names: "weight", "bias".
type LayerNorm struct {
	Gamma, Beta *autograd.Var
	Dim         int
	Eps         float64
}

// NewLayerNorm returns a LayerNorm over dim features. Options: WithDType,
// WithBias(false) for no affine parameters.
func NewLayerNorm(dim int, eps float64, opts ...Option) *LayerNorm {
	o := buildOptions(opts)
	if dim <= 0 {
		panic(fmt.Sprintf("nn.NewLayerNorm: dim %d must be positive", dim))
	}
	ln := &LayerNorm{Dim: dim, Eps: eps}
	if o.bias {
		ln.Gamma = autograd.NewParam(tensor.Full(o.dtype, 1, dim))
		ln.Beta = autograd.NewParam(tensor.New(o.dtype, dim))
	}
	return ln
}

// Forward normalises x (..., Dim).
func (l *LayerNorm) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	return tp.LayerNorm(x, l.Gamma, l.Beta, l.Eps)
}

// Params returns "weight" and "bias" (none without an affine map).
func (l *LayerNorm) Params() []Param {
	if l.Gamma == nil {
		return nil
	}
	return []Param{{"weight", l.Gamma}, {"bias", l.Beta}}
}

// BatchNorm1d normalises each channel (the LAST axis: x is (..., C), e.g.
// nodes × features) with batch statistics in training and, when
// TrackRunningStats, running statistics in evaluation:
//
//	training:   y = (x − mean_B)/√(var_B + Eps)·Gamma + Beta, and
//	            running ← (1 − Momentum)·running + Momentum·batch
//	            (running variance uses the unbiased batch variance);
//	evaluation: y = (x − RunningMean)/√(RunningVar + Eps)·Gamma + Beta.
//
// Without TrackRunningStats (WithBatchStats) the batch statistics are used in
// both modes and no running statistics are kept. Note that PyTorch's
// BatchNorm1d takes channels on axis 1; here they are last.
// Parameter names: "weight", "bias"; buffers "running_mean", "running_var".
// Updating the running statistics is not safe for concurrent forward passes.
type BatchNorm1d struct {
	Gamma, Beta             *autograd.Var
	RunningMean, RunningVar *tensor.Tensor
	C                       int
	Momentum, Eps           float64
	TrackRunningStats       bool
	Training                bool
}

// NewBatchNorm1d returns a BatchNorm1d over c channels in training mode with
// momentum 0.1 and eps 1e-5, Gamma = 1, Beta = 0, running mean 0 and running
// variance 1. Options: WithDType, WithBatchStats.
func NewBatchNorm1d(c int, opts ...Option) *BatchNorm1d {
	o := buildOptions(opts)
	if c <= 0 {
		panic(fmt.Sprintf("nn.NewBatchNorm1d: %d channels", c))
	}
	bn := &BatchNorm1d{
		Gamma:             autograd.NewParam(tensor.Full(o.dtype, 1, c)),
		Beta:              autograd.NewParam(tensor.New(o.dtype, c)),
		C:                 c,
		Momentum:          0.1,
		Eps:               1e-5,
		TrackRunningStats: !o.batchStats,
		Training:          true,
	}
	if bn.TrackRunningStats {
		bn.RunningMean = tensor.New(o.dtype, c)
		bn.RunningVar = tensor.Full(o.dtype, 1, c)
	}
	return bn
}

// Forward normalises x (..., C) in the mode b.Training selects.
func (b *BatchNorm1d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	return b.ForwardMode(tp, x, b.Training)
}

// ForwardMode normalises x (..., C) with batch statistics (training, which
// also updates the running statistics) or running statistics, whatever
// b.Training says: callers that hold the mode themselves pass it here
// instead of switching a shared layer.
func (b *BatchNorm1d) ForwardMode(tp *autograd.Tape, x *autograd.Var, training bool) *autograd.Var {
	if x.Dim(-1) != b.C {
		panic(fmt.Sprintf("nn.BatchNorm1d: input %v, want (..., %d)", x.Shape(), b.C))
	}
	if training || !b.TrackRunningStats {
		y, mean, variance := tp.BatchNorm(x, b.Gamma, b.Beta, b.Eps)
		if training && b.TrackRunningStats {
			rows := x.Size() / b.C
			unbias := 1.0
			if rows > 1 {
				unbias = float64(rows) / float64(rows-1)
			}
			m := b.Momentum
			tensor.MulScalar(b.RunningMean, b.RunningMean, 1-m)
			tensor.AddScaled(b.RunningMean, b.RunningMean, mean, m)
			tensor.MulScalar(b.RunningVar, b.RunningVar, 1-m)
			tensor.AddScaled(b.RunningVar, b.RunningVar, variance, m*unbias)
		}
		return y
	}
	// Evaluation with running statistics: an affine map per channel.
	rstd := tensor.AddScalar(nil, b.RunningVar, b.Eps)
	tensor.Rsqrt(rstd, rstd)
	scale := tp.Mul(b.Gamma, autograd.NewConst(rstd))
	xc := tp.Sub(x, autograd.NewConst(b.RunningMean))
	return tp.Add(tp.Mul(xc, scale), b.Beta)
}

// Train switches between batch statistics (on) and running statistics.
func (b *BatchNorm1d) Train(on bool) { b.Training = on }

// Params returns "weight" and "bias".
func (b *BatchNorm1d) Params() []Param {
	return []Param{{"weight", b.Gamma}, {"bias", b.Beta}}
}

// Buffers returns "running_mean" and "running_var" (none without
// TrackRunningStats).
func (b *BatchNorm1d) Buffers() []Param {
	if !b.TrackRunningStats {
		return nil
	}
	return []Param{
		{"running_mean", autograd.NewConst(b.RunningMean)},
		{"running_var", autograd.NewConst(b.RunningVar)},
	}
}

// Dropout zeroes each input entry with probability P in training mode (and
// scales the others by 1/(1−P)), drawing from R; it is the identity in
// evaluation mode or when P = 0. R must not be shared by concurrent passes.
type Dropout struct {
	P        float64
	R        *tensor.RNG
	Training bool
}

// NewDropout returns a Dropout layer in training mode.
func NewDropout(p float64, r *tensor.RNG) *Dropout {
	if p < 0 || p >= 1 {
		panic(fmt.Sprintf("nn.NewDropout: p = %v outside [0, 1)", p))
	}
	return &Dropout{P: p, R: r, Training: true}
}

// Forward applies dropout to x.
func (d *Dropout) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	if !d.Training || d.P == 0 {
		return x
	}
	return tp.Dropout(x, d.P, d.R)
}

// Train switches dropout on or off.
func (d *Dropout) Train(on bool) { d.Training = on }

// Params returns nothing (Dropout has no parameters).
func (d *Dropout) Params() []Param { return nil }

// Segments assigns each row of a batch of concatenated graphs to its graph:
// row i belongs to graph Of[i] of N (graph.Batch.NodeGraph and Len). Build
// it once per batch with NewSegments and pass it to every GraphNorm of a
// forward pass.
type Segments struct {
	Of []int32
	N  int
	// inv is (N, 1): 1/size of each graph (0 for an empty one); dev is inv
	// in the dtype and on the backend of the last Forward.
	inv, dev *tensor.Tensor
}

// NewSegments returns the Segments of rows that belong to graphs of[i] in
// [0, n).
func NewSegments(of []int32, n int) (*Segments, error) {
	if n < 0 {
		return nil, fmt.Errorf("nn.NewSegments: %d graphs", n)
	}
	inv := make([]float64, n)
	for i, g := range of {
		if g < 0 || int(g) >= n {
			return nil, fmt.Errorf("nn.NewSegments: row %d in graph %d of %d", i, g, n)
		}
		inv[g]++
	}
	for g, c := range inv {
		if c > 0 {
			inv[g] = 1 / c
		}
	}
	return &Segments{Of: of, N: n, inv: tensor.FromFloat64(inv, n, 1)}, nil
}

// invOn returns the inverse graph sizes in dtype dt on backend be,
// converting them once per batch.
func (s *Segments) invOn(dt tensor.DType, be tensor.Backend) *tensor.Tensor {
	if s.dev == nil || s.dev.DType() != dt || s.dev.Backend() != be {
		s.dev = s.inv.To(dt).On(be)
	}
	return s.dev
}

// GraphNorm normalises each channel over the nodes of each graph (Cai et
// al., "GraphNorm", 2021), channels last: for the rows x_i of one graph,
//
//	μ = mean_i x_i,  σ² = mean_i (x_i − α·μ)²,
//	y_i = (x_i − α·μ)/√(σ² + Eps)·Gamma + Beta.
//
// Like BatchNorm it removes what all nodes share and divides by their
// spread, so a node-specific signal that is small next to a common part is
// amplified; unlike it, a graph's output depends on that graph alone, in
// training and evaluation alike (no running statistics). Alpha (the mean's
// scale) starts at 1, Gamma at 1, Beta at 0. It is built from SegmentSum,
// Gather and elementwise ops, so it runs, forward and backward, on every
// backend. Parameter names: "weight", "bias", "mean_scale".
type GraphNorm struct {
	Gamma, Beta, Alpha *autograd.Var
	C                  int
	Eps                float64
}

// NewGraphNorm returns a GraphNorm over c channels with eps 1e-5. Options:
// WithDType.
func NewGraphNorm(c int, opts ...Option) *GraphNorm {
	o := buildOptions(opts)
	if c <= 0 {
		panic(fmt.Sprintf("nn.NewGraphNorm: %d channels", c))
	}
	return &GraphNorm{
		Gamma: autograd.NewParam(tensor.Full(o.dtype, 1, c)),
		Beta:  autograd.NewParam(tensor.New(o.dtype, c)),
		Alpha: autograd.NewParam(tensor.Full(o.dtype, 1, c)),
		C:     c,
		Eps:   1e-5,
	}
}

// Forward normalises x (rows, C), whose rows belong to the graphs seg says.
func (g *GraphNorm) Forward(tp *autograd.Tape, x *autograd.Var, seg *Segments) *autograd.Var {
	if x.Rank() != 2 || x.Dim(1) != g.C || x.Dim(0) != len(seg.Of) {
		panic(fmt.Sprintf("nn.GraphNorm: input %v for %d rows, want (%d, %d)", x.Shape(), len(seg.Of), len(seg.Of), g.C))
	}
	inv := autograd.NewConst(seg.invOn(x.DType(), x.Value.Backend()))
	mean := tp.Mul(tp.SegmentSum(x, seg.Of, seg.N), inv)                 // (N, C)
	xc := tp.Sub(x, tp.Gather(tp.Mul(mean, g.Alpha), seg.Of))            // (rows, C)
	variance := tp.Mul(tp.SegmentSum(tp.Square(xc), seg.Of, seg.N), inv) // (N, C)
	rstd := tp.Pow(tp.AddScalar(variance, g.Eps), -0.5)                  // (N, C)
	y := tp.Mul(xc, tp.Gather(rstd, seg.Of))
	return tp.Add(tp.Mul(y, g.Gamma), g.Beta)
}

// Params returns "weight", "bias" and "mean_scale".
func (g *GraphNorm) Params() []Param {
	return []Param{{"weight", g.Gamma}, {"bias", g.Beta}, {"mean_scale", g.Alpha}}
}
