package tensor

import "unsafe"

// contigDst returns dst if it is contiguous, else a contiguous temporary
// (holding dst's values if keep) to be written back by finishDst.
func contigDst(dst *Tensor, keep bool) *Tensor {
	if dst.IsContiguous() {
		return dst
	}
	t := dst.NewLike()
	if keep {
		CPU.Copy(t, dst)
	}
	return t
}

// finishDst copies the temporary t of contigDst back into dst.
func finishDst(dst, t *Tensor) {
	if t != dst {
		CPU.Copy(dst, t)
	}
}

func (cpuBackend) IndexSelect(dst, a *Tensor, axis int, idx []int32) {
	a = a.Contiguous()
	out := contigDst(dst, false)
	outer := 1
	for _, d := range a.shape[:axis] {
		outer *= d
	}
	inner := 1
	for _, d := range a.shape[axis+1:] {
		inner *= d
	}
	j := getJob(pick(a.dtype, indexSelectRange[float32], indexSelectRange[float64]))
	j.t[0], j.t[1] = out, a
	j.idx = idx
	j.n[0], j.n[1] = inner, a.shape[axis]
	j.runRows(outer*len(idx), inner)
	putJob(j)
	finishDst(dst, out)
}

// indexSelectRange copies rows [lo, hi) of the (outer·len(idx), inner) view
// of dst.
func indexSelectRange[T float](j *job, lo, hi int) {
	d, a := contig[T](j.t[0]), contig[T](j.t[1])
	idx := j.idx
	inner, na := j.n[0], j.n[1]
	ni := len(idx)
	for r := lo; r < hi; r++ {
		o, k := r/ni, r%ni
		src := (o*na + int(idx[k])) * inner
		copy(d[r*inner:(r+1)*inner], a[src:src+inner])
	}
}

func (cpuBackend) ScatterAdd(dst, src *Tensor, idx []int32) {
	src = src.Contiguous()
	out := contigDst(dst, true)
	scatterAdd(out, src, idx)
	finishDst(dst, out)
}

// scatterAdd adds src rows into the contiguous dst rows idx.
//
// Large scatters split the source rows into a few consecutive chunks (so
// every chunk streams its part of src): chunk 0 adds into dst, chunk c > 0
// into a private zeroed buffer, and the buffers are then added into dst in
// chunk order. Partitioning the destination instead would make every chunk
// read src sparsely, which measures several times slower. The chunking
// depends only on the sizes, so results are reproducible across machines.
func scatterAdd(dst, src *Tensor, idx []int32) {
	rows := dst.shape[0]
	width := 1
	for _, d := range dst.shape[1:] {
		width *= d
	}
	e := len(idx)
	// Two chunks when there are at least four source rows per destination
	// row (so the private buffer, its zeroing and the final pass cost little
	// next to streaming src) and enough work; one otherwise.
	nch := min(2, e*width/(4*parallelGrain), e/(4*max(rows, 1)))
	if nch < 2 {
		j := getJob(pick(dst.dtype, scatterRange[float32], scatterRange[float64]))
		j.t[0], j.t[1] = dst, src
		j.idx = idx
		j.n[0] = width
		j.run(e, e)
		putJob(j)
		return
	}
	size := rows * width
	p := getScratch(((nch-1)*size*dst.dtype.Size() + 7) / 8)
	j := getJob(pick(dst.dtype, scatterRange[float32], scatterRange[float64]))
	j.t[0], j.t[1] = dst, src
	j.idx = idx
	j.n[0], j.n[1] = width, size
	j.s64 = *p
	j.run(e, (e+nch-1)/nch)
	j.fn = pick(dst.dtype, scatterCombineRange[float32], scatterCombineRange[float64])
	j.n[2] = nch - 1
	j.runRows(size, nch)
	putJob(j)
	putScratch(p)
}

