package vae

import (
	"math"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/internal/parallel"
	"lgflow/tensor"
)

// The host-side inputs of a step (phi's eigenvector inputs, the decoder's
// pair mask, the dense targets) are built straight in the model's dtype,
// graph by graph on all cores (parallel.Rows), into the tape's scratch
// buffers (autograd.Tape.Scratch): on two cores a serial build in fresh
// memory, which faults in every page, was the longest stretch of an LG-VAE
// training step on which the second core idled. The fills write every
// element, so the values do not depend on the buffers' old contents or on
// the number of cores.

// encoderInput assembles phi's constant inputs for a batch: eigenvector
// entries (with sign flips and orbit perturbation applied) of shape
// (nodes, K, 1 or 2), eigenvalues (nodes, K, 1) and the slot mask
// (nodes*K, 1), in scratch buffers of tp.
func (m *Model) encoderInput(tp *autograd.Tape, feats []*Features, nodes int, mode Mode, r *tensor.RNG) (vec, vals, slot *tensor.Tensor) {
	K := m.Cfg.K
	parts := 1
	if m.Cfg.Directed {
		parts = 2
	}
	in := encInput{feats: feats, K: K, parts: parts, eta: m.Cfg.Eta, scaled: m.Cfg.ScaleEigvecs}
	in.sign = make([]float64, K)
	for j := range in.sign {
		in.sign[j] = 1
		if mode == Training && m.Cfg.SignFlips && r.Uniform() < 0.5 {
			in.sign[j] = -1
		}
	}
	in.first = make([]int, len(feats)+1)
	for g, f := range feats {
		in.first[g+1] = in.first[g] + f.N
	}
	if m.Cfg.Eta > 0 {
		if mode == Training {
			// The orbit noise comes from r in node order: draw it first.
			in.noise = make([]float64, in.first[len(feats)])
			for g, f := range feats {
				for i := range f.N {
					if f.Orbits[i] != 0 {
						in.noise[in.first[g]+i] = r.Normal()
					}
				}
			}
		} else {
			// Evaluation: noise depends only on the graph itself, so a
			// graph's latents do not depend on its batch.
			in.perGraph = true
		}
	}
	dt := m.DType()
	vec, vals, slot = tp.Scratch(dt, nodes, K, parts), tp.Scratch(dt, nodes, K, 1), tp.Scratch(dt, nodes*K, 1)
	rows := in.first[len(feats)] // rows [rows, nodes), if any, are zero
	work := nodes * K * (parts + 2)
	if dt == tensor.Float32 {
		v, l, s := vec.Data32(), vals.Data32(), slot.Data32()
		clear(v[rows*K*parts:])
		clear(l[rows*K:])
		clear(s[rows*K:])
		parallel.Rows(len(feats), work, func(lo, hi int) { fillEncoderInput(&in, v, l, s, lo, hi) })
	} else {
		v, l, s := vec.Data64(), vals.Data64(), slot.Data64()
		clear(v[rows*K*parts:])
		clear(l[rows*K:])
		clear(s[rows*K:])
		parallel.Rows(len(feats), work, func(lo, hi int) { fillEncoderInput(&in, v, l, s, lo, hi) })
	}
	return vec, vals, slot
}

// encInput is what encoderInput's fill needs of the batch and the draws.
type encInput struct {
	feats    []*Features
	first    []int     // first row of each graph
	sign     []float64 // K sign flips
	noise    []float64 // per node: the orbit noise drawn in training (nil: none)
	perGraph bool      // orbit noise from each graph's own generator (evaluation)
	K, parts int
	eta      float64
	scaled   bool // Config.ScaleEigvecs
}

