package tensor

import "slices"

func (t *Tensor) view(shape, strides []int, offset int) *Tensor {
	return &Tensor{dtype: t.dtype, shape: shape, strides: strides, offset: offset, st: t.st}
}

// Reshape returns a tensor with t's elements in row-major order and the
// given shape, in which one dimension may be -1 (inferred). It is a view
// sharing t's storage when t is contiguous, and a contiguous copy otherwise.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	shape = cloneInts(shape)
	infer, n := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			fail(ErrShape, "Reshape", "invalid shape %v for %v", shape, t.shape)
		default:
			n *= d
		}
	}
	size := t.Size()
	if infer >= 0 {
		if n == 0 || size%n != 0 {
			fail(ErrShape, "Reshape", "cannot reshape %v to %v", t.shape, shape)
		}
		shape[infer] = size / n
		n *= shape[infer]
	}
	if n != size {
		fail(ErrShape, "Reshape", "cannot reshape %v (%d elements) to %v", t.shape, size, shape)
	}
	src := t
	if !t.IsContiguous() {
		src = t.Clone()
	}
	return src.view(shape, rowMajorStrides(shape), src.offset)
}

// Transpose returns a view of t with axes a and b swapped (negative axes
// count from the end).
func (t *Tensor) Transpose(a, b int) *Tensor {
	a, b = t.axis("Transpose", a), t.axis("Transpose", b)
	shape, strides := cloneInts(t.shape), cloneInts(t.strides)
	shape[a], shape[b] = shape[b], shape[a]
	strides[a], strides[b] = strides[b], strides[a]
	return t.view(shape, strides, t.offset)
}

// T returns the view of t with its last two axes swapped (Transpose(-2, -1)).
func (t *Tensor) T() *Tensor { return t.Transpose(-2, -1) }

// Permute returns a view of t whose axis i is t's axis axes[i].
func (t *Tensor) Permute(axes ...int) *Tensor {
	if len(axes) != len(t.shape) {
		fail(ErrShape, "Permute", "axes %v for shape %v", axes, t.shape)
	}
	seen := make([]bool, len(axes))
	shape, strides := make([]int, len(axes)), make([]int, len(axes))
	for i, a := range axes {
		a = t.axis("Permute", a)
		if seen[a] {
			fail(ErrShape, "Permute", "repeated axis in %v", axes)
		}
		seen[a] = true
		shape[i], strides[i] = t.shape[a], t.strides[a]
	}
	return t.view(shape, strides, t.offset)
}

// Slice returns the view of t restricted to indices [start, end) along axis.
func (t *Tensor) Slice(axis, start, end int) *Tensor {
	axis = t.axis("Slice", axis)
	if start < 0 || end < start || end > t.shape[axis] {
		fail(ErrIndex, "Slice", "range [%d, %d) on axis %d of shape %v", start, end, axis, t.shape)
	}
	shape := cloneInts(t.shape)
	shape[axis] = end - start
	return t.view(shape, cloneInts(t.strides), t.offset+start*t.strides[axis])
}

// Expand returns a broadcast view of t with the given shape: new leading
// dimensions and dimensions of size 1 get stride 0, so every element of the
// view along them is the same storage element. A -1 keeps t's dimension.
// Writing into an expanded view writes the shared element repeatedly.
func (t *Tensor) Expand(shape ...int) *Tensor {
	if len(shape) < len(t.shape) {
		fail(ErrShape, "Expand", "cannot expand %v to %v", t.shape, shape)
	}
	off := len(shape) - len(t.shape)
	out, strides := cloneInts(shape), make([]int, len(shape))
	for i := range shape {
		k := i - off
		if k < 0 {
			if shape[i] < 0 {
				fail(ErrShape, "Expand", "cannot expand %v to %v", t.shape, shape)
			}
			continue
		}
		d := t.shape[k]
		switch {
		case shape[i] == -1 || shape[i] == d:
			out[i] = d
			strides[i] = t.strides[k]
		case d == 1 && shape[i] >= 0:
			strides[i] = 0
		default:
			fail(ErrShape, "Expand", "cannot expand %v to %v", t.shape, shape)
		}
	}
	return t.view(out, strides, t.offset)
}

// Unsqueeze returns a view of t with a new dimension of size 1 inserted at
// axis (0 <= axis <= Rank; negative counts from the end, -1 appends).
func (t *Tensor) Unsqueeze(axis int) *Tensor {
	r := len(t.shape)
	if axis < 0 {
		axis += r + 1
	}
	if axis < 0 || axis > r {
		fail(ErrIndex, "Unsqueeze", "axis %d for shape %v", axis, t.shape)
	}
	st := 1
	if axis < r {
		st = t.strides[axis] * t.shape[axis]
	}
	return t.view(slices.Insert(cloneInts(t.shape), axis, 1), slices.Insert(cloneInts(t.strides), axis, st), t.offset)
}

