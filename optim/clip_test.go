package optim

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"lgflow/tensor"
)

func TestClipGradNorm(t *testing.T) {
	mk := func() []Param {
		return []Param{
			{Name: "a", Value: tensor.New(tensor.Float32, 2), Grad: tensor.FromFloat32([]float32{3, 4}, 2)},
			{Name: "none", Value: tensor.New(tensor.Float32, 2)},
			{Name: "b", Value: tensor.New(tensor.Float64, 1, 1), Grad: tensor.FromFloat64([]float64{12}, 1, 1)},
		}
	}
	// Norm sqrt(9+16+144) = 13.
	ps := mk()
	if n := ClipGradNorm(ps, 20); n != 13 {
		t.Errorf("norm %v, want 13", n)
	}
	if g := ps[0].Grad.Data32(); !slices.Equal(g, []float32{3, 4}) {
		t.Errorf("grads changed below the limit: %v", g)
	}
	ps = mk()
	if n := ClipGradNorm(ps, 1); n != 13 {
		t.Errorf("norm %v, want 13", n)
	}
	c := 1 / (13 + 1e-6)
	if g := ps[0].Grad.Data32(); math.Abs(float64(g[0])-3*c) > 1e-7 || math.Abs(float64(g[1])-4*c) > 1e-7 {
		t.Errorf("clipped a = %v, want [%v %v]", g, 3*c, 4*c)
	}
	if g := ps[2].Grad.Item(); math.Abs(g-12*c) > 1e-15 {
		t.Errorf("clipped b = %v, want %v", g, 12*c)
	}
	if n := GradNorm(ps); math.Abs(n-13*c) > 1e-7 {
		t.Errorf("norm after clipping %v, want ~1", n)
	}
	// Non-finite: returned, gradients untouched.
	ps = mk()
	ps[2].Grad.Fill(math.Inf(1))
	if n := ClipGradNorm(ps, 1); !math.IsInf(n, 1) {
		t.Errorf("norm %v, want +Inf", n)
	}
	if g := ps[0].Grad.Data32(); g[0] != 3 {
		t.Errorf("grads changed for a non-finite norm: %v", g)
	}
}

func TestCheckFinite(t *testing.T) {
	nan32 := float32(math.NaN())
	ps := []Param{
		{Name: "ok", Value: tensor.New(tensor.Float32, 3), Grad: tensor.FromFloat32([]float32{1, 2, 3}, 3)},
		{Name: "nograd", Value: tensor.New(tensor.Float32, 3)},
		{Name: "bad", Value: tensor.New(tensor.Float32, 2, 2), Grad: tensor.FromFloat32([]float32{0, 1, 2, nan32}, 2, 2)},
		{Name: "worse", Value: tensor.New(tensor.Float64, 2), Grad: tensor.FromFloat64([]float64{math.Inf(-1), 0}, 2)},
	}
	if err := CheckFinite(ps[:2]); err != nil {
		t.Fatal(err)
	}
	err := CheckFinite(ps)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Param != "bad" || nf.Index != 3 || !math.IsNaN(nf.Value) {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "NaN at flat index 3") {
		t.Errorf("message %q", err)
	}
	err = CheckFinite(ps[3:])
	if !errors.As(err, &nf) || nf.Param != "worse" || nf.Index != 0 || !math.IsInf(nf.Value, -1) {
		t.Fatalf("err = %v", err)
	}
	// Huge finite float64 values whose sum overflows are not reported.
	huge := []Param{{Name: "h", Value: tensor.New(tensor.Float64, 2), Grad: tensor.FromFloat64([]float64{math.MaxFloat64, math.MaxFloat64}, 2)}}
	if err := CheckFinite(huge); err != nil {
		t.Errorf("false positive: %v", err)
	}
}

func TestDefaultDecay(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape []int
		want  bool
	}{
		{"linear.weight", []int{256, 128}, true},
		{"embedding.weight", []int{10, 64}, true},
		{"eps", []int{1, 16}, true},
		{"conv.weight", []int{8, 4, 3}, true},
		{"linear.bias", []int{256}, false},
		{"norm.weight", []int{256}, false},
		{"scale", nil, false},
	} {
		if got := DefaultDecay(c.name, c.shape); got != c.want {
			t.Errorf("DefaultDecay(%q, %v) = %v", c.name, c.shape, got)
		}
	}
}
