package cuda

import (
	"lgflow/tensor"
)

// IndexSelect sets dst to the slices of a at idx along axis. The indices
// are copied to the device for each call.
func (b *Backend) IndexSelect(dst, a *tensor.Tensor, axis int, idx []int32) {
	b.enter()
	defer b.exit()
	n := dst.Size()
	if n == 0 {
		return
	}
	a, tmp := b.contig(a)
	if tmp {
		defer b.free(a)
	}
	out := b.contigDst(dst, false)
	shape := a.Shape()
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	dev := b.uploadI32(idx)
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(a)).ptr(dev.ptr).i64(len(idx)).i64(shape[axis]).i64(inner).i64(n)
	b.launch(kIndexSelect, dtv(a.DType()), b.grid1(n), 1, threads)
	b.alloc.putBlock(dev)
	b.finishDst(dst, out)
}

// ScatterAdd adds src[i, ...] into dst[idx[i], ...]. In deterministic mode
// (the default, see SetDeterministic) every destination row receives its
// contributions in increasing i, exactly as on the CPU.
func (b *Backend) ScatterAdd(dst, src *tensor.Tensor, idx []int32) {
	b.enter()
	defer b.exit()
	if src.Size() == 0 {
		return
	}
	src, tmp := b.contig(src)
	if tmp {
		defer b.free(src)
	}
	out := b.contigDst(dst, true)
	w := rowWidth(out)
	if b.deterministic {
		b.csrSum(out, src, idx, out.Dim(0), w, true, false)
	} else {
		b.scatterAtomic(out, src, idx, w)
	}
	b.finishDst(dst, out)
}

// SegmentSum sets dst[s, ...] to the sum (mean if mean) of the src rows i
// with seg[i] == s; empty segments get 0.
func (b *Backend) SegmentSum(dst, src *tensor.Tensor, seg []int32, mean bool) {
	b.enter()
	defer b.exit()
	if dst.Size() == 0 {
		return
	}
	out := b.contigDst(dst, false)
	b.fill(out, 0)
	if src.Size() > 0 {
		src, tmp := b.contig(src)
		if tmp {
			defer b.free(src)
		}
		w := rowWidth(out)
		nseg := out.Dim(0)
		if b.deterministic {
			b.csrSum(out, src, seg, nseg, w, false, mean)
		} else {
			b.scatterAtomic(out, src, seg, w)
			if mean {
				cnt := b.int32Scratch(nseg)
				clear(cnt)
				for _, s := range seg {
					cnt[s]++
				}
				dev := b.uploadI32(cnt)
				b.args.reset()
				b.args.ptr(b.dptr(out)).ptr(dev.ptr).i64(w).i64(out.Size())
				b.launch(kScaleRows, dtv(out.DType()), b.grid1(out.Size()), 1, threads)
				b.alloc.putBlock(dev)
			}
		}
	}
	b.finishDst(dst, out)
}

// rowWidth returns the number of elements of t per index of its first axis.
func rowWidth(t *tensor.Tensor) int {
	w := 1
	for _, d := range t.Shape()[1:] {
		w *= d
	}
	return w
}

func (b *Backend) scatterAtomic(out, src *tensor.Tensor, idx []int32, w int) {
	n := len(idx) * w
	if n == 0 {
		return
	}
	dev := b.uploadI32(idx)
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(src)).ptr(dev.ptr).i64(w).i64(n)
	b.launch(kScatterAtomic, dtv(out.DType()), b.grid1(n), 1, threads)
	b.alloc.putBlock(dev)
}

// buildCSR groups the positions i of idx (values in [0, rows)) by value
// with a stable counting sort. In the returned buf, the first u entries
// are the distinct values in increasing order, the next u+1 the start of
// each one's positions in the last len(idx) entries (perm), positions
// increasing within a value. cnt is scratch of length rows.
func buildCSR(idx []int32, rows int, cnt, buf []int32) (out []int32, u int) {
	clear(cnt)
	for _, r := range idx {
		cnt[r]++
	}
	for _, c := range cnt {
		if c > 0 {
			u++
		}
	}
	need := u + u + 1 + len(idx)
	if cap(buf) < need {
		buf = make([]int32, need)
	}
	out = buf[:need]
	list, ptr, perm := out[:u], out[u:2*u+1], out[2*u+1:]
	j, pos := 0, int32(0)
	for r, c := range cnt {
		if c > 0 {
			list[j] = int32(r)
			ptr[j] = pos
			cnt[r] = pos
			pos += c
			j++
		}
	}
	ptr[u] = pos
	for i, r := range idx {
		perm[cnt[r]] = int32(i)
		cnt[r]++
	}
	return out, u
}

// csrSum sums the src rows grouped by idx into out's rows in increasing
// source order, adding to out's values if accumulate.
func (b *Backend) csrSum(out, src *tensor.Tensor, idx []int32, rows, w int, accumulate, mean bool) {
	if len(idx) == 0 || w == 0 {
		return
	}
	scratch := b.int32Scratch(3*rows + 1 + len(idx))
	buf, u := buildCSR(idx, rows, scratch[:rows], scratch[rows:])
	dev := b.uploadI32(buf)
	list := dev.ptr
	ptr := dev.ptr + uintptr(u*4)
	perm := dev.ptr + uintptr((2*u+1)*4)
	acc, mn := 0, 0
	if accumulate {
		acc = 1
	}
	if mean {
		mn = 1
	}
	n := u * w
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(src)).ptr(list).ptr(ptr).ptr(perm).i64(u).i64(w).i32(acc).i32(mn)
	b.launch(kCSRSum, dtv(out.DType()), b.grid1(n), 1, threads)
	b.alloc.putBlock(dev)
}
