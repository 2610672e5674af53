package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lgflow/tensor"
)

// file builds a safetensors file from a header string (padded with spaces
// to pad bytes if pad > len(header)) and a data buffer.
func file(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func f32bytes(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func f64bytes(vs ...float64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return b
}

// TestGoldenBytes checks the exact bytes written for a tiny tensor, with
// and without metadata.
func TestGoldenBytes(t *testing.T) {
	a := tensor.FromFloat32([]float32{1, -0.5}, 2)
	cases := []struct {
		name string
		md   map[string]string
		want []byte
	}{
		{"plain", nil, []byte("\x38\x00\x00\x00\x00\x00\x00\x00" +
			`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}` + "  " +
			"\x00\x00\x80\x3f\x00\x00\x00\xbf")},
		{"metadata", map[string]string{"format": "pt"}, []byte("\x58\x00\x00\x00\x00\x00\x00\x00" +
			`{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}` + "   " +
			"\x00\x00\x80\x3f\x00\x00\x00\xbf")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, map[string]*tensor.Tensor{"a": a}, c.md); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), c.want) {
				t.Fatalf("bytes differ\n got %q\nwant %q", buf.Bytes(), c.want)
			}
			f, err := Decode(c.want)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Tensors["a"].Data32(); !slices.Equal(got, []float32{1, -0.5}) {
				t.Errorf("decoded %v", got)
			}
		})
	}
}

// seqTensor returns a tensor of the given dtype and shape holding
// 0.5*i - 3 + i²/7 at flat index i (distinct, non-integer values).
func seqTensor(dt tensor.DType, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if dt == tensor.Float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = 0.5*float64(i) - 3 + float64(i*i)/7
		}
		return tensor.FromFloat64(d, shape...)
	}
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(0.5*float64(i) - 3 + float64(i*i)/7)
	}
	return tensor.FromFloat32(d, shape...)
}

func roundTripSet() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{
		"r0.f32":        seqTensor(tensor.Float32),
		"r1.f32":        seqTensor(tensor.Float32, 5),
		"r2.f32":        seqTensor(tensor.Float32, 3, 4),
		"r3.f32":        seqTensor(tensor.Float32, 2, 3, 4),
		"r4.f32":        seqTensor(tensor.Float32, 2, 1, 3, 2),
		"r0.f64":        seqTensor(tensor.Float64),
		"r1.f64":        seqTensor(tensor.Float64, 7),
		"r2.f64":        seqTensor(tensor.Float64, 4, 2),
		"r3.f64":        seqTensor(tensor.Float64, 2, 2, 2),
		"r4.f64":        seqTensor(tensor.Float64, 1, 2, 3, 4),
		"empty":         seqTensor(tensor.Float32, 0, 3),
		"big/<&>.ünï":   seqTensor(tensor.Float32, 40000), // spans several write chunks
		"transposed.T":  seqTensor(tensor.Float32, 3, 5).T(),
		"a.first.entry": seqTensor(tensor.Float64, 1),
	}
}

