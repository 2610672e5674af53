package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"lgflow/tensor"
)

// nearestHalf returns the binary16 pattern nearest to f by search over the
// positive halves (ties to the even pattern), the reference for
// float32ToHalf.
func nearestHalf(f float32) uint16 {
	sign := uint16(0)
	if math.Signbit(float64(f)) {
		sign, f = 0x8000, -f
	}
	x := float64(f)
	// Positive finite halves 0x0000..0x7bff increase with their pattern;
	// 0x7c00 is +Inf, reached from half-way past 65504 (65520) on.
	if x >= 65520 {
		return sign | 0x7c00
	}
	h := sort.Search(0x7c00, func(h int) bool { return float64(halfToFloat32(uint16(h))) >= x })
	if h == 0 {
		return sign
	}
	lo, hi := float64(halfToFloat32(uint16(h-1))), float64(halfToFloat32(uint16(h)))
	switch {
	case x-lo < hi-x:
		h--
	case x-lo == hi-x && (h-1)%2 == 0:
		h--
	}
	return sign | uint16(h)
}

// TestFloat32ToHalf checks the rounding conversions: every half and
// bfloat16 pattern survives a round trip, and float32 values (random,
// half-way points, the edges of the ranges) round to the nearest, ties to
// even.
func TestFloat32ToHalf(t *testing.T) {
	for h := range 1 << 16 {
		f := halfToFloat32(uint16(h))
		got := float32ToHalf(f)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(halfToFloat32(got))) {
				t.Fatalf("half NaN %#04x came back as %#04x", h, got)
			}
			continue
		}
		if got != uint16(h) {
			t.Fatalf("half %#04x (%v) came back as %#04x", h, f, got)
		}
		b := bfloat16ToFloat32(uint16(h))
		if gb := float32ToBFloat16(b); gb != uint16(h) && !math.IsNaN(float64(b)) {
			t.Fatalf("bfloat16 %#04x (%v) came back as %#04x", h, b, gb)
		}
	}
	vals := []float32{0, 1, -1, 65504, 65519.99, 65520, -65520, 1e9, 6e-8, 5.960464477539063e-08, 2.98e-8,
		2.9802322387695312e-08, 1e-30, -3e-5, 0.1, 1.0009765625 / 2, 1 + 1.0/2048, 1 + 3.0/2048, 6.1035156e-05, 6.097555e-05}
	r := tensor.NewRNG(5)
	for range 20000 {
		e := r.Intn(50) - 30
		vals = append(vals, float32((r.Uniform()*2-1)*math.Pow(2, float64(e))))
	}
	for _, f := range vals {
		if got, want := float32ToHalf(f), nearestHalf(f); got != want {
			t.Fatalf("float32ToHalf(%v) = %#04x (%v), want %#04x (%v)", f, got, halfToFloat32(got), want, halfToFloat32(want))
		}
		// bfloat16: the nearest of the two candidates that truncation and
		// truncation plus one unit give, ties to even.
		lo := uint16(math.Float32bits(f) >> 16)
		a, b := float64(bfloat16ToFloat32(lo)), float64(bfloat16ToFloat32(lo+1))
		want := lo
		if d1, d2 := math.Abs(float64(f)-a), math.Abs(b-float64(f)); d2 < d1 || d1 == d2 && lo%2 == 1 {
			want = lo + 1
		}
		if got := float32ToBFloat16(f); got != want {
			t.Fatalf("float32ToBFloat16(%v) = %#04x, want %#04x", f, got, want)
		}
	}
	if h := float32ToHalf(float32(math.NaN())); !math.IsNaN(float64(halfToFloat32(h))) {
		t.Errorf("NaN became half %#04x", h)
	}
	if b := float32ToBFloat16(float32(math.NaN())); !math.IsNaN(float64(bfloat16ToFloat32(b))) {
		t.Errorf("NaN became bfloat16 %#04x", b)
	}
}

