package tensor

func checkIndices(name string, idx []int32, n int) {
	for i, x := range idx {
		if x < 0 || int(x) >= n {
			fail(ErrIndex, name, "index %d at position %d out of range [0, %d)", x, i, n)
		}
	}
}

// IndexSelect sets dst to the slices of a at positions idx along axis:
// dst[..., j, ...] = a[..., idx[j], ...]. dst has a's shape with
// shape[axis] = len(idx); nil allocates. Indices may repeat; an index out of
// range panics.
func IndexSelect(dst, a *Tensor, axis int, idx []int32) *Tensor {
	be := pickBackend("IndexSelect", dst, a)
	axis = a.axis("IndexSelect", axis)
	checkIndices("IndexSelect", idx, a.shape[axis])
	if dst == nil {
		shape := cloneInts(a.shape)
		shape[axis] = len(idx)
		dst = EmptyOn(be, a.dtype, shape...)
	} else {
		ok := dst.dtype == a.dtype && len(dst.shape) == len(a.shape)
		for i := 0; ok && i < len(a.shape); i++ {
			if i == axis {
				ok = dst.shape[i] == len(idx)
			} else {
				ok = dst.shape[i] == a.shape[i]
			}
		}
		if !ok {
			fail(ErrShape, "IndexSelect", "dst shape %v (%v) for selecting %d indices on axis %d of %v", dst.shape, dst.dtype, len(idx), axis, a.shape)
		}
	}
	if dst.Size() > 0 {
		be.IndexSelect(dst, a, axis, idx)
	}
	return dst
}

// Gather sets dst[i, ...] = a[idx[i], ...] (IndexSelect along axis 0), the
// message-passing read of node features at edge endpoints.
func Gather(dst, a *Tensor, idx []int32) *Tensor { return IndexSelect(dst, a, 0, idx) }

// rowsShape checks that src is (len(idx), dst.shape[1:]...).
func checkRows(name string, dst, src *Tensor, n int) {
	if len(dst.shape) == 0 || len(src.shape) != len(dst.shape) || src.shape[0] != n || !sameShape(src.shape[1:], dst.shape[1:]) {
		fail(ErrShape, name, "dst shape %v and src shape %v with %d indices", dst.shape, src.shape, n)
	}
	sameDType(name, dst.dtype, src)
}

// ScatterAdd adds every row of src into dst at the rows given by idx:
// dst[idx[i], ...] += src[i, ...], accumulating where indices repeat — the
// adjoint of Gather. dst is required and is updated in place; src has shape
// (len(idx), dst.shape[1:]...). The result is deterministic: each row of dst
// receives its contributions in increasing i.
func ScatterAdd(dst, src *Tensor, idx []int32) *Tensor {
	be := pickBackend("ScatterAdd", dst, src)
	checkRows("ScatterAdd", dst, src, len(idx))
	checkIndices("ScatterAdd", idx, dst.shape[0])
	if src.Size() > 0 {
		be.ScatterAdd(dst, src, idx)
	}
	return dst
}

func segmentOp(name string, dst, src *Tensor, seg []int32, nseg int, mean bool) *Tensor {
	be := pickBackend(name, dst, src)
	if len(src.shape) == 0 {
		fail(ErrShape, name, "src is a scalar")
	}
	if dst == nil {
		shape := cloneInts(src.shape)
		shape[0] = nseg
		dst = EmptyOn(be, src.dtype, shape...)
	} else if len(dst.shape) == 0 || dst.shape[0] != nseg {
		fail(ErrShape, name, "dst shape %v for %d segments", dst.shape, nseg)
	}
	checkRows(name, dst, src, len(seg))
	checkIndices(name, seg, nseg)
	if dst.Size() > 0 {
		be.SegmentSum(dst, src, seg, mean)
	}
	return dst
}

// SegmentSum sets dst[s, ...] = Σ src[i, ...] over rows i with seg[i] == s,
// for s in [0, nseg) (dst is overwritten, not accumulated; an empty segment
// gives 0). dst has shape (nseg, src.shape[1:]...); nil allocates. seg need
// not be sorted.
func SegmentSum(dst, src *Tensor, seg []int32, nseg int) *Tensor {
	return segmentOp("SegmentSum", dst, src, seg, nseg, false)
}

// SegmentMean is SegmentSum divided by each segment's row count (an empty
// segment gives 0).
func SegmentMean(dst, src *Tensor, seg []int32, nseg int) *Tensor {
	return segmentOp("SegmentMean", dst, src, seg, nseg, true)
}
