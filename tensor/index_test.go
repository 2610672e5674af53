package tensor

import (
	"fmt"
	"testing"
)

func TestIndexSelect(t *testing.T) {
	r := NewRNG(30)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{5}, {5, 3}, {4, 5, 3}, {7, 70}} {
			a0 := randT(r, dt, shape...)
			for lname, a := range layouts(a0) {
				for axis := range shape {
					n := shape[axis]
					idx := []int32{int32(n - 1), 0, int32(n / 2), int32(n - 1)}
					name := fmt.Sprintf("%v/%v/%s/axis%d", dt, shape, lname, axis)
					wshape := cloneInts(shape)
					wshape[axis] = len(idx)
					var want []float64
					forEachIndex(wshape, func(ix []int) {
						src := cloneInts(ix)
						src[axis] = int(idx[ix[axis]])
						want = append(want, a.At(src...))
					})
					assertClose(t, IndexSelect(nil, a, axis, idx), wshape, want, 0, name)
					for ld, d := range layouts(New(dt, wshape...)) {
						assertClose(t, IndexSelect(d, a, axis, idx), wshape, want, 0, name+"/dst "+ld)
					}
				}
			}
		}
	}
	mustPanic(t, ErrIndex, func() { Gather(nil, New(Float32, 3, 2), []int32{0, 3}) }, "tensor.IndexSelect", "index 3")
}

func TestScatterAddSegment(t *testing.T) {
	r := NewRNG(31)
	for _, dt := range dtypes {
		for _, width := range []int{1, 3, 40, 130} {
			for _, nidx := range []int{0, 1, 17, 5000} {
				rows := 11
				idx := make([]int32, nidx)
				for i := range idx {
					idx[i] = int32(r.Intn(rows))
				}
				idx2 := append([]int32(nil), idx...)
				src := randT(r, dt, nidx, width)
				base := randT(r, dt, rows, width)
				want := base.Float64s()
				sum := make([]float64, rows*width)
				cnt := make([]float64, rows)
				for i, g := range idx {
					cnt[g]++
					for c := range width {
						want[int(g)*width+c] += src.At(i, c)
						sum[int(g)*width+c] += src.At(i, c)
					}
				}
				mean := make([]float64, len(sum))
				for g := range rows {
					for c := range width {
						if cnt[g] > 0 {
							mean[g*width+c] = sum[g*width+c] / cnt[g]
						}
					}
				}
				name := fmt.Sprintf("%v/w%d/n%d", dt, width, nidx)
				tl := 1e-4
				if dt == Float64 {
					tl = 1e-10
				}
				assertClose(t, ScatterAdd(base.Clone(), src, idx), []int{rows, width}, want, tl, name+"/ScatterAdd")
				assertClose(t, SegmentSum(nil, src, idx, rows), []int{rows, width}, sum, tl, name+"/SegmentSum")
				assertClose(t, SegmentMean(nil, src, idx, rows), []int{rows, width}, mean, tl, name+"/SegmentMean")
				// Sorted segments take the segment-parallel path.
				sortInt32(idx2)
				sum2 := make([]float64, rows*width)
				for i, g := range idx2 {
					for c := range width {
						sum2[int(g)*width+c] += src.At(i, c)
					}
				}
				assertClose(t, SegmentSum(New(dt, rows, width).Fill(5), src, idx2, rows), []int{rows, width}, sum2, tl, name+"/SegmentSum sorted")
			}
		}
	}
	mustPanic(t, ErrShape, func() { ScatterAdd(New(Float32, 3, 2), New(Float32, 2, 3), []int32{0, 1}) }, "tensor.ScatterAdd", "[3 2]", "[2 3]")
	mustPanic(t, ErrIndex, func() { SegmentSum(nil, New(Float32, 2, 3), []int32{0, 2}, 2) }, "tensor.SegmentSum", "index 2")
}

func sortInt32(s []int32) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestConcatSplit(t *testing.T) {
	r := NewRNG(32)
	for _, dt := range dtypes {
		a, b, c := randT(r, dt, 2, 3), randT(r, dt, 2, 1), randT(r, dt, 2, 4)
		got := Concat(nil, 1, a, b.T().T(), c)
		var want []float64
		for i := range 2 {
			for j := range 3 {
				want = append(want, a.At(i, j))
			}
			want = append(want, b.At(i, 0))
			for j := range 4 {
				want = append(want, c.At(i, j))
			}
		}
		assertClose(t, got, []int{2, 8}, want, 0, "Concat axis 1")
		parts := Split(got, 1, 3, 1, 4)
		for i, p := range []*Tensor{a, b, c} {
			assertClose(t, parts[i], p.shape, p.Float64s(), 0, fmt.Sprintf("Split part %d", i))
		}
		rows := Concat(nil, 0, a, randT(r, dt, 1, 3))
		if rows.Dim(0) != 3 || rows.At(1, 2) != a.At(1, 2) {
			t.Errorf("Concat axis 0: %v", rows)
		}
	}
	mustPanic(t, ErrShape, func() { Concat(nil, 0, New(Float32, 2, 3), New(Float32, 2, 4)) }, "tensor.Concat", "[2 3]", "[2 4]")
	mustPanic(t, ErrShape, func() { Split(New(Float32, 5), 0, 2, 2) }, "tensor.Split")
}