// TestStoreAs writes tensors of both dtypes with every StoreAs dtype and
// reads them back with HalfToFloat32: the header has the dtype asked for
// and the values are the rounded ones.
func TestStoreAs(t *testing.T) {
	ts := map[string]*tensor.Tensor{
		"a": seqTensor(tensor.Float32, 3, 5).T(),
		"b": seqTensor(tensor.Float64, 7),
		"c": seqTensor(tensor.Float32),
	}
	cases := []struct {
		as    DType
		round func(float64) float64
		want  tensor.DType // for "b" (a Float64 tensor)
	}{
		{F16, func(x float64) float64 { return float64(halfToFloat32(float32ToHalf(float32(x)))) }, tensor.Float32},
		{BF16, func(x float64) float64 { return float64(bfloat16ToFloat32(float32ToBFloat16(float32(x)))) }, tensor.Float32},
		{F32, func(x float64) float64 { return float64(float32(x)) }, tensor.Float32},
		{F64, func(x float64) float64 { return x }, tensor.Float64},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		if err := Write(&buf, ts, nil, StoreAs(c.as)); err != nil {
			t.Fatalf("%s: %v", c.as, err)
		}
		if c.as == F16 || c.as == BF16 {
			if got, want := buf.Len(), 8+len(mustHeader(t, buf.Bytes()))+2*(15+7+1); got != want {
				t.Errorf("%s: file of %d bytes, want %d", c.as, got, want)
			}
		}
		f, err := Decode(buf.Bytes(), HalfToFloat32())
		if err != nil {
			t.Fatalf("%s: %v", c.as, err)
		}
		for _, ti := range f.Header.Tensors {
			if ti.DType != c.as {
				t.Errorf("%s: %s stored as %s", c.as, ti.Name, ti.DType)
			}
		}
		for name, src := range ts {
			got := f.Tensors[name]
			want := src.Float64s()
			for i := range want {
				want[i] = c.round(want[i])
			}
			if !slices.Equal(got.Float64s(), want) {
				t.Errorf("%s: %s = %v, want %v", c.as, name, got.Float64s(), want)
			}
		}
		if d := f.Tensors["b"].DType(); d != c.want {
			t.Errorf("%s: a float64 tensor came back as %v, want %v", c.as, d, c.want)
		}
	}
	if err := Write(&bytes.Buffer{}, ts, nil, StoreAs(I64)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("StoreAs(I64): %v, want ErrUnsupported", err)
	}
}

// mustHeader returns the JSON header of a file in memory.
func mustHeader(t *testing.T, data []byte) []byte {
	t.Helper()
	h, err := ReadHeader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return data[8:h.DataOffset]
}

// shardSet is a model-like set of tensors: 40 tensors of 1000 float32.
func shardSet() map[string]*tensor.Tensor {
	ts := map[string]*tensor.Tensor{}
	for i := range 40 {
		ts[string(rune('a'+i%26))+strings.Repeat("x", i/26)+".weight"] = seqTensor(tensor.Float32, 10, 100)
	}
	ts["scalar"] = seqTensor(tensor.Float64)
	return ts
}

// TestSaveSharded writes a model whole and in shards of several sizes and
// dtypes, checks the files (names, sizes under the limit, the index) and
// reads it back with LoadModel, through the checkpoint's path and through
// the index; rewriting in the other form removes the previous files.
func TestSaveSharded(t *testing.T) {
	ts := shardSet()
	meta := map[string]string{"kind": "test", "config": `{"k":1}`}
	cases := []struct {
		name   string
		max    int64
		as     DType
		shards int // 0: a single file
	}{
		{"fits whole", 1 << 20, "", 0},
		{"f32 shards", 50000, "", 4},
		{"f16 shards", 50000, F16, 2},
		{"one matrix a shard", 4400, "", 40}, // the scalar shares one
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []WriteOption
			if c.as != "" {
				opts = append(opts, StoreAs(c.as))
			}
			files, err := SaveSharded(path, ts, meta, c.max, opts...)
			if err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(dir)
			var onDisk []string
			for _, e := range ents {
				onDisk = append(onDisk, e.Name())
				if info, _ := e.Info(); info.Size() > c.max && !strings.HasSuffix(e.Name(), IndexSuffix) {
					t.Errorf("%s has %d bytes, more than %d", e.Name(), info.Size(), c.max)
				}
			}
			if c.shards == 0 {
				if !slices.Equal(files, []string{path}) || !slices.Equal(onDisk, []string{"model.safetensors"}) {
					t.Fatalf("wrote %v, directory holds %v; want model.safetensors alone", files, onDisk)
				}
			} else {
				if len(files) != c.shards+1 || len(onDisk) != c.shards+1 || files[c.shards] != path+IndexSuffix {
					t.Fatalf("wrote %v, directory holds %v; want %d shards and the index", files, onDisk, c.shards)
				}
				if want := filepath.Join(dir, fmt.Sprintf("model-00001-of-%05d.safetensors", c.shards)); files[0] != want {
					t.Errorf("first shard %s, want %s", files[0], want)
				}
				var idx Index
				data, _ := os.ReadFile(path + IndexSuffix)
				if err := json.Unmarshal(data, &idx); err != nil {
					t.Fatal(err)
				}
				want := float64(40*1000*4 + 8)
				if c.as == F16 {
					want = 40*1000*2 + 2
				}
				if got := idx.Metadata["total_size"]; got != want {
					t.Errorf("total_size %v, want %v", got, want)
				}
				if idx.Metadata["kind"] != "test" || len(idx.WeightMap) != len(ts) {
					t.Errorf("index metadata %v, %d tensors mapped", idx.Metadata, len(idx.WeightMap))
				}
			}
			for _, p := range []string{path, path + IndexSuffix} {
				if c.shards == 0 && p != path {
					continue
				}
				f, err := LoadModel(p)
				if err != nil {
					t.Fatal(err)
				}
				if !mapsEqual(f.Metadata, meta) || len(f.Header.Tensors) != len(ts) {
					t.Errorf("LoadModel(%s): metadata %v, %d tensors in the header", filepath.Base(p), f.Metadata, len(f.Header.Tensors))
				}
				if c.as == F16 {
					for name, w := range ts {
						want := w.Float64s()
						for i := range want {
							want[i] = float64(halfToFloat32(float32ToHalf(float32(want[i]))))
						}
						if !slices.Equal(f.Tensors[name].Float64s(), want) {
							t.Errorf("%s: values differ from the rounded ones", name)
						}
					}
				} else {
					assertSameTensors(t, ts, f.Tensors)
				}
			}
		})
	}
	if _, err := SaveSharded(path, ts, meta, 3000); !errors.Is(err, ErrShape) {
		t.Errorf("a tensor larger than a shard: %v, want ErrShape", err)
	}
}

