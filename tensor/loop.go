package tensor

// loop describes iteration over the elements of a shape for up to four
// operands with their own strides, after dropping dimensions of size 1 and
// merging dimensions that are contiguous for every operand. dims[nd-1] is the
// innermost (fastest) dimension.
type loop struct {
	nd   int
	nops int
	size int
	dims [maxDims]int
	str  [4][maxDims]int
	off  [4]int
}

// cursor is a position in a loop: a multi-index and each operand's offset.
type cursor struct {
	idx [maxDims]int
	off [4]int
}

// broadcastStride returns t's stride for dimension i of a shape of rank r
// that t broadcasts to (0 for a missing or size-1 dimension of t).
func broadcastStride(t *Tensor, i, r int) int {
	k := i - (r - len(t.shape))
	if k < 0 || t.shape[k] == 1 {
		return 0
	}
	return t.strides[k]
}

// setup prepares l to iterate over shape with the given operands, each
// broadcast to shape (a nil operand is skipped and gets stride 0). The
// operand order defines the cursor offsets.
func (l *loop) setup(shape []int, ops ...*Tensor) {
	l.nops = len(ops)
	l.size = 1
	for _, d := range shape {
		l.size *= d
	}
	for k, t := range ops {
		if t != nil {
			l.off[k] = t.offset
		} else {
			l.off[k] = 0
		}
	}
	r := len(shape)
	nd := 0
	// Build from the innermost dimension outwards, in reverse order.
	var rd [maxDims]int
	var rs [4][maxDims]int
	for i := r - 1; i >= 0; i-- {
		d := shape[i]
		if d == 1 {
			continue
		}
		if nd > 0 {
			merge := true
			for k, t := range ops {
				s := 0
				if t != nil {
					s = broadcastStride(t, i, r)
				}
				if s != rs[k][nd-1]*rd[nd-1] {
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
			fail(ErrShape, "loop", "shape %v has more than %d non-mergeable dimensions", shape, maxDims)
		}
		rd[nd] = d
		for k, t := range ops {
			s := 0
			if t != nil {
				s = broadcastStride(t, i, r)
			}
			rs[k][nd] = s
		}
		nd++
	}
	if nd == 0 {
		nd = 1
		rd[0] = 1
		for k := range ops {
			rs[k][0] = 0
		}
	}
	l.nd = nd
	for i := range nd {
		l.dims[i] = rd[nd-1-i]
		for k := range ops {
			l.str[k][i] = rs[k][nd-1-i]
		}
	}
}

// setupStrides is setup for explicit per-operand strides (already matching
// shape's rank) and offsets.
func (l *loop) setupStrides(shape []int, nops int, strides *[4][maxDims]int, offs [4]int) {
	l.nops = nops
	l.size = 1
	for _, d := range shape {
		l.size *= d
	}
	l.off = offs
	nd := 0
	var rd [maxDims]int
	var rs [4][maxDims]int
	for i := len(shape) - 1; i >= 0; i-- {
		d := shape[i]
		if d == 1 {
			continue
		}
		if nd > 0 {
			merge := true
			for k := range nops {
				if strides[k][i] != rs[k][nd-1]*rd[nd-1] {
					merge = false
					break
				}
			}
			if merge {
				rd[nd-1] *= d
				continue
			}
		}
		rd[nd] = d
		for k := range nops {
			rs[k][nd] = strides[k][i]
		}
		nd++
	}
	if nd == 0 {
		nd = 1
		rd[0] = 1
		for k := range nops {
			rs[k][0] = 0
		}
	}
	l.nd = nd
	for i := range nd {
		l.dims[i] = rd[nd-1-i]
		for k := range nops {
			l.str[k][i] = rs[k][nd-1-i]
		}
	}
}

// seek positions c at flat element pos.
func (l *loop) seek(c *cursor, pos int) {
	c.off = l.off
	for i := l.nd - 1; i >= 0; i-- {
		d := l.dims[i]
		x := pos % d
		pos /= d
		c.idx[i] = x
		for k := range l.nops {
			c.off[k] += x * l.str[k][i]
		}
	}
}

// advance moves c forward by n elements along the innermost dimension
// (n <= inner() - c.idx[nd-1]), carrying into outer dimensions.
func (l *loop) advance(c *cursor, n int) {
	i := l.nd - 1
	c.idx[i] += n
	for k := range l.nops {
		c.off[k] += n * l.str[k][i]
	}
	for i > 0 && c.idx[i] == l.dims[i] {
		for k := range l.nops {
			c.off[k] -= l.dims[i] * l.str[k][i]
		}
		c.idx[i] = 0
		i--
		c.idx[i]++
		for k := range l.nops {
			c.off[k] += l.str[k][i]
		}
	}
}
