package safetensors

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"
)

var fuzzSeeds = []string{
	`{}`,
	`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
	`{"__metadata__":{"format":"pt"},"b":{"dtype":"F64","shape":[],"data_offsets":[8,16]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
	`{"x":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"y":{"dtype":"I64","shape":[0],"data_offsets":[12,12]}}  `,
	`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`,
	`{"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,8]}}`,
	`{"__metadata__":{"k":1}}`,
	`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`,
	`[]`,
}

// FuzzParseHeader checks that ParseHeader never panics, that every error is
// an *Error, and that an accepted header is consistent and survives
// encodeHeader unchanged.
func FuzzParseHeader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is %T, not *Error", err, err)
			}
			return
		}
		var pos int64
		for _, ti := range h.Tensors {
			if ti.Begin != pos {
				t.Fatalf("%q begins at %d, want %d", ti.Name, ti.Begin, pos)
			}
			if ti.End-ti.Begin != ti.NumElements()*int64(ti.DType.Size()) {
				t.Fatalf("%q: size mismatch accepted", ti.Name)
			}
			pos = ti.End
		}
		if pos != h.DataSize() {
			t.Fatalf("DataSize %d, tensors end at %d", h.DataSize(), pos)
		}
		enc, err := encodeHeader(h.Tensors, h.Metadata)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		h2, err := ParseHeader(enc[8:])
		if err != nil {
			t.Fatalf("re-parsing %q: %v", enc[8:], err)
		}
		if len(h.Metadata) == 0 {
			h.Metadata = nil
		}
		if !slices.EqualFunc(h.Tensors, h2.Tensors, func(a, b TensorInfo) bool {
			return a.Name == b.Name && a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && a.Begin == b.Begin && a.End == b.End
		}) || !maps.Equal(h.Metadata, h2.Metadata) {
			t.Fatalf("round trip changed the header:\n%+v\n%+v", h, h2)
		}
	})
}

// FuzzDecode checks that Decode never panics on whole files, returns
// *Error for malformed content, and that what it accepts writes back to a
// file that decodes to the same tensors.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(file(s, make([]byte, 16)))
		f.Add(file(s, make([]byte, 8)))
	}
	f.Add(file(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, []byte{0, 0x3c, 0xff, 0x7f}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		fl, err := Decode(b, HalfToFloat32(), SkipUnsupported())
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is %T, not *Error", err, err)
			}
			return
		}
		// Names the writer rejects ("" is legal in a file) are skipped.
		if _, bad := fl.Tensors[""]; bad {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, fl.Tensors, fl.Metadata); err != nil {
			t.Fatalf("re-writing: %v", err)
		}
		fl2, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if err := CheckAgainst(fl.Tensors, fl2.Tensors); err != nil {
			t.Fatal(err)
		}
	})
}