// TestLoadModelErrors checks that a broken sharded checkpoint is an error
// naming what is wrong.
func TestLoadModelErrors(t *testing.T) {
	ts := shardSet()
	cases := []struct {
		name  string
		edit  func(idx *Index, dir string)
		kind  error
		inMsg string
	}{
		{"tensor mapped to another shard", func(idx *Index, _ string) { idx.WeightMap["a.weight"] = "model-00002-of-00004.safetensors" }, ErrDuplicate, "a.weight"},
		{"tensor in no shard", func(idx *Index, _ string) { idx.WeightMap["ghost"] = "model-00001-of-00004.safetensors" }, ErrTruncated, "ghost"},
		{"shard outside the directory", func(idx *Index, _ string) { idx.WeightMap["a.weight"] = "../x.safetensors" }, ErrName, "x.safetensors"},
		{"missing shard", func(_ *Index, dir string) { os.Remove(filepath.Join(dir, "model-00003-of-00004.safetensors")) }, os.ErrNotExist, "00003"},
		{"no weight map", func(idx *Index, _ string) { idx.WeightMap = nil }, ErrHeaderJSON, "weight_map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "model.safetensors")
			if _, err := SaveSharded(path, ts, nil, 50000); err != nil {
				t.Fatal(err)
			}
			var idx Index
			data, _ := os.ReadFile(path + IndexSuffix)
			if err := json.Unmarshal(data, &idx); err != nil {
				t.Fatal(err)
			}
			c.edit(&idx, dir)
			data, _ = json.Marshal(idx)
			os.WriteFile(path+IndexSuffix, data, 0o644)
			_, err := LoadModel(path)
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.inMsg) {
				t.Errorf("error %v, want %v mentioning %q", err, c.kind, c.inMsg)
			}
		})
	}
	if _, err := LoadModel(filepath.Join(t.TempDir(), "none.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no checkpoint: %v", err)
	}
}

// TestStat checks that Stat finds a checkpoint as LoadModel does: the
// file itself, else the shard index beside it, and otherwise fails as
// os.Stat(path) does.
func TestStat(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"whole.safetensors", "sharded.safetensors.index.json"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path, want string // want: the file found ("": an error naming path)
	}{
		{"whole.safetensors", "whole.safetensors"},
		{"sharded.safetensors", "sharded.safetensors.index.json"},
		{"sharded.safetensors.index.json", "sharded.safetensors.index.json"},
		{"missing.safetensors", ""},
		{"missing.safetensors.index.json", ""},
	} {
		fi, err := Stat(filepath.Join(dir, c.path))
		if c.want == "" {
			if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), c.path) {
				t.Errorf("Stat(%s): %v, want a not-exist error naming it", c.path, err)
			}
			continue
		}
		if err != nil || fi.Name() != c.want {
			t.Errorf("Stat(%s) = %v, %v; want %s", c.path, fi, err, c.want)
		}
	}
}
