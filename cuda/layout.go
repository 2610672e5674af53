package cuda

import (
	"fmt"

	"lgflow/tensor"
)

const (
	maxDims = 8 // dimensions of a layout after coalescing (common.cuh: MAXD)
	maxOps  = 4 // operands of a layout (common.cuh: MAXOPS)
)

// layout describes the iteration over the n elements of a shape for up to
// maxOps operands, each with its own element strides; it mirrors struct Lay
// of kernels/common.cuh byte for byte and is passed to kernels by value.
// Element i (row-major over dims[0..nd-1], dims[0] outermost) of operand k is
// at offset Σ_j c_j·str[k][j] from the operand's base pointer.
type layout struct {
	n    int64
	nd   int32
	_    int32
	dims [maxDims]int64
	str  [maxOps][maxDims]int64
}

// bstride returns t's stride for dimension i of a shape of rank r that t
// broadcasts to (0 for a missing or size-1 dimension of t, or a nil t).
func bstride(t *tensor.Tensor, i, r int) int {
	if t == nil {
		return 0
	}
	sh := t.Shape()
	k := i - (r - len(sh))
	if k < 0 || sh[k] == 1 {
		return 0
	}
	return t.Strides()[k]
}

// elemLayout returns the layout iterating shape over the operands ts, each
// broadcast to shape (a nil operand gets stride 0). Dimensions of size 1 are
// dropped and adjacent dimensions merged where every operand is contiguous
// across them, so contiguous operands give a single dimension.
func elemLayout(shape []int, ts ...*tensor.Tensor) layout {
	var str [maxOps][]int
	r := len(shape)
	var buf [maxOps][16]int
	for k, t := range ts {
		s := buf[k][:0]
		if r > len(buf[k]) {
			s = make([]int, 0, r)
		}
		for i := range r {
			s = append(s, bstride(t, i, r))
		}
		str[k] = s
	}
	return stridedLayout(shape, len(ts), &str)
}

// stridedLayout builds a layout from explicit strides (str[k] has len(shape)
// entries for k < nops).
func stridedLayout(shape []int, nops int, str *[maxOps][]int) layout {
	if nops > maxOps {
		panic(fmt.Sprintf("cuda: %d layout operands, at most %d", nops, maxOps))
	}
	var l layout
	n := 1
	for _, d := range shape {
		n *= d
	}
	l.n = int64(n)
	// Build from the innermost dimension outwards, in reverse order.
	var rd [maxDims]int
	var rs [maxOps][maxDims]int
	nd := 0
	for i := len(shape) - 1; i >= 0; i-- {
		d := shape[i]
		if d == 1 {
			continue
		}
		if nd > 0 {
			merge := true
			for k := range nops {
				if str[k][i] != rs[k][nd-1]*rd[nd-1] {
					merge = false
					break
				}
			}
			if merge {
				rd[nd-1] *= d
				continue
			}
		}
		if nd == maxDims {
			panic(fmt.Sprintf("cuda: shape %v has more than %d dimensions that cannot be merged for strides %v", shape, maxDims, str[:nops]))
		}
		rd[nd] = d
		for k := range nops {
			rs[k][nd] = str[k][i]
		}
		nd++
	}
	if nd == 0 {
		nd = 1
		rd[0] = 1
	}
	l.nd = int32(nd)
	for i := range nd {
		l.dims[i] = int64(rd[nd-1-i])
		for k := range nops {
			l.str[k][i] = int64(rs[k][nd-1-i])
		}
	}
	return l
}
