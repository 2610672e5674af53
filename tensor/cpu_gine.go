package tensor

import (
	"math"
	"unsafe"
)

// The CPU's GINE kernels split the nodes across cores (in chunks that depend
// only on the sizes, see job.run) and sum each node's row over its edges in
// increasing k (EdgeIndex.ByDst, BySrc), so every row receives its
// contributions in edge order whatever the number of cores; they are the
// CUDA backend's kernels (cuda/kernels/gine.cu) for out and dh, with the
// same sums in the same order; a per-class de is summed in chunks of nodes
// (see GINEAggregateBackward). (Splitting the feature columns instead, as
// before, left every core walking all the edges: two cores took as long as
// one.)

// GINEAggregate overwrites out with the neighbourhood sums (see the package
// function): every node's row is zeroed, then its edges' messages added.
func (cpuBackend) GINEAggregate(out, h, e *Tensor, g *EdgeIndex) {
	j := getJob(pick(out.dtype, gineForwardRange[float32], gineForwardRange[float64]))
	j.t[0], j.t[1], j.t[2] = out, h, e
	j.csr = g.ByDst()
	j.n[0] = h.shape[1]
	j.runRows(g.Nodes(), gineRowCost(g, h.shape[1]))
	putJob(j)
}

// gineRowCost is the work of a node's row: its mean number of edges times
// the features.
func gineRowCost(g *EdgeIndex, f int) int {
	return max(1, (g.Len()+1)*f/max(g.Nodes(), 1))
}

// GINEAggregateBackward accumulates dh and de (see the package function)
// in one pass over the nodes' outgoing edges (by source, in increasing k):
// each node's row of dh, and a dense de's row of each edge, in edge order;
// a per-class de's rows as partial sums of each chunk of nodes (from zero,
// in the chunk's order), then the chunks' in chunk order. The chunks
// depend only on the sizes (job.run), so de does not depend on the number
// of cores either.
func (cpuBackend) GINEAggregateBackward(dh, de, gout, h, e *Tensor, g *EdgeIndex) {
	if gout.dtype == Float32 {
		gineGrad[float32](dh, de, gout, h, e, g)
	} else {
		gineGrad[float64](dh, de, gout, h, e, g)
	}
}

func gineGrad[T float](dh, de, gout, h, e *Tensor, g *EdgeIndex) {
	f, nodes := h.shape[1], g.Nodes()
	classes := 0
	if e != nil && de != nil && g.Classes() != nil {
		classes = g.NumClasses()
	}
	j := getJob(gineGradRange[T])
	j.t[0], j.t[2], j.t[3], j.t[4] = dh, gout, h, e
	j.csr = g.BySrc()
	j.n[0], j.n[1] = f, classes
	grain := max(1, parallelGrain/gineRowCost(g, f))
	var buf *[]float64
	var part []T
	_, chunks := chunking(nodes, grain)
	if classes > 0 {
		buf, part = scratchT[T](chunks * classes * f)
		j.s64 = *buf
	} else {
		j.t[1] = de // dense: one row per edge
	}
	j.run(nodes, grain)
	putJob(j)
	if classes == 0 {
		return
	}
	d := contig[T](de)
	for c := range chunks {
		p := part[c*classes*f : (c+1)*classes*f]
		for k := range classes * f {
			d[k] += p[k]
		}
	}
	putScratch(buf)
}

// keep is the ReLU's derivative as a factor: 1 where x's sign bit is
// clear, else 0. It is applied branch-free (multiplying by the inverted
// sign bit): with random signs a branch mispredicts half the time and runs
// ~3x slower.
func keep[T float](x T) T {
	if is32[T]() {
		return T(math.Float32bits(float32(x))>>31 ^ 1)
	}
	return T(math.Float64bits(float64(x))>>63 ^ 1)
}

// gineForwardRange sums the rows of nodes lo..hi of out (j.t[0]) over
// their incoming edges (j.csr, by destination): h (j.t[1]) at the source
// plus the edge term (j.t[2], nil for none) through a ReLU.
func gineForwardRange[T float](j *job, lo, hi int) {
	y, h := contig[T](j.t[0]), contig[T](j.t[1])
	var e []T
	if j.t[2] != nil {
		e = contig[T](j.t[2])
	}
	c, f := j.csr, j.n[0]
	for i := lo; i < hi; i++ {
		yd := y[i*f : i*f+f]
		clear(yd)
		for p := c.Ptr[i]; p < c.Ptr[i+1]; p++ {
			s := int(c.Other[p])
			hs := h[s*f : s*f+f]
			yd := yd[:len(hs)]
			if e == nil {
				for t, v := range hs {
					yd[t] += v
				}
				continue
			}
			r := int(c.Row[p])
			es := e[r*f : r*f+f]
			es = es[:len(hs)]
			for t, v := range hs {
				m := v + es[t]
				yd[t] += m * keep(m)
			}
		}
	}
}

// gineGradRange accumulates the rows of nodes lo..hi of dh (j.t[0], or
// nil) over their outgoing edges (j.csr, by source), with the dense de
// (j.t[1], or nil; one row per edge) of those edges or, for a per-class de
// (j.n[1] classes), the chunk's partial sums (in the scratch buffer j.s64,
// chunks x classes x f values of type T): gout (j.t[2]) at the destination,
// masked by the ReLU's derivative at h (j.t[3]) plus the edge term (j.t[4];
// nil for none: no mask).
func gineGradRange[T float](j *job, lo, hi int) {
	gy, h := contig[T](j.t[2]), contig[T](j.t[3])
	var dh, de, e []T
	if j.t[0] != nil {
		dh = contig[T](j.t[0])
	}
	if j.t[1] != nil {
		de = contig[T](j.t[1])
	}
	if j.t[4] != nil {
		e = contig[T](j.t[4])
	}
	c, f, classes := j.csr, j.n[0], j.n[1]
	if classes > 0 {
		// This chunk's partial sums, from zero.
		n := classes * f
		part := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(j.s64))), (j.nchunks)*n)
		de = part[lo/j.chunk*n : lo/j.chunk*n+n]
		clear(de)
	}
	for s := lo; s < hi; s++ {
		var dhs []T
		if dh != nil {
			dhs = dh[s*f : s*f+f]
		}
		hs := h[s*f : s*f+f]
		for p := c.Ptr[s]; p < c.Ptr[s+1]; p++ {
			d := int(c.Other[p])
			g := gy[d*f : d*f+f]
			if e == nil {
				dhs = dhs[:len(g)]
				for t, v := range g {
					dhs[t] += v
				}
				continue
			}
			r := int(c.Row[p])
			es := e[r*f : r*f+f]
			hs, es := hs[:len(g)], es[:len(g)]
			switch {
			case dhs != nil && de != nil:
				dhs, des := dhs[:len(g)], de[r*f:r*f+f]
				des = des[:len(g)]
				for t, v := range g {
					m := v * keep(hs[t]+es[t])
					dhs[t] += m
					des[t] += m
				}
			case dhs != nil:
				dhs = dhs[:len(g)]
				for t, v := range g {
					dhs[t] += v * keep(hs[t]+es[t])
				}
			case de != nil:
				des := de[r*f : r*f+f]
				des = des[:len(g)]
				for t, v := range g {
					des[t] += v * keep(hs[t]+es[t])
				}
			}
		}
	}
}
