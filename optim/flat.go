package optim

import (
	"math"
	"sort"

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

// memOrder returns the indices [0, count) sorted by where the tensors
// at(i) lie in memory: grouped by storage (in order of first appearance),
// then by offset; nil tensors come last. Adjacent parameters that a module
// lists in another order (nn.Flatten groups them) then form runs.
func memOrder(count int, at func(i int) *tensor.Tensor) []int {
	group := map[tensor.Storage]int{}
	key := make([][2]int, count)
	for i := range count {
		t := at(i)
		if t == nil {
			key[i] = [2]int{math.MaxInt, i}
			continue
		}
		g, ok := group[t.Storage()]
		if !ok {
			g = len(group)
			group[t.Storage()] = g
		}
		key[i] = [2]int{g, t.Offset()}
	}
	order := make([]int, count)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ka, kb := key[order[a]], key[order[b]]
		return ka[0] < kb[0] || ka[0] == kb[0] && ka[1] < kb[1]
	})
	return order
}

// forRuns calls fn(run, n) for each maximal run of indices, taken in the
// given order, with joins(i, j) for every two consecutive indices i, j of
// the run; n is the total size(i) of the run. Indices with skip(i) are left
// out (and end a run).
func forRuns(order []int, skip func(i int) bool, joins func(i, j int) bool, size func(i int) int, fn func(run []int, n int)) {
	for lo := 0; lo < len(order); {
		if skip != nil && skip(order[lo]) {
			lo++
			continue
		}
		hi, n := lo+1, size(order[lo])
		for hi < len(order) && (skip == nil || !skip(order[hi])) && joins(order[hi-1], order[hi]) {
			n += size(order[hi])
			hi++
		}
		fn(order[lo:hi], n)
		lo = hi
	}
}

// mirrorZeros returns zero tensors with the shapes, dtypes and backends of
// ts, laid out like ts: tensors adjacent in memory (a run of ts) get
// adjacent results, carved out of one allocation per run.
func mirrorZeros(ts []*tensor.Tensor) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(ts))
	forRuns(memOrder(len(ts), func(i int) *tensor.Tensor { return ts[i] }), nil,
		func(i, j int) bool { return adjacent(ts[i], ts[j]) },
		func(i int) int { return ts[i].Size() },
		func(run []int, n int) {
			if len(run) == 1 {
				out[run[0]] = ts[run[0]].NewLike()
				return
			}
			flat := tensor.NewOn(ts[run[0]].Backend(), ts[run[0]].DType(), n)
			off := 0
			for _, i := range run {
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
	order := memOrder(len(params), func(i int) *tensor.Tensor { return params[i].Grad })
	forRuns(order, func(i int) bool { return params[i].Grad == nil },
		func(i, j int) bool {
			return adjacent(params[i].Grad, params[j].Grad) && sameShape(params[j].Grad, params[j].Value)
		},
		func(i int) int { return params[i].Grad.Size() },
		func(run []int, n int) {
			if len(run) == 1 {
				fn(params[run[0]].Grad)
				return
			}
			fn(span(params[run[0]].Grad, n))
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

// GradRuns calls fn for each run of parameters with non-nil, adjacent
// gradients, with the run's gradients as one contiguous 1-D tensor (or, for
// a run of one, the gradient itself), in memory order. For a flattened
// module (nn.Flatten) these are the flat gradient buffers: one or two
// tensors that a data-parallel step sums over its processes in place.
func GradRuns(params []Param, fn func(g *tensor.Tensor)) {
	gradRuns(params, fn)
}
