package backendtest

import (
	"fmt"
	"testing"

	"lgflow/tensor"
)

// randIdx returns n indices in [0, hi).
func randIdx(r *tensor.RNG, n, hi int) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(r.Intn(hi))
	}
	return idx
}

func testIndexSelect(t *testing.T, s *suite) {
	r := tensor.NewRNG(14)
	for _, dt := range dtypes {
		x := rand(r, dt, -1, 1, 5, 4, 3)
		for axis := range 3 {
			n := x.Dim(axis)
			for _, idx := range [][]int32{{0}, randIdx(r, 9, n), {int32(n - 1), 0, int32(n - 1)}} {
				want := tensor.IndexSelect(nil, x, axis, idx)
				for _, lay := range layouts {
					what := fmt.Sprintf("IndexSelect %v axis %d idx %v %s", dt, axis, idx, lay.name)
					s.check(t, what, tensor.IndexSelect(nil, lay.make(s, x), axis, idx), want, tolFor(dt, kExact))
				}
				s.check(t, fmt.Sprintf("IndexSelect %v axis %d strided dst", dt, axis),
					tensor.IndexSelect(s.stridedDst(dt, want.Shape()...), s.on(x), axis, idx), want, tolFor(dt, kExact))
			}
		}
		big := rand(r, dt, -1, 1, 300, 17)
		idx := randIdx(r, 1000, 300)
		s.check(t, fmt.Sprintf("Gather %v large", dt), tensor.Gather(nil, s.on(big), idx), tensor.Gather(nil, big, idx), tolFor(dt, kExact))
	}
}

func testScatterAdd(t *testing.T, s *suite) {
	r := tensor.NewRNG(15)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{6, 3}, {6}, {4, 2, 2}, {50, 40}} {
			src := append([]int{23}, shape[1:]...)
			for _, idx := range [][]int32{randIdx(r, 23, shape[0]), make([]int32, 23)} {
				d := rand(r, dt, -1, 1, shape...)
				x := rand(r, dt, -1, 1, src...)
				want := tensor.ScatterAdd(d.Clone(), x, idx)
				// Exactly as on the CPU: contributions in increasing source order.
				for _, lay := range layouts {
					gd := lay.make(s, d)
					if gd == nil {
						continue
					}
					what := fmt.Sprintf("ScatterAdd %v %v %s dst", dt, shape, lay.name)
					s.check(t, what, tensor.ScatterAdd(gd, lay.make(s, x), idx), want, tolFor(dt, kReduce))
				}
			}
		}
	}
}

func testSegmentSum(t *testing.T, s *suite) {
	r := tensor.NewRNG(16)
	for _, dt := range dtypes {
		sorted := []int32{0, 0, 0, 2, 2, 3, 5, 5, 5, 5, 5}
		unsorted := []int32{5, 0, 2, 0, 5, 3, 5, 2, 0, 5, 5}
		for _, seg := range [][]int32{sorted, unsorted} {
			for _, shape := range [][]int{{11}, {11, 4}, {11, 3, 2}} {
				x := rand(r, dt, -1, 1, shape...)
				for _, mean := range []bool{false, true} {
					f, fname := tensor.SegmentSum, "SegmentSum"
					if mean {
						f, fname = tensor.SegmentMean, "SegmentMean"
					}
					want := f(nil, x, seg, 7)
					for _, lay := range layouts {
						a := lay.make(s, x)
						if a == nil {
							continue
						}
						what := fmt.Sprintf("%s %v %v seg %v %s", fname, dt, shape, seg, lay.name)
						s.check(t, what, f(nil, a, seg, 7), want, tolFor(dt, kReduce))
					}
					dshape := append([]int{7}, shape[1:]...)
					s.check(t, fmt.Sprintf("%s %v %v strided dst", fname, dt, shape), f(s.stridedDst(dt, dshape...), s.on(x), seg, 7), want, tolFor(dt, kReduce))
				}
			}
		}
		// Many rows per segment.
		x := rand(r, dt, -1, 1, 3000, 5)
		seg := randIdx(r, 3000, 4)
		s.check(t, fmt.Sprintf("SegmentMean %v large", dt), tensor.SegmentMean(nil, s.on(x), seg, 4), tensor.SegmentMean(nil, x, seg, 4), tolFor(dt, kReduce))
	}
}
