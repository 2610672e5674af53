package tensor

import (
	"errors"
	"slices"
	"testing"
)

func (f fakeBackend) GINEAggregate(out, hh, e *Tensor, g *EdgeIndex) {
	CPU.GINEAggregate(h(out), h(hh), h(e), g)
}
func (f fakeBackend) GINEAggregateBackward(dh, de, gout, hh, e *Tensor, g *EdgeIndex) {
	CPU.GINEAggregateBackward(h(dh), h(de), h(gout), h(hh), h(e), g)
}

func TestNewEdgeIndexErrors(t *testing.T) {
	for _, c := range []struct {
		name           string
		src, dst, eidx []int32
		nodes, classes int
		want           error
	}{
		{"lengths", []int32{0, 1}, []int32{1}, nil, 2, 0, ErrShape},
		{"class lengths", []int32{0}, []int32{1}, []int32{0, 0}, 2, 1, ErrShape},
		{"classes without eidx", []int32{0}, []int32{1}, nil, 2, 3, ErrShape},
		{"source", []int32{2}, []int32{1}, nil, 2, 0, ErrIndex},
		{"destination", []int32{0}, []int32{-1}, nil, 2, 0, ErrIndex},
		{"class", []int32{0}, []int32{1}, []int32{3}, 2, 3, ErrIndex},
	} {
		if _, err := NewEdgeIndex(c.src, c.dst, c.eidx, c.nodes, c.classes); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
}

// TestEdgeIndexGroupings checks ByDst, BySrc and ByClass against a direct
// enumeration, on an index and its Flip, with an isolated node, a self loop
// and repeated edges.
func TestEdgeIndexGroupings(t *testing.T) {
	src := []int32{0, 1, 2, 2, 3, 0, 0, 3, 3}
	dst := []int32{1, 0, 3, 3, 2, 1, 2, 3, 0}
	cls := make([]int32, 0, 80)
	for k := range src {
		cls = append(cls, int32(k%2))
	}
	g, err := NewEdgeIndex(src, dst, cls[:len(src)], 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	if g.Flip().Flip() != g || g.Flip().Flipped() == g.Flipped() {
		t.Fatal("Flip is not an involution")
	}
	for _, v := range []*EdgeIndex{g, g.Flip()} {
		s, d := v.Src(), v.Dst()
		for _, c := range []struct {
			name       string
			csr        EdgeCSR
			key, other []int32
		}{{"ByDst", v.ByDst(), d, s}, {"BySrc", v.BySrc(), s, d}} {
			var want EdgeCSR
			want.Ptr = []int32{0}
			for i := range 5 {
				for k := range s {
					if c.key[k] == int32(i) {
						want.Other = append(want.Other, c.other[k])
						want.Row = append(want.Row, cls[k])
					}
				}
				want.Ptr = append(want.Ptr, int32(len(want.Other)))
			}
			if !slices.Equal(c.csr.Ptr, want.Ptr) || !slices.Equal(c.csr.Other, want.Other) || !slices.Equal(c.csr.Row, want.Row) {
				t.Errorf("flipped=%v %s = %+v, want %+v", v.Flipped(), c.name, c.csr, want)
			}
		}
		ct := v.ByClass()
		if len(ct.Ptr) != 4 || ct.Ptr[3] != int32(len(ct.Class)) || ct.Lo[len(ct.Lo)-1] != int32(len(s)) {
			t.Fatalf("ByClass = %+v", ct)
		}
		q := 0
		for c := range int32(3) {
			for k := range s {
				if cls[k] == c {
					if ct.Src[q] != s[k] || ct.Dst[q] != d[k] {
						t.Errorf("ByClass position %d: edge %d-%d, want %d-%d", q, ct.Src[q], ct.Dst[q], s[k], d[k])
					}
					q++
				}
			}
			for tt := ct.Ptr[c]; tt < ct.Ptr[c+1]; tt++ {
				if ct.Class[tt] != c || ct.Lo[tt+1]-ct.Lo[tt] > ClassTileEdges || ct.Lo[tt+1] <= ct.Lo[tt] {
					t.Errorf("tile %d: %+v", tt, ct)
				}
			}
		}
	}
	// Many edges of one class: several tiles.
	big := make([]int32, 80)
	g2, err := NewEdgeIndex(big, big, big, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ct := g2.ByClass(); !slices.Equal(ct.Lo, []int32{0, 32, 64, 80}) || !slices.Equal(ct.Ptr, []int32{0, 3, 3}) {
		t.Errorf("ByClass of 80 edges of class 0: %+v", ct)
	}
}

type releaser struct{ n *int }

func (r releaser) Release() { *r.n++ }

func TestEdgeIndexDeviceCache(t *testing.T) {
	g, err := NewEdgeIndex([]int32{0}, []int32{1}, nil, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	builds, released := 0, 0
	build := func() any { builds++; return releaser{&released} }
	g.DeviceCache(fake, build)
	g.Flip().DeviceCache(fake, build)
	g.DeviceCache(CPU, build)
	if builds != 2 {
		t.Errorf("%d builds, want 2 (one per backend, shared with Flip)", builds)
	}
	g.Flip().Release()
	if released != 2 {
		t.Errorf("%d released, want 2", released)
	}
	g.DeviceCache(fake, build)
	if builds != 3 {
		t.Errorf("%d builds after Release, want 3", builds)
	}
}

// TestGINEAggregateReference checks the CPU kernels against a direct
// evaluation of the formulas, with a flipped class index, accumulating
// gradients.
func TestGINEAggregateReference(t *testing.T) {
	r := NewRNG(7)
	src := []int32{0, 1, 2, 2, 3, 0, 0, 3, 3, 1, 1}
	dst := []int32{1, 0, 3, 3, 2, 1, 2, 3, 0, 5, 5}
	cls := []int32{0, 1, 2, 2, 0, 0, 1, 1, 2, 0, 0}
	const nodes, f = 6, 3
	g, err := NewEdgeIndex(src, dst, cls, nodes, 3)
	if err != nil {
		t.Fatal(err)
	}
	gf := g.Flip()
	h := RandN(r, Float64, nodes, f)
	e := RandN(r, Float64, 3, f)
	gout := RandN(r, Float64, nodes, f)
	dh0, de0 := RandN(r, Float64, nodes, f), RandN(r, Float64, 3, f)
	wantY, wantDH, wantDE := New(Float64, nodes, f), dh0.Clone(), de0.Clone()
	for k := range src {
		s, d, c := int(dst[k]), int(src[k]), int(cls[k]) // flipped
		for j := range f {
			m := h.At(s, j) + e.At(c, j)
			if m > 0 {
				wantY.Set(wantY.At(d, j)+m, d, j)
				wantDH.Set(wantDH.At(s, j)+gout.At(d, j), s, j)
				wantDE.Set(wantDE.At(c, j)+gout.At(d, j), c, j)
			}
		}
	}
	y := GINEAggregate(nil, h, e, gf)
	dh, de := dh0.Clone(), de0.Clone()
	GINEAggregateBackward(dh, de, gout, h, e, gf)
	for _, c := range []struct {
		name      string
		got, want *Tensor
	}{{"out", y, wantY}, {"dh", dh, wantDH}, {"de", de, wantDE}} {
		if d := MaxAbs(Sub(nil, c.got, c.want)); d > 1e-12 {
			t.Errorf("%s differs from the reference by %g", c.name, d)
		}
	}
}