func assertSameTensors(t *testing.T, want, got map[string]*tensor.Tensor) {
	t.Helper()
	if err := CheckAgainst(want, got); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		g := got[name]
		wc, gc := w.Contiguous(), g.Contiguous()
		if w.DType() == tensor.Float64 {
			if !slices.Equal(wc.Data64(), gc.Data64()) {
				t.Errorf("%s: values differ", name)
			}
		} else if !slices.Equal(wc.Data32(), gc.Data32()) {
			t.Errorf("%s: values differ", name)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	ts := roundTripSet()
	md := map[string]string{"format": "pt", "config": `{"k": 16, "q": 0.0015625}`, "": "empty key", "ünïcode": "välue"}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := Save(path, ts, md); err != nil {
		t.Fatal(err)
	}
	// Overwrite to check the atomic replace path too.
	if err := Save(path, ts, md); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after Save, want 1 (temporary file left?)", len(entries))
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	if n%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", n)
	}
	for name, load := range map[string]func() (*File, error){
		"Load":   func() (*File, error) { return Load(path) },
		"Decode": func() (*File, error) { return Decode(raw) },
		"Read":   func() (*File, error) { return Read(bytes.NewReader(raw), int64(len(raw))) },
	} {
		t.Run(name, func(t *testing.T) {
			f, err := load()
			if err != nil {
				t.Fatal(err)
			}
			assertSameTensors(t, ts, f.Tensors)
			if len(f.Metadata) != len(md) {
				t.Fatalf("metadata %v, want %v", f.Metadata, md)
			}
			for k, v := range md {
				if f.Metadata[k] != v {
					t.Errorf("metadata[%q] = %q, want %q", k, f.Metadata[k], v)
				}
			}
			// Written in sorted name order, contiguously.
			var names []string
			var pos int64
			for _, ti := range f.Header.Tensors {
				names = append(names, ti.Name)
				if ti.Begin != pos {
					t.Errorf("%s begins at %d, want %d", ti.Name, ti.Begin, pos)
				}
				pos = ti.End
			}
			if !slices.IsSorted(names) {
				t.Errorf("tensors not in name order: %v", names)
			}
			if f.Header.DataOffset != int64(8+n) {
				t.Errorf("DataOffset = %d, want %d", f.Header.DataOffset, 8+n)
			}
		})
	}
}

func TestWriteNoMetadataAndEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, nil, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	want := "\x08\x00\x00\x00\x00\x00\x00\x00{}      "
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
	f, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 0 || f.Metadata != nil {
		t.Errorf("got %v %v", f.Tensors, f.Metadata)
	}
}

// TestPyTorchFile parses bytes laid out as the Rust/Python safetensors
// library writes them for a PyTorch state dict: "__metadata__" {"format":
// "pt"} first, tensors in data order sorted by dtype (largest first) then
// name, so JSON key order differs from name order, an I64 BatchNorm
// counter, BF16 and F16 tensors, and space padding.
func TestPyTorchFile(t *testing.T) {
	header := `{"__metadata__":{"format":"pt"},` +
		`"bn.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[0,8]},` +
		`"lin.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]},` +
		`"bn.weight":{"dtype":"F32","shape":[2],"data_offsets":[24,32]},` +
		`"emb.bf16":{"dtype":"BF16","shape":[3],"data_offsets":[32,38]},` +
		`"emb.f16":{"dtype":"F16","shape":[4],"data_offsets":[38,46]}}`
	for len(header)%8 != 0 {
		header += " "
	}
	var data []byte
	data = binary.LittleEndian.AppendUint64(data, 7)
	data = append(data, f32bytes(1, 2, 3, 4)...)
	data = append(data, f32bytes(0.25, -8)...)
	// BF16: 1.0 = 0x3f80, -2.5 = 0xc020, 3.140625 = 0x4049
	data = binary.LittleEndian.AppendUint16(data, 0x3f80)
	data = binary.LittleEndian.AppendUint16(data, 0xc020)
	data = binary.LittleEndian.AppendUint16(data, 0x4049)
	// F16: 1.0 = 0x3c00, -0.000060975552 (largest subnormal, 0x83ff), 65504 = 0x7bff, +Inf = 0x7c00
	for _, h := range []uint16{0x3c00, 0x83ff, 0x7bff, 0x7c00} {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	raw := file(header, data)

	if _, err := Decode(raw); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "bn.num_batches_tracked") {
		t.Fatalf("without options: err = %v, want ErrUnsupported naming bn.num_batches_tracked", err)
	}
	f, err := Decode(raw, HalfToFloat32(), SkipUnsupported())
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata = %v", f.Metadata)
	}
	if !slices.Equal(f.Skipped, []string{"bn.num_batches_tracked"}) {
		t.Errorf("Skipped = %v", f.Skipped)
	}
	ti, ok := f.Header.Lookup("bn.num_batches_tracked")
	if !ok || ti.DType != I64 || len(ti.Shape) != 0 || ti.Begin != 0 || ti.End != 8 {
		t.Errorf("header entry %+v", ti)
	}
	want := map[string][]float32{
		"lin.weight": {1, 2, 3, 4},
		"bn.weight":  {0.25, -8},
		"emb.bf16":   {1, -2.5, 3.140625},
		"emb.f16":    {1, -0x3ff * float32(math.Pow(2, -24)), 65504, float32(math.Inf(1))},
	}
	for name, w := range want {
		tt := f.Tensors[name]
		if tt == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if tt.DType() != tensor.Float32 || !slices.Equal(tt.Data32(), w) {
			t.Errorf("%s = %v %v, want Float32 %v", name, tt.DType(), tt.Data32(), w)
		}
	}
	if s := f.Tensors["lin.weight"].Shape(); !slices.Equal(s, []int{2, 2}) {
		t.Errorf("lin.weight shape %v", s)
	}
}

