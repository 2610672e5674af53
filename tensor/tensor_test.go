package tensor

import (
	"strings"
	"testing"
)

func TestConstructorsAndAccessors(t *testing.T) {
	x := FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if x.Rank() != 2 || x.Dim(-1) != 3 || x.Size() != 6 || x.DType() != Float32 || !x.IsContiguous() {
		t.Fatalf("bad accessors: %v", x)
	}
	if x.At(1, 2) != 6 || x.Backend() != CPU || x.Backend().Name() != "cpu" {
		t.Fatal("At/Backend")
	}
	x.Set(7, 0, 1)
	if x.Data32()[1] != 7 {
		t.Fatal("Set does not write through")
	}
	if s := Scalar(Float64, 2.5); s.Rank() != 0 || s.Item() != 2.5 {
		t.Fatal("Scalar")
	}
	if f := Full(Float64, 3, 2, 2); SumAll(f) != 12 {
		t.Fatal("Full")
	}
	c := x.Clone()
	c.Set(0, 0, 0)
	if x.At(0, 0) != 1 {
		t.Fatal("Clone shares memory")
	}
	if y := x.To(Float64); y.DType() != Float64 || y.At(1, 1) != 5 {
		t.Fatal("To")
	}
	if x.To(Float32) != x {
		t.Fatal("To same dtype should return t")
	}
	if BackendByName("cpu") != CPU || len(Backends()) < 1 {
		t.Fatal("registry")
	}
	mustPanic(t, ErrShape, func() { FromFloat64(make([]float64, 5), 2, 3) }, "FromFloat64", "5 elements", "[2 3]")
	mustPanic(t, ErrIndex, func() { x.At(2, 0) }, "At", "[2 0]")
	mustPanic(t, ErrLayout, func() { x.T().Data32() }, "Data32")
	mustPanic(t, ErrDType, func() { x.Data64() }, "Data64")
}

func TestViews(t *testing.T) {
	x := FromFloat64([]float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4)
	tt := x.T()
	if tt.At(3, 2) != 11 || tt.IsContiguous() {
		t.Fatal("T")
	}
	s := x.Slice(1, 1, 3)
	if s.Dim(1) != 2 || s.At(2, 1) != 10 {
		t.Fatal("Slice")
	}
	s.Set(-1, 0, 0)
	if x.At(0, 1) != -1 {
		t.Fatal("Slice does not share storage")
	}
	x.Set(1, 0, 1)
	r := x.Reshape(2, -1)
	if r.Dim(1) != 6 || r.At(1, 0) != 6 {
		t.Fatal("Reshape")
	}
	rt := tt.Reshape(12) // copies
	if rt.At(1) != 4 {
		t.Fatalf("Reshape of transpose: %v", rt)
	}
	e := FromFloat64([]float64{1, 2, 3}, 3, 1).Expand(2, 3, 4)
	if e.At(1, 2, 3) != 3 || e.Strides()[0] != 0 {
		t.Fatal("Expand")
	}
	u := x.Unsqueeze(1)
	if !sameShape(u.Shape(), []int{3, 1, 4}) || u.At(2, 0, 3) != 11 || !u.IsContiguous() {
		t.Fatal("Unsqueeze")
	}
	if sq := u.Squeeze(1); !sameShape(sq.Shape(), []int{3, 4}) {
		t.Fatal("Squeeze")
	}
	p := New(Float32, 2, 3, 4).Permute(2, 0, 1)
	if !sameShape(p.Shape(), []int{4, 2, 3}) {
		t.Fatal("Permute")
	}
	dst := New(Float64, 2, 3, 4)
	Copy(dst, x.Slice(0, 0, 1)) // row 0 broadcast to every (i, j)
	if dst.At(1, 2, 0) != 0 || dst.At(0, 1, 3) != 3 {
		t.Fatalf("broadcast Copy: %v", dst)
	}
	mustPanic(t, ErrShape, func() { x.Reshape(5, -1) }, "Reshape", "[3 4]")
	mustPanic(t, ErrShape, func() { x.Expand(3, 5) }, "Expand")
	mustPanic(t, ErrIndex, func() { x.Slice(0, 2, 4) }, "Slice")
	mustPanic(t, ErrShape, func() { x.Squeeze(0) }, "Squeeze")
}

func TestString(t *testing.T) {
	s := FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3).String()
	want := "Tensor(float32 [2 3])\n[[1 2 3]\n [4 5 6]]"
	if s != want {
		t.Errorf("String =\n%s\nwant\n%s", s, want)
	}
	big := New(Float64, 100, 100).String()
	if !strings.Contains(big, "...") || len(big) > 2000 {
		t.Errorf("large tensor not elided (%d bytes)", len(big))
	}
}
