package damage

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"lgflow/safetensors"
	"lgflow/tensor"
)

// TestHalf converts F32 values to F16 and BF16 and reads them back with
// the safetensors reader's own conversion: every value must come back
// within half a unit in the last place of the format (exactly for values
// it represents), overflow must give infinities and tiny values zero.
func TestHalf(t *testing.T) {
	vals := []float32{0, 1, -2.5, 65504, 6.1035156e-05, 5.9604645e-08, 1e-5, 3.14159, -0.1, 70000, 1e-9, 2049, 4097}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := safetensors.Save(path, map[string]*tensor.Tensor{"x": tensor.FromFloat32(vals, len(vals))}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dt      safetensors.DType
		ulp     float64 // relative spacing of the format
		max     float64
		minNorm float64
	}{{safetensors.F16, 1.0 / 1024, 65504, 6.103515625e-05}, {safetensors.BF16, 1.0 / 128, 3.38e38, 1.18e-38}} {
		f, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "h.safetensors")
		if err := f.Half(tc.dt).Write(out); err != nil {
			t.Fatal(err)
		}
		if _, err := safetensors.Load(out); !errors.Is(err, safetensors.ErrUnsupported) {
			t.Errorf("%s file without HalfToFloat32: %v, want ErrUnsupported", tc.dt, err)
		}
		g, err := safetensors.Load(out, safetensors.HalfToFloat32())
		if err != nil {
			t.Fatal(err)
		}
		got := g.Tensors["x"].Data32()
		for i, v := range vals {
			x, y := float64(v), float64(got[i])
			switch {
			case math.Abs(x) > tc.max*(1+tc.ulp/2):
				if !math.IsInf(y, int(math.Copysign(1, x))) {
					t.Errorf("%s: %g became %g, want infinity", tc.dt, x, y)
				}
			case math.Abs(x) < tc.minNorm:
				if math.Abs(x-y) > tc.minNorm*tc.ulp/2 {
					t.Errorf("%s: subnormal %g became %g", tc.dt, x, y)
				}
			case math.Abs(x-y) > math.Abs(x)*tc.ulp/2:
				t.Errorf("%s: %g became %g, more than half an ulp away", tc.dt, x, y)
			}
		}
	}
}

// TestEdits checks each edit reaches the file: dropped, added, reshaped
// and resized tensors, metadata, and a hand-edited header.
func TestEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.safetensors")
	ts := map[string]*tensor.Tensor{"a": tensor.New(tensor.Float32, 2, 3), "b": tensor.New(tensor.Float32, 4)}
	if err := safetensors.Save(path, ts, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	g := f.Clone().Drop("b").Add("c", 5).Reshape("a", 3, 2)
	g.Metadata["k"] = "w"
	out := filepath.Join(dir, "b.safetensors")
	if err := g.Write(out); err != nil {
		t.Fatal(err)
	}
	l, err := safetensors.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Tensors["b"]; ok || l.Tensors["c"].Dim(0) != 5 || l.Tensors["a"].Dim(0) != 3 || l.Metadata["k"] != "w" {
		t.Errorf("edits lost: %v %v", l.Tensors, l.Metadata)
	}
	if len(f.Tensors) != 2 || f.Metadata["k"] != "v" {
		t.Error("Clone shares state with the original")
	}
	if err := f.Clone().Resize("b", 7).Write(out); err != nil {
		t.Fatal(err)
	}
	if l, err := safetensors.Load(out); err != nil || l.Tensors["b"].Dim(0) != 7 {
		t.Errorf("Resize: %v", err)
	}
	if err := f.WriteEdited(out, func(h []byte) []byte { return bytes.Replace(h, []byte(`"F32"`), []byte(`"F12"`), 1) }); err != nil {
		t.Fatal(err)
	}
	if _, err := safetensors.Load(out); !errors.Is(err, safetensors.ErrDType) {
		t.Errorf("edited dtype: %v, want ErrDType", err)
	}
	if b, _ := os.ReadFile(out); !bytes.Contains(b, []byte("F12")) {
		t.Error("edit not written")
	}
}
