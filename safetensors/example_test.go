package safetensors_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"lgflow/safetensors"
	"lgflow/tensor"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	weights := map[string]*tensor.Tensor{
		"linear.weight": tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3),
		"linear.bias":   tensor.FromFloat32([]float32{0.5, -0.5}, 2),
	}
	if err := safetensors.Save(path, weights, map[string]string{"format": "pt"}); err != nil {
		fmt.Println(err)
		return
	}
	f, err := safetensors.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Metadata["format"], f.Tensors["linear.weight"].Shape(), f.Tensors["linear.bias"].Data32())
	fmt.Println(safetensors.CheckAgainst(weights, f.Tensors))
	// Output:
	// pt [2 3] [0.5 -0.5]
	// <nil>
}

// Decode reads a file held in memory, for instance one embedded with the
// compiler's embed directive; a corrupt file gives a descriptive error.
func ExampleDecode() {
	var buf bytes.Buffer
	_ = safetensors.Write(&buf, map[string]*tensor.Tensor{"x": tensor.Scalar(tensor.Float64, 2.5)}, nil)
	f, err := safetensors.Decode(buf.Bytes())
	fmt.Println(f.Tensors["x"].Item(), err)

	_, err = safetensors.Decode(buf.Bytes()[:buf.Len()-1])
	fmt.Println(err)
	// Output:
	// 2.5 <nil>
	// safetensors: tensor "x": tensor data past end of file: data_offsets [0, 8] but the data buffer holds 7 bytes
}

func ExampleParseHeader() {
	h, err := safetensors.ParseHeader([]byte(`{"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}`))
	fmt.Println(h.Tensors[0].Name, h.Tensors[0].DType, h.Tensors[0].Shape, h.DataSize(), err)
	// Output: w BF16 [2 2] 8 <nil>
}
