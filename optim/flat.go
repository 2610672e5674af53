package optim

import (
	"lgflow/tensor"
)

// Flat parameters. When a module's parameters are views of one flat
// tensor (nn.Flatten), consecutive parameters are adjacent in memory, and
// so are their gradients. The optimisers then lay out their own state
// (AdamW's moments, the EMA's shadow weights) the same way, and every
// elementwise update (AdamW, the EMA, zeroing, clipping, finiteness
// checks) runs once over each run of adjacent parameters instead of once
// per parameter: a handful of kernel launches per step on a GPU instead of
// hundreds. Each element is computed exactly as in the per-parameter
// update, so the results are the same bit for bit. Parameters that are not
// adjacent are updated one by one, as before.

// adjacent reports whether b continues a in memory: contiguous views of one
// storage with b starting where a ends.
func adjacent(a, b *tensor.Tensor) bool {
	return a != nil && b != nil && a.Storage() == b.Storage() && a.DType() == b.DType() &&
		a.IsContiguous() && b.IsContiguous() && b.Offset() == a.Offset()+a.Size()
}

// span returns the 1-D view of the n elements of t's storage from t's
// offset on.
func span(t *tensor.Tensor, n int) *tensor.Tensor {
	return tensor.NewView(t.Storage(), t.Offset(), []int{n}, []int{1})
}

// forRuns calls fn(lo, hi, n) for each maximal run [lo, hi) of indices in
// [0, count) with joins(i-1, i) for every i in (lo, hi), n being the total
// size of the run's tensors size(i). Indices with skip(i) are left out (and
// end a run).
func forRuns(count int, skip func(i int) bool, joins func(i, j int) bool, size func(i int) int, fn func(lo, hi, n int)) {
	for lo := 0; lo < count; {
		if skip != nil && skip(lo) {
			lo++
			continue
		}
		hi, n := lo+1, size(lo)
		for hi < count && (skip == nil || !skip(hi)) && joins(hi-1, hi) {
			n += size(hi)
			hi++
		}
		fn(lo, hi, n)
		lo = hi
	}
}

// mirrorZeros returns zero tensors with the shapes, dtypes and backends of
// ts, laid out like ts: tensors adjacent in memory (a run of ts) get
// adjacent results, carved out of one allocation per run.
func mirrorZeros(ts []*tensor.Tensor) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(ts))
	forRuns(len(ts), nil, func(i, j int) bool { return adjacent(ts[i], ts[j]) },
		func(i int) int { return ts[i].Size() },
		func(lo, hi, n int) {
			if hi-lo == 1 {
				out[lo] = ts[lo].NewLike()
				return
			}
			flat := tensor.NewOn(ts[lo].Backend(), ts[lo].DType(), n)
			off := 0
			for i := lo; i < hi; i++ {
				k := ts[i].Size()
				out[i] = flat.Slice(0, off, off+k).Reshape(ts[i].Shape()...)
				off += k
			}
		})
	return out
}

// gradRuns calls fn for each run of parameters with non-nil, adjacent
// gradients (of their parameters' shapes), with the run's gradients as one
// tensor: the gradient itself for a run of one.
func gradRuns(params []Param, fn func(g *tensor.Tensor)) {
	forRuns(len(params), func(i int) bool { return params[i].Grad == nil },
		func(i, j int) bool {
			return adjacent(params[i].Grad, params[j].Grad) && sameShape(params[j].Grad, params[j].Value)
		},
		func(i int) int { return params[i].Grad.Size() },
		func(lo, hi, n int) {
			if hi-lo == 1 {
				fn(params[lo].Grad)
				return
			}
			fn(span(params[lo].Grad, n))
		})
}

func sameShape(a, b *tensor.Tensor) bool {
	if b == nil || a.Rank() != b.Rank() {
		return false
	}
	for i, d := range a.Shape() {
		if b.Dim(i) != d {
			return false
		}
	}
	return true
}

// ZeroGrad sets every non-nil gradient of params to zero, with one fill per
// run of adjacent gradients (see nn.Flatten).
func ZeroGrad(params []Param) {
	gradRuns(params, func(g *tensor.Tensor) { g.Zero() })
}

// NonFiniteCheck accumulates on the device whether any gradient (or other
// tensor) it was given held a NaN or an infinity, without waiting for the
// device (tensor.FlagNonFinite): a training loop on a GPU flags every
// step's gradients and reads the answer once every few steps. The zero
// value is ready to use; it is not safe for concurrent use.
type NonFiniteCheck struct {
	flags []*tensor.Tensor // one per backend and dtype seen
}

// flag returns the flag for t's backend and dtype.
func (c *NonFiniteCheck) flag(t *tensor.Tensor) *tensor.Tensor {
	for _, f := range c.flags {
		if f.Backend() == t.Backend() && f.DType() == t.DType() {
			return f
		}
	}
	f := tensor.NewOn(t.Backend(), t.DType(), 1)
	c.flags = append(c.flags, f)
	return f
}

// Add flags t if it holds a NaN or an infinity.
func (c *NonFiniteCheck) Add(t *tensor.Tensor) {
	if t.Size() > 0 {
		tensor.FlagNonFinite(c.flag(t), t)
	}
}

// AddGrads flags the non-nil gradients of params, with one check per run
// of adjacent gradients.
func (c *NonFiniteCheck) AddGrads(params []Param) {
	gradRuns(params, c.Add)
}

// Read waits for the device and reports whether anything flagged since the
// last Read held a NaN or an infinity; it clears the flags.
func (c *NonFiniteCheck) Read() bool {
	bad := false
	for _, f := range c.flags {
		if f.Item() != 0 {
			bad = true
			f.Zero()
		}
	}
	return bad
}