// scatterRange adds the source rows [lo, hi) into dst (chunk 0) or into the
// chunk's private buffer in j.s64.
func scatterRange[T float](j *job, lo, hi int) {
	d, s := contig[T](j.t[0]), contig[T](j.t[1])
	w := j.n[0]
	if c := lo / j.chunk; c > 0 {
		size := j.n[1]
		buf := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(j.s64))), len(j.s64)*8/int(unsafe.Sizeof(d[0])))
		d = buf[(c-1)*size : c*size]
		clear(d)
	}
	idx := j.idx[lo:hi]
	s = s[lo*w:]
	for i, r := range idx {
		addTo(d[int(r)*w:int(r)*w+w], s[i*w:i*w+w])
	}
}

// scatterCombineRange adds the private buffers into dst elements [lo, hi).
func scatterCombineRange[T float](j *job, lo, hi int) {
	d := contig[T](j.t[0])
	var z T
	buf := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(j.s64))), len(j.s64)*8/int(unsafe.Sizeof(z)))
	size := j.n[1]
	for c := range j.n[2] {
		addTo(d[lo:hi], buf[c*size+lo:c*size+hi])
	}
}

func (cpuBackend) SegmentSum(dst, src *Tensor, seg []int32, mean bool) {
	src = src.Contiguous()
	out := contigDst(dst, false)
	nseg := out.shape[0]
	width := 1
	for _, d := range out.shape[1:] {
		width *= d
	}
	sorted := true
	for i := 1; i < len(seg); i++ {
		if seg[i] < seg[i-1] {
			sorted = false
			break
		}
	}
	if sorted {
		j := getJob(pick(out.dtype, segmentSortedRange[float32], segmentSortedRange[float64]))
		j.t[0], j.t[1] = out, src
		j.idx = seg
		j.n[0] = width
		j.b[0] = mean
		j.runRows(nseg, max(1, len(seg)*width/max(nseg, 1)))
		putJob(j)
	} else {
		CPU.Fill(out, 0)
		scatterAdd(out, src, seg)
		if mean {
			p := getScratch(nseg)
			cnt := *p
			clear(cnt)
			for _, s := range seg {
				cnt[s]++
			}
			j := getJob(pick(out.dtype, scaleRowsRange[float32], scaleRowsRange[float64]))
			j.t[0] = out
			j.s64 = cnt
			j.n[0] = width
			j.runRows(nseg, width)
			putJob(j)
			putScratch(p)
		}
	}
	finishDst(dst, out)
}

// lowerBound returns the first i with s[i] >= v in the sorted s.
func lowerBound(s []int32, v int32) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// segmentSortedRange sums segments [lo, hi) when seg is sorted: segment s
// is the contiguous run of rows with seg == s.
func segmentSortedRange[T float](j *job, lo, hi int) {
	d, s := contig[T](j.t[0]), contig[T](j.t[1])
	seg := j.idx
	w := j.n[0]
	r := lowerBound(seg, int32(lo))
	for g := lo; g < hi; g++ {
		dr := d[g*w : g*w+w]
		clear(dr)
		start := r
		for r < len(seg) && int(seg[r]) == g {
			addTo(dr, s[r*w:r*w+w])
			r++
		}
		if j.b[0] && r > start {
			inv := 1 / T(r-start)
			for c := range dr {
				dr[c] *= inv
			}
		}
	}
}

// scaleRowsRange divides rows [lo, hi) by their counts j.s64 (rows with
// count 0 are left as they are, i.e. zero).
func scaleRowsRange[T float](j *job, lo, hi int) {
	d := contig[T](j.t[0])
	w := j.n[0]
	for g := lo; g < hi; g++ {
		if c := j.s64[g]; c > 0 {
			inv := T(1 / c)
			dr := d[g*w : g*w+w]
			for i := range dr {
				dr[i] *= inv
			}
		}
	}
}

// addTo sets d += s elementwise (len(s) >= len(d)).
func addTo[T float](d, s []T) {
	s = s[:len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		dd, ss := d[i:i+4:i+4], s[i:i+4:i+4]
		dd[0] += ss[0]
		dd[1] += ss[1]
		dd[2] += ss[2]
		dd[3] += ss[3]
	}
	for ; i < len(d); i++ {
		d[i] += s[i]
	}
}