func TestHalfConversion(t *testing.T) {
	cases := []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xc000, -2}, {0x3555, 0.33325195}, {0x0001, float32(math.Pow(2, -24))},
		{0x0400, float32(math.Pow(2, -14))}, {0x7bff, 65504}, {0xfc00, float32(math.Inf(-1))},
	}
	for _, c := range cases {
		if got := halfToFloat32(c.h); got != c.want {
			t.Errorf("halfToFloat32(%#04x) = %v, want %v", c.h, got, c.want)
		}
	}
	if got := halfToFloat32(0x8000); math.Float32bits(got) != 0x80000000 {
		t.Errorf("-0 became %v", got)
	}
	if got := halfToFloat32(0x7e00); !math.IsNaN(float64(got)) {
		t.Errorf("NaN became %v", got)
	}
	if got := bfloat16ToFloat32(0xbf80); got != -1 {
		t.Errorf("bfloat16 -1 became %v", got)
	}
}

// TestErrors checks every validation rule with a hand-made file.
func TestErrors(t *testing.T) {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	data8 := f32bytes(1, 2)
	hugeLen := make([]byte, 16)
	binary.LittleEndian.PutUint64(hugeLen, 200<<20)
	maxLen := make([]byte, 16)
	binary.LittleEndian.PutUint64(maxLen, math.MaxUint64)
	cases := []struct {
		name   string
		raw    []byte
		kind   error
		detail string // substring of the message
	}{
		{"empty", nil, ErrTooShort, "0 bytes"},
		{"seven bytes", []byte{1, 2, 3, 4, 5, 6, 7}, ErrTooShort, "7 bytes"},
		{"length past end", file(ok, data8)[:30], ErrHeaderLength, "past the end"},
		{"length over 100 MB", hugeLen, ErrHeaderLength, "exceeds"},
		{"length max uint64", maxLen, ErrHeaderLength, "exceeds"},
		{"zero length", file("", nil), ErrHeaderJSON, ""},
		{"truncated JSON", file(`{"a":{"dtype":"F32"`, nil), ErrHeaderJSON, ""},
		{"not an object", file(`[1,2]`, nil), ErrHeaderJSON, "not a JSON object"},
		{"trailing garbage", file(ok+" x", data8), ErrHeaderJSON, "after the JSON object"},
		{"NUL padding", file(ok+"\x00\x00", data8), ErrHeaderJSON, "after the JSON object"},
		{"invalid UTF-8", file(`{"a`+"\xff"+`":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data8), ErrHeaderJSON, "UTF-8"},
		{"entry not object", file(`{"a":1}`, nil), ErrHeaderJSON, `"a"`},
		{"missing dtype", file(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, data8), ErrHeaderJSON, `missing field "dtype"`},
		{"missing shape", file(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, data8), ErrHeaderJSON, `missing field "shape"`},
		{"missing offsets", file(`{"a":{"dtype":"F32","shape":[2]}}`, data8), ErrHeaderJSON, `missing field "data_offsets"`},
		{"field case differs", file(`{"a":{"DTYPE":"F32","shape":[2],"data_offsets":[0,8]}}`, data8), ErrHeaderJSON, `missing field "dtype"`},
		{"field twice", file(`{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data8), ErrHeaderJSON, "twice"},
		{"unknown dtype", file(`{"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}`, data8), ErrDType, `"F33"`},
		{"dtype lower case", file(`{"a":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}}`, data8), ErrDType, `"f32"`},
		{"dtype not string", file(`{"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}`, data8), ErrDType, "not a string"},
		{"sub-byte dtype", file(`{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, data8[:1]), ErrDType, "sub-byte"},
		{"negative dim", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, data8), ErrShape, "negative"},
		{"fractional dim", file(`{"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}`, data8), ErrShape, "not an integer"},
		{"dim 1e3", file(`{"a":{"dtype":"F32","shape":[1e3],"data_offsets":[0,8]}}`, data8), ErrShape, "not an integer"},
		{"dim too large for int64", file(`{"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}}`, data8), ErrShape, "int64"},
		{"shape overflow", file(`{"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,8]}}`, data8), ErrShape, "overflows"},
		{"shape not array", file(`{"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}`, data8), ErrShape, "not a JSON array"},
		{"offsets mismatch", file(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,8]}}`, data8), ErrOffsets, "needs 16"},
		{"offsets three numbers", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,16]}}`, data8), ErrOffsets, "3 numbers"},
		{"offsets reversed", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, data8), ErrOffsets, "not a valid range"},
		{"offsets negative", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, data8), ErrOffsets, "not a valid range"},
		{"offsets past end", file(ok, data8[:4]), ErrTruncated, "holds 4 bytes"},
		{"second tensor past end", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8[:6]), ErrTruncated, `"b"`},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), ErrOverlap, `"a"`},
		{"same range twice", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data8), ErrOverlap, ""},
		{"gap between", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, f32bytes(1, 2, 3)), ErrGap, "4 unused bytes"},
		{"gap at start", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), ErrGap, "start of the data buffer"},
		{"trailing data", file(ok, f32bytes(1, 2, 3)), ErrGap, "4 trailing bytes"},
		{"duplicate name", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), ErrDuplicate, `"a"`},
		{"duplicate metadata", file(`{"__metadata__":{},"__metadata__":{},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data8), ErrDuplicate, "__metadata__"},
		{"duplicate metadata key", file(`{"__metadata__":{"k":"1","k":"2"}}`, nil), ErrDuplicate, `"k"`},
		{"metadata value number", file(`{"__metadata__":{"k":1}}`, nil), ErrMetadata, `"k"`},
		{"metadata nested", file(`{"__metadata__":{"k":{"x":"y"}}}`, nil), ErrMetadata, `"k"`},
		{"metadata as tensor", file(`{"__metadata__":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, data8), ErrMetadata, `"shape"`},
		{"metadata array", file(`{"__metadata__":["a"]}`, nil), ErrMetadata, "not a JSON object"},
		{"int tensor", file(`{"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}`, data8), ErrUnsupported, "I32"},
		{"f16 without option", file(`{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, data8), ErrUnsupported, "HalfToFloat32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Decode(c.raw)
			if err == nil {
				t.Fatalf("no error; got %d tensors", len(f.Tensors))
			}
			if !errors.Is(err, c.kind) {
				t.Fatalf("err = %v, want kind %v", err, c.kind)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err %T is not *Error", err)
			}
			if !strings.Contains(err.Error(), c.detail) {
				t.Errorf("message %q does not mention %q", err, c.detail)
			}
			// The same error from a file names the path.
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			if err := os.WriteFile(path, c.raw, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Load(path)
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), path) {
				t.Errorf("Load: err = %v, want kind %v naming %s", err, c.kind, path)
			}
		})
	}
}

func TestEmptyTensorsAndNullMetadata(t *testing.T) {
	raw := file(`{"__metadata__":null,"z":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[3,0],"data_offsets":[0,0]}}`, f64bytes(2.5))
	f, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata != nil || len(f.Tensors) != 3 || f.Tensors["a"].Data64()[0] != 2.5 {
		t.Fatalf("got %+v", f)
	}
	if s := f.Tensors["e"].Shape(); !slices.Equal(s, []int{3, 0}) {
		t.Errorf("e shape %v", s)
	}
}

func TestWriteErrors(t *testing.T) {
	var buf bytes.Buffer
	a := tensor.New(tensor.Float32, 2)
	for name, c := range map[string]struct {
		ts   map[string]*tensor.Tensor
		md   map[string]string
		kind error
	}{
		"empty name":    {map[string]*tensor.Tensor{"": a}, nil, ErrName},
		"metadata name": {map[string]*tensor.Tensor{"__metadata__": a}, nil, ErrName},
		"bad UTF-8":     {map[string]*tensor.Tensor{"a\xff": a}, nil, ErrName},
		"nil tensor":    {map[string]*tensor.Tensor{"a": nil}, nil, ErrUnsupported},
		"bad metadata":  {map[string]*tensor.Tensor{"a": a}, map[string]string{"k": "\xff"}, ErrMetadata},
	} {
		if err := Write(&buf, c.ts, c.md); !errors.Is(err, c.kind) {
			t.Errorf("%s: err = %v, want %v", name, err, c.kind)
		}
	}
	if err := WriteRaw(&buf, []RawTensor{{Name: "x", DType: I64, Shape: []int{2}, Data: make([]byte, 15)}}, nil); !errors.Is(err, ErrOffsets) {
		t.Errorf("short raw data: err = %v", err)
	}
	if err := WriteRaw(&buf, []RawTensor{{Name: "x", DType: F32, Shape: nil, Data: make([]byte, 4)}, {Name: "x", DType: F32, Data: make([]byte, 4)}}, nil); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate raw: err = %v", err)
	}
	// A failed Save leaves no file and no temporary file behind.
	dir := t.TempDir()
	if err := Save(filepath.Join(dir, "x.safetensors"), map[string]*tensor.Tensor{"": a}, nil); !errors.Is(err, ErrName) || !strings.Contains(err.Error(), "x.safetensors") {
		t.Errorf("Save: err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed Save left %d files", len(entries))
	}
}

func TestWriteRawRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	ids := binary.LittleEndian.AppendUint64(nil, 42)
	ids = binary.LittleEndian.AppendUint64(ids, math.MaxUint64)
	err := WriteRaw(&buf, []RawTensor{
		{Name: "ids", DType: U64, Shape: []int{2}, Data: ids},
		{Name: "h", DType: F16, Shape: []int{1}, Data: []byte{0x00, 0x3c}},
	}, map[string]string{"m": "v"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(buf.Bytes(), HalfToFloat32(), SkipUnsupported())
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Tensors["h"].Data32(); !slices.Equal(got, []float32{1}) {
		t.Errorf("h = %v", got)
	}
	ti, _ := f.Header.Lookup("ids")
	if got := buf.Bytes()[f.Header.DataOffset+ti.Begin : f.Header.DataOffset+ti.End]; !bytes.Equal(got, ids) {
		t.Errorf("ids bytes %x", got)
	}
}

func TestCheckAgainst(t *testing.T) {
	want := map[string]*tensor.Tensor{
		"w": tensor.New(tensor.Float32, 2, 3),
		"b": tensor.New(tensor.Float32, 3),
		"s": tensor.New(tensor.Float64),
		"m": tensor.New(tensor.Float32, 1),
	}
	if err := CheckAgainst(want, want); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tensor.Tensor{
		"w": tensor.New(tensor.Float32, 3, 2),
		"b": tensor.New(tensor.Float64, 3),
		"s": tensor.New(tensor.Float64),
		"x": tensor.New(tensor.Float32, 1),
	}
	err := CheckAgainst(want, got)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []string{"1 missing, 1 unexpected, 2 mismatched", `missing "m"`, `unexpected "x"`,
		`"w": shape [3 2], expected [2 3]`, `"b": dtype float64, expected float32`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
}

// failingReaderAt serves the first n bytes of data, then fails.
type failingReaderAt struct {
	data []byte
	n    int64
}

var errDisk = errors.New("disk on fire")

func (r failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.n {
		return 0, errDisk
	}
	return copy(p, r.data[off:]), nil
}

func TestReadIOError(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, map[string]*tensor.Tensor{"big": seqTensor(tensor.Float32, 50000)}, nil); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	for _, n := range []int64{4, 20, int64(len(raw)) - 10} {
		_, err := Read(failingReaderAt{raw, n}, int64(len(raw)))
		if !errors.Is(err, errDisk) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("fail after %d bytes: err = %v", n, err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}
