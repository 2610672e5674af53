package vae

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"sync"

	"lgflow/tensor"
)

// CachePerturbation wraps p so that each graph's latents are perturbed at
// most variants times: a graph is recognised by its (unpadded) latent rows,
// which a frozen encoder in evaluation mode gives identically at every
// visit, and later visits reuse one of its stored perturbations, chosen
// with r. An expensive perturbation (flow.(*Model).EndpointPerturbation
// runs the flow's sampler) then costs its full price only in the first
// epochs of a decoder fine-tune. Graphs without a stored result are
// perturbed together, in one call of p. The result is safe for concurrent
// use.
func CachePerturbation(p LatentPerturbation, variants int) LatentPerturbation {
	variants = max(variants, 1)
	var (
		mu    sync.Mutex
		seed  = maphash.MakeSeed()
		store = map[uint64][][]float32{}
	)
	return func(z *tensor.Tensor, sizes []int, r *tensor.RNG) (*tensor.Tensor, error) {
		B, N, d := z.Dim(0), z.Dim(1), z.Dim(2)
		zf := z.To(tensor.Float32).Contiguous().Data32()
		keys := make([]uint64, B)
		out := tensor.New(tensor.Float32, B, N, d)
		of := out.Data32()
		var miss []int
		buf := make([]byte, 0, N*d*4)
		mu.Lock()
		for g := range B {
			buf = buf[:0]
			for _, v := range zf[g*N*d : g*N*d+sizes[g]*d] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			}
			keys[g] = maphash.Bytes(seed, buf)
			if vs := store[keys[g]]; len(vs) >= variants {
				copy(of[g*N*d:], vs[r.Intn(len(vs))])
			} else {
				miss = append(miss, g)
			}
		}
		mu.Unlock()
		if len(miss) == 0 {
			return out.To(z.DType()), nil
		}
		sub := tensor.New(tensor.Float32, len(miss), N, d)
		sf := sub.Data32()
		subSizes := make([]int, len(miss))
		for i, g := range miss {
			copy(sf[i*N*d:(i+1)*N*d], zf[g*N*d:(g+1)*N*d])
			subSizes[i] = sizes[g]
		}
		res, err := p(sub.To(z.DType()), subSizes, r)
		if err != nil {
			return nil, err
		}
		if res.Rank() != 3 || res.Dim(0) != len(miss) || res.Dim(1) != N || res.Dim(2) != d {
			return nil, fmt.Errorf("vae: perturbation returned shape %v for latents (%d, %d, %d)", res.Shape(), len(miss), N, d)
		}
		rf := res.To(tensor.Float32).Contiguous().Data32()
		mu.Lock()
		defer mu.Unlock()
		for i, g := range miss {
			row := append([]float32(nil), rf[i*N*d:(i*N+sizes[g])*d]...)
			store[keys[g]] = append(store[keys[g]], row)
			copy(of[g*N*d:], row)
		}
		return out.To(z.DType()), nil
	}
}