// Squeeze returns a view of t without axis, which must have size 1.
func (t *Tensor) Squeeze(axis int) *Tensor {
	axis = t.axis("Squeeze", axis)
	if t.shape[axis] != 1 {
		fail(ErrShape, "Squeeze", "axis %d of shape %v has size %d, want 1", axis, t.shape, t.shape[axis])
	}
	return t.view(slices.Delete(cloneInts(t.shape), axis, axis+1), slices.Delete(cloneInts(t.strides), axis, axis+1), t.offset)
}

// Contiguous returns t itself if it is contiguous, else a contiguous copy.
func (t *Tensor) Contiguous() *Tensor {
	if t.IsContiguous() {
		return t
	}
	return t.Clone()
}

// Copy sets dst = src elementwise, src broadcast to dst's shape, converting
// dtype if they differ, and returns dst. dst and src may be on different
// backends (the copy then goes through host memory). Overlapping dst and src
// views of one storage give unspecified results unless they are identical.
func Copy(dst, src *Tensor) *Tensor {
	if !broadcastsTo(src.shape, dst.shape) {
		fail(ErrShape, "Copy", "src shape %v does not broadcast to dst shape %v", src.shape, dst.shape)
	}
	if dst.Size() == 0 {
		return dst
	}
	db, sb := dst.backend(), src.backend()
	if db == sb {
		db.Copy(dst, src)
		return dst
	}
	host := src
	if sb != CPU {
		host = src.ToBackend(CPU)
	}
	if !sameShape(host.shape, dst.shape) || host.dtype != dst.dtype || !host.IsContiguous() {
		h := New(dst.dtype, dst.shape...)
		CPU.Copy(h, host)
		host = h
	}
	if db == CPU {
		CPU.Copy(dst, host)
		return dst
	}
	if dst.IsContiguous() {
		db.Upload(dst, host)
		return dst
	}
	tmp := EmptyOn(db, dst.dtype, dst.shape...)
	db.Upload(tmp, host)
	db.Copy(dst, tmp)
	return dst
}

// Fill sets every element of t to v (rounded to t's dtype) and returns t.
func (t *Tensor) Fill(v float64) *Tensor {
	if t.Size() > 0 {
		t.backend().Fill(t, v)
	}
	return t
}

// Zero sets every element of t to 0 and returns t.
func (t *Tensor) Zero() *Tensor { return t.Fill(0) }

// Concat joins ts along axis into dst and returns it. All ts have the same
// dtype, backend and shape except along axis; dst (nil allocates) has that
// shape with shape[axis] the sum of theirs.
func Concat(dst *Tensor, axis int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		fail(ErrShape, "Concat", "no tensors")
	}
	be := pickBackend("Concat", dst, ts...)
	first := ts[0]
	axis = first.axis("Concat", axis)
	sameDType("Concat", first.dtype, ts...)
	total := 0
	for _, t := range ts {
		if len(t.shape) != len(first.shape) {
			fail(ErrShape, "Concat", "shapes %v and %v differ in rank", first.shape, t.shape)
		}
		for i := range t.shape {
			if i != axis && t.shape[i] != first.shape[i] {
				fail(ErrShape, "Concat", "shapes %v and %v differ outside axis %d", first.shape, t.shape, axis)
			}
		}
		total += t.shape[axis]
	}
	if dst == nil {
		shape := cloneInts(first.shape)
		shape[axis] = total
		dst = EmptyOn(be, first.dtype, shape...)
	} else {
		if dst.dtype != first.dtype || len(dst.shape) != len(first.shape) || dst.shape[axis] != total {
			fail(ErrShape, "Concat", "dst shape %v (%v) for %d tensors of shape %v joined on axis %d (total %d)", dst.shape, dst.dtype, len(ts), first.shape, axis, total)
		}
		for i := range dst.shape {
			if i != axis && dst.shape[i] != first.shape[i] {
				fail(ErrShape, "Concat", "dst shape %v, inputs %v", dst.shape, first.shape)
			}
		}
	}
	start := 0
	for _, t := range ts {
		n := t.shape[axis]
		if n > 0 && t.Size() > 0 {
			be.Copy(dst.Slice(axis, start, start+n), t)
		}
		start += n
	}
	return dst
}

// Split returns views of a cut along axis into consecutive pieces of the
// given sizes, which must sum to a.Dim(axis).
func Split(a *Tensor, axis int, sizes ...int) []*Tensor {
	axis = a.axis("Split", axis)
	total := 0
	for _, s := range sizes {
		if s < 0 {
			fail(ErrShape, "Split", "negative size in %v", sizes)
		}
		total += s
	}
	if total != a.shape[axis] {
		fail(ErrShape, "Split", "sizes %v do not sum to dimension %d of shape %v", sizes, axis, a.shape)
	}
	out := make([]*Tensor, len(sizes))
	start := 0
	for i, s := range sizes {
		out[i] = a.Slice(axis, start, start+s)
		start += s
	}
	return out
}
