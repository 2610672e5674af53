package safetensors

import (
	"bytes"
	"slices"
	"testing"

	"lgflow/tensor"
)

// TestRankRoundTrip writes tensors of rank 0 to 3 and reads them back: each
// keeps its shape. A header shape [] (a scalar, as PyTorch writes a 0-d
// tensor) once loaded as the vector [1].
func TestRankRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape []int
	}{
		{"scalar", nil},
		{"vector", []int{1}},
		{"matrix", []int{2, 1}},
		{"empty", []int{0, 3}},
		{"rank3", []int{2, 1, 2}},
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			x := tensor.New(dt, tc.shape...)
			for i := range x.Size() {
				if dt == tensor.Float32 {
					x.Data32()[i] = float32(i) + 0.5
				} else {
					x.Data64()[i] = float64(i) + 0.25
				}
			}
			var buf bytes.Buffer
			if err := Write(&buf, map[string]*tensor.Tensor{"x": x}, nil); err != nil {
				t.Fatal(err)
			}
			f, err := Decode(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			got := f.Tensors["x"]
			if !slices.Equal(got.Shape(), x.Shape()) || got.DType() != dt {
				t.Errorf("%s %v: read back %v %v, wrote %v %v", tc.name, dt, got.DType(), got.Shape(), dt, x.Shape())
				continue
			}
			if err := CheckAgainst(map[string]*tensor.Tensor{"x": x}, f.Tensors); err != nil {
				t.Errorf("%s %v: %v", tc.name, dt, err)
			}
		}
	}
}