// fillEncoderInput writes the rows of graphs [lo, hi) of encoderInput's
// outputs v, lam and sl.
func fillEncoderInput[T float32 | float64](in *encInput, v, lam, sl []T, lo, hi int) {
	K, parts := in.K, in.parts
	r0, r1 := in.first[lo], in.first[hi]
	clear(v[r0*K*parts : r1*K*parts])
	clear(lam[r0*K : r1*K])
	clear(sl[r0*K : r1*K])
	for g := lo; g < hi; g++ {
		f := in.feats[g]
		var gr *tensor.RNG
		if in.perGraph {
			gr = tensor.NewRNG(featureHash(f))
		}
		rms := 1.0
		if in.scaled {
			rms = math.Sqrt(float64(f.N))
		}
		row := in.first[g]
		for i := range f.N {
			scale := rms
			if f.Orbits != nil && f.Orbits[i] != 0 {
				switch {
				case in.noise != nil:
					scale = rms * (1 + in.eta*in.noise[row])
				case gr != nil:
					scale = rms * (1 + in.eta*gr.Normal())
				}
			}
			for j := range min(f.N, K) {
				s, at := in.sign[j]*scale, row*K+j
				v[at*parts] = T(s * float64(f.Vectors[i*K+j]))
				if parts == 2 {
					v[at*parts+1] = T(s * float64(f.Imag[i*K+j]))
				}
				lam[at] = T(float64(f.Values[j]))
				sl[at] = 1
			}
			row++
		}
	}
}

// padIndex returns, for the padded layout (B*MaxN rows), the row of the
// concatenated node each slot holds, or nodes (one past the end: a zero
// row) for padding slots.
func padIndex(b *graph.Batch) []int32 {
	idx := make([]int32, b.Len()*b.MaxN)
	nodes := int32(b.NumNodes())
	for i := range idx {
		idx[i] = nodes
	}
	for g := range b.Len() {
		for u := b.NodeOffset[g]; u < b.NodeOffset[g+1]; u++ {
			idx[g*b.MaxN+u-b.NodeOffset[g]] = int32(u)
		}
	}
	return idx
}

// pairMask returns the (B, 1, N, N) mask of valid ordered pairs (i != j,
// both real nodes) and the (B, 1, N, 1) count of valid pairs per row
// (clamped to >= 1), for graphs of the given sizes padded to n, in scratch
// buffers of tp.
func pairMask(tp *autograd.Tape, dt tensor.DType, sizes []int, n int) (mask, count *tensor.Tensor) {
	B := len(sizes)
	mask, count = tp.Scratch(dt, B, 1, n, n), tp.Scratch(dt, B, 1, n, 1)
	if dt == tensor.Float32 {
		m, c := mask.Data32(), count.Data32()
		parallel.Rows(B, B*n*n, func(lo, hi int) { fillPairMask(m, c, sizes, n, lo, hi) })
	} else {
		m, c := mask.Data64(), count.Data64()
		parallel.Rows(B, B*n*n, func(lo, hi int) { fillPairMask(m, c, sizes, n, lo, hi) })
	}
	return mask, count
}

// fillPairMask writes graphs [lo, hi) of pairMask's mask m and count c.
func fillPairMask[T float32 | float64](m, c []T, sizes []int, n, lo, hi int) {
	clear(m[lo*n*n : hi*n*n])
	for g := lo; g < hi; g++ {
		k := sizes[g]
		for i := range n {
			if i >= k {
				c[g*n+i] = 1
				continue
			}
			c[g*n+i] = T(max(k-1, 1))
			row := m[(g*n+i)*n : (g*n+i)*n+k]
			for j := range row {
				row[j] = 1
			}
			row[i] = 0
		}
	}
}

// targets returns the padded edge-class targets (B*N*N) and node-label
// targets (B*N) of a batch: graph.Batch.DenseEdgeClasses, graph by graph
// on all cores. The edge targets go to a scratch buffer of tp, or to new
// memory when tp is nil.
func targets(tp *autograd.Tape, b *graph.Batch) (edge, node []int32) {
	n := b.MaxN
	if tp != nil {
		edge = tp.ScratchInt32(b.Len() * n * n)
	} else {
		edge = make([]int32, b.Len()*n*n)
	}
	parallel.Rows(b.Len(), len(edge), func(lo, hi int) {
		clear(edge[lo*n*n : hi*n*n])
		for k := b.EdgeOffset[lo]; k < b.EdgeOffset[hi]; k++ {
			g := int(b.NodeGraph[b.Src[k]])
			off := b.NodeOffset[g]
			u, v := int(b.Src[k])-off, int(b.Dst[k])-off
			edge[(g*n+u)*n+v] = b.EdgeLabels[k] + 1
		}
	})
	if b.NodeLabels != nil {
		node = make([]int32, b.Len()*b.MaxN)
		for i, l := range b.NodeLabels {
			node[b.PaddedRow(i)] = l
		}
	}
	return edge, node
}
