// Package damage builds damaged and foreign variants of safetensors
// checkpoints for tests of the loaders (vae.Load, flow.Load and the CLI
// commands that call them): a File holds a checkpoint as raw tensors and
// metadata, which a test edits (drops, adds, reshapes or re-types tensors,
// changes metadata) and writes back, or writes with hand-edited header
// bytes to produce what the writer itself refuses (an unknown dtype, bad
// JSON).
package damage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"

	"lgflow/safetensors"
)

// File is a checkpoint as raw tensors (in the header's data order) and
// metadata.
type File struct {
	Tensors  []safetensors.RawTensor
	Metadata map[string]string
}

// Read reads the safetensors file at path without converting any tensor.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h, err := safetensors.ReadHeader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	f := &File{Metadata: map[string]string{}}
	for k, v := range h.Metadata {
		f.Metadata[k] = v
	}
	for _, ti := range h.Tensors {
		f.Tensors = append(f.Tensors, safetensors.RawTensor{Name: ti.Name, DType: ti.DType, Shape: slices.Clone(ti.Shape),
			Data: slices.Clone(b[h.DataOffset+ti.Begin : h.DataOffset+ti.End])})
	}
	return f, nil
}

// Clone returns a deep copy of f.
func (f *File) Clone() *File {
	c := &File{Metadata: make(map[string]string, len(f.Metadata))}
	for k, v := range f.Metadata {
		c.Metadata[k] = v
	}
	for _, t := range f.Tensors {
		t.Shape, t.Data = slices.Clone(t.Shape), slices.Clone(t.Data)
		c.Tensors = append(c.Tensors, t)
	}
	return c
}

// index returns the position of the named tensor; it panics if there is
// none (a mistake in the test).
func (f *File) index(name string) int {
	i := slices.IndexFunc(f.Tensors, func(t safetensors.RawTensor) bool { return t.Name == name })
	if i < 0 {
		panic(fmt.Sprintf("damage: no tensor %q", name))
	}
	return i
}

// Drop removes the named tensor and returns f.
func (f *File) Drop(name string) *File {
	f.Tensors = slices.Delete(f.Tensors, f.index(name), f.index(name)+1)
	return f
}

// Add appends an F32 tensor of the given shape, filled with zeros, and
// returns f.
func (f *File) Add(name string, shape ...int) *File {
	n := 1
	for _, d := range shape {
		n *= d
	}
	f.Tensors = append(f.Tensors, safetensors.RawTensor{Name: name, DType: safetensors.F32, Shape: shape, Data: make([]byte, 4*n)})
	return f
}

// Reshape gives the named tensor a new shape with the same number of
// elements (its bytes unchanged) and returns f.
func (f *File) Reshape(name string, shape ...int) *File {
	f.Tensors[f.index(name)].Shape = shape
	return f
}

// Resize gives the named tensor a new shape, zero-filled, and returns f.
func (f *File) Resize(name string, shape ...int) *File {
	t := &f.Tensors[f.index(name)]
	n := 1
	for _, d := range shape {
		n *= d
	}
	t.Shape, t.Data = shape, make([]byte, n*t.DType.Size())
	return f
}

// Half converts every F32 tensor to dt (F16 or BF16, rounding to nearest
// even; values outside the range become infinities) and returns f.
func (f *File) Half(dt safetensors.DType) *File {
	if dt != safetensors.F16 && dt != safetensors.BF16 {
		panic(fmt.Sprintf("damage: Half to %s", dt))
	}
	for i, t := range f.Tensors {
		if t.DType != safetensors.F32 {
			continue
		}
		out := make([]byte, len(t.Data)/2)
		for k := 0; k < len(t.Data)/4; k++ {
			x := math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*k:]))
			var h uint16
			if dt == safetensors.F16 {
				h = toF16(x)
			} else {
				h = toBF16(x)
			}
			binary.LittleEndian.PutUint16(out[2*k:], h)
		}
		f.Tensors[i].DType, f.Tensors[i].Data = dt, out
	}
	return f
}

// toBF16 rounds x to bfloat16, nearest even.
func toBF16(x float32) uint16 {
	b := math.Float32bits(x)
	if x != x {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// toF16 rounds x to IEEE half precision, nearest even, flushing values
// below the smallest subnormal to zero and overflowing to infinity.
func toF16(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	a := math.Abs(float64(x))
	switch {
	case x != x:
		return sign | 0x7e00
	case a >= 65520:
		return sign | 0x7c00
	case a < 1.0/(1<<25):
		return sign
	}
	// Scale to an integer count of the smallest representable step at
	// this magnitude and round to even.
	e := math.Floor(math.Log2(a))
	e = max(e, -14)
	step := math.Ldexp(1, int(e)-10)
	m := math.RoundToEven(a / step) // in [1024, 2048] for normals
	if m == 2048 {
		m, e = 1024, e+1
	}
	if m < 1024 { // subnormal
		return sign | uint16(m)
	}
	if e > 15 {
		return sign | 0x7c00
	}
	return sign | uint16(e+15)<<10 | uint16(m-1024)
}

// Write writes f to path.
func (f *File) Write(path string) error {
	return safetensors.SaveRaw(path, f.Tensors, f.Metadata)
}

// WriteEdited writes f to path after passing its JSON header through
// edit, fixing up the length prefix: the way to write what the writer
// refuses, such as an unknown dtype or malformed JSON.
func (f *File) WriteEdited(path string, edit func(header []byte) []byte) error {
	var buf bytes.Buffer
	if err := safetensors.WriteRaw(&buf, f.Tensors, f.Metadata); err != nil {
		return err
	}
	b := buf.Bytes()
	n := binary.LittleEndian.Uint64(b)
	header := edit(slices.Clone(b[8 : 8+n]))
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(append(out, header...), b[8+n:]...)
	return os.WriteFile(path, out, 0o644)
}
