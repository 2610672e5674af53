package cuda

import (
	"runtime"

	"lgflow/tensor"
)

// gineIndex is the device copy of a tensor.EdgeIndex (as built, not
// flipped): its groupings by destination and by source and its class
// tiles, in one block uploaded with one copy. It is cached in the index
// (EdgeIndex.DeviceCache), so every layer of a batch and the backward
// pass share it; its block returns to the allocator on Release (through
// EdgeIndex.Release, e.g. when an autograd tape that owns the index is
// released) or when it becomes unreachable.
type gineIndex struct {
	a   *allocator
	blk *block
	// Device addresses: ptr/other/row of the grouping by destination
	// ([0]) and by source ([1]); the class tiles' endpoints, bounds,
	// classes and per-class tile ranges.
	ptr, other, row           [2]uintptr
	csrc, cdst, lo, cls, cptr uintptr
	tiles                     int
	cleanup                   runtime.Cleanup
}

// Release returns the index's device memory to the allocator's cache.
func (x *gineIndex) Release() {
	x.cleanup.Stop()
	x.a.putBlock(x.blk)
}

// gineIndex returns the device copy of g, uploading it on first use.
// Called with the backend entered.
func (b *Backend) gineIndex(g *tensor.EdgeIndex) *gineIndex {
	base := g
	if g.Flipped() {
		base = g.Flip()
	}
	return g.DeviceCache(b, func() any { return b.uploadGINEIndex(base) }).(*gineIndex)
}

// uploadGINEIndex builds g's groupings on the host (if not yet built) and
// copies them to the device in one block.
func (b *Backend) uploadGINEIndex(g *tensor.EdgeIndex) *gineIndex {
	csr := [2]tensor.EdgeCSR{g.ByDst(), g.BySrc()}
	ct := g.ByClass()
	parts := [...][]int32{csr[0].Ptr, csr[0].Other, csr[0].Row, csr[1].Ptr, csr[1].Other, csr[1].Row,
		ct.Src, ct.Dst, ct.Lo, ct.Class, ct.Ptr}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	buf := b.int32Scratch(n)
	var off [len(parts)]uintptr
	pos := 0
	for i, p := range parts {
		off[i] = uintptr(pos * 4)
		pos += copy(buf[pos:], p)
	}
	blk := b.uploadI32(buf)
	at := func(i int) uintptr { return blk.ptr + off[i] }
	x := &gineIndex{a: &b.alloc, blk: blk,
		ptr: [2]uintptr{at(0), at(3)}, other: [2]uintptr{at(1), at(4)}, row: [2]uintptr{at(2), at(5)},
		csrc: at(6), cdst: at(7), lo: at(8), cls: at(9), cptr: at(10), tiles: len(ct.Class)}
	a := &b.alloc
	x.cleanup = runtime.AddCleanup(x, func(blk *block) { a.putBlock(blk) }, blk)
	return x
}

// GINEAggregate sets out to the GINE neighbourhood sums over g (see
// tensor.GINEAggregate): one thread per (node, column) sums the node's
// incoming edges in edge order, as the CPU does, so the result is the
// CPU's bit for bit. The index is uploaded on the first call for g and
// reused afterwards.
func (b *Backend) GINEAggregate(out, h, e *tensor.Tensor, g *tensor.EdgeIndex) {
	b.enter()
	defer b.exit()
	n := out.Size()
	if n == 0 {
		return
	}
	x := b.gineIndex(g)
	w := 0 // grouping by destination of the index as built
	if g.Flipped() {
		w = 1
	}
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(h)).ptr(b.optPtr(e)).ptr(x.ptr[w]).ptr(x.other[w]).ptr(x.row[w]).
		i64(g.Nodes()).i64(h.Dim(1))
	b.launch(kGINEFwd, dtv(out.DType()), b.grid1(n), 1, threads)
}

// GINEAggregateBackward accumulates the gradients of GINEAggregate (see
// tensor.GINEAggregateBackward) without atomics, whatever SetDeterministic
// says: dh (and dense de, one row per edge) by one thread per (node,
// column) over the node's outgoing edges in edge order, as on the CPU;
// a per-class de in two passes, partial sums over tiles of at most
// tensor.ClassTileEdges edges of one class, then each class's tiles in
// order (atomics would all hit the table's few rows).
func (b *Backend) GINEAggregateBackward(dh, de, gout, h, e *tensor.Tensor, g *tensor.EdgeIndex) {
	b.enter()
	defer b.exit()
	if dh == nil && de == nil || h.Size() == 0 || g.Len() == 0 {
		return
	}
	x := b.gineIndex(g)
	f := h.Dim(1)
	w := 1 // grouping by source of the index as built
	if g.Flipped() {
		w = 0
	}
	classes := e != nil && g.Classes() != nil
	var denseDE *tensor.Tensor
	if !classes {
		denseDE = de
	}
	if dh != nil || denseDE != nil {
		n := g.Nodes() * f
		b.args.reset()
		b.args.ptr(b.optPtr(dh)).ptr(b.optPtr(denseDE)).ptr(b.dptr(gout)).ptr(b.dptr(h)).ptr(b.optPtr(e)).
			ptr(x.ptr[w]).ptr(x.other[w]).ptr(x.row[w]).i64(g.Nodes()).i64(f)
		b.launch(kGINEBwdSrc, dtv(h.DType()), b.grid1(n), 1, threads)
	}
	if de != nil && classes && x.tiles > 0 {
		src, dst := x.csrc, x.cdst
		if g.Flipped() {
			src, dst = dst, src
		}
		part := b.newTensor(h.DType(), x.tiles, f)
		b.args.reset()
		b.args.ptr(b.dptr(part)).ptr(b.dptr(gout)).ptr(b.dptr(h)).ptr(b.dptr(e)).ptr(src).ptr(dst).
			ptr(x.lo).ptr(x.cls).i64(x.tiles).i64(f)
		b.launch(kGINEDeTiles, dtv(h.DType()), b.grid1(x.tiles*f), 1, threads)
		b.args.reset()
		b.args.ptr(b.dptr(de)).ptr(b.dptr(part)).ptr(x.cptr).i64(g.NumClasses()).i64(f)
		b.launch(kGINEDeSum, dtv(h.DType()), b.grid1(g.NumClasses()*f), 1, threads)
		b.free(part)
	}
}
