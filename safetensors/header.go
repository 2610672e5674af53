package safetensors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxHeaderSize is the largest header accepted when reading, in bytes
// (100 MB, as in the reference implementation).
const MaxHeaderSize = 100 << 20

// metadataKey is the reserved header key holding the string metadata.
const metadataKey = "__metadata__"

// TensorInfo describes one stored tensor.
type TensorInfo struct {
	Name  string
	DType DType
	// Shape holds the dimensions; empty for a scalar (one element).
	Shape []int
	// Begin and End are byte offsets into the data buffer (relative to the
	// first byte after the header); End-Begin = NumElements*DType.Size().
	Begin, End int64
}

// NumElements returns the product of the dimensions (1 for a scalar).
func (ti TensorInfo) NumElements() int64 {
	n := int64(1)
	for _, d := range ti.Shape {
		n *= int64(d)
	}
	return n
}

// Header is a parsed and validated safetensors header.
type Header struct {
	// Tensors lists the tensors in data order (ascending Begin; ties,
	// which only empty tensors can have, by name).
	Tensors []TensorInfo
	// Metadata holds the "__metadata__" object, or nil if absent.
	Metadata map[string]string
	// DataOffset is the file offset of the data buffer (8 + header length)
	// when the header was read from a file; 0 from ParseHeader.
	DataOffset int64
}

// DataSize returns the size in bytes of the data buffer the header
// describes (the End of the last tensor, 0 with no tensors).
func (h Header) DataSize() int64 {
	if len(h.Tensors) == 0 {
		return 0
	}
	return h.Tensors[len(h.Tensors)-1].End
}

// Lookup returns the tensor called name.
func (h Header) Lookup(name string) (TensorInfo, bool) {
	for _, ti := range h.Tensors {
		if ti.Name == name {
			return ti, true
		}
	}
	return TensorInfo{}, false
}

// ParseHeader parses and validates the JSON header of a safetensors file
// (the N bytes after the 8-byte length; trailing spaces are allowed). It
// checks everything that can be checked without the data buffer: valid
// UTF-8 JSON object, no duplicate names, known dtypes, non-negative shapes
// whose byte size does not overflow, data_offsets spanning exactly
// shape*dtype-size bytes, and tensors that cover [0, DataSize()) with no
// overlap and no gap. The caller must still check that the data buffer is
// exactly DataSize() bytes long (Decode, Read and Load do). b is not
// retained.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if !utf8.Valid(b) {
		return h, newErr(ErrHeaderJSON, "", "header is not valid UTF-8")
	}
	seen := make(map[string]bool)
	err := walkObject(b, "header", "", func(key string, raw json.RawMessage) error {
		if seen[key] {
			return newErr(ErrDuplicate, key, "name appears twice in the header")
		}
		seen[key] = true
		if key == metadataKey {
			md, err := parseMetadata(raw)
			if err != nil {
				return err
			}
			h.Metadata = md
			return nil
		}
		ti, err := parseEntry(key, raw)
		if err != nil {
			return err
		}
		h.Tensors = append(h.Tensors, ti)
		return nil
	})
	if err != nil {
		return Header{}, err
	}
	if err := checkLayout(h.Tensors); err != nil {
		return Header{}, err
	}
	return h, nil
}

// walkObject decodes b as one JSON object followed only by whitespace and
// calls fn for each member in order (duplicates included).
// Errors name the tensor owner (may be "").
func walkObject(b []byte, what, owner string, fn func(key string, raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return newErr(ErrHeaderJSON, owner, fmt.Sprintf("%s: %v", what, jsonErr(err)))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return newErr(ErrHeaderJSON, owner, fmt.Sprintf("%s is not a JSON object", what))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return newErr(ErrHeaderJSON, owner, fmt.Sprintf("%s: %v", what, jsonErr(err)))
		}
		key, ok := tok.(string)
		if !ok {
			return newErr(ErrHeaderJSON, owner, fmt.Sprintf("%s: object key is not a string", what))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if owner == "" {
				owner = key
			}
			return newErr(ErrHeaderJSON, owner, fmt.Sprintf("%s: %v", what, jsonErr(err)))
		}
		if err := fn(key, raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return newErr(ErrHeaderJSON, owner, fmt.Sprintf("%s: %v", what, jsonErr(err)))
	}
	rest := b[dec.InputOffset():]
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return newErr(ErrHeaderJSON, owner, fmt.Sprintf("%s: unexpected data after the JSON object at byte %d", what, dec.InputOffset()))
	}
	return nil
}

func jsonErr(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseMetadata decodes "__metadata__" (null or an object of strings).
func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, newErr(ErrMetadata, "", "not a JSON object")
	}
	md := make(map[string]string)
	err := walkObject(raw, metadataKey, "", func(key string, v json.RawMessage) error {
		if _, dup := md[key]; dup {
			return newErr(ErrDuplicate, key, "metadata key appears twice")
		}
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return newErr(ErrMetadata, key, "metadata value is not a string: "+abbrev(string(v)))
		}
		md[key] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

// parseEntry validates one tensor entry of the header.
func parseEntry(name string, raw json.RawMessage) (TensorInfo, error) {
	ti := TensorInfo{Name: name}
	if len(raw) == 0 || raw[0] != '{' {
		return ti, newErr(ErrHeaderJSON, name, "entry is not a JSON object: "+abbrev(string(raw)))
	}
	// Field names are matched exactly (encoding/json would match them
	// case-insensitively); unknown fields are ignored, as serde does.
	var dtype, shapeRaw, offsRaw json.RawMessage
	err := walkObject(raw, "entry", name, func(key string, v json.RawMessage) error {
		var dst *json.RawMessage
		switch key {
		case "dtype":
			dst = &dtype
		case "shape":
			dst = &shapeRaw
		case "data_offsets":
			dst = &offsRaw
		default:
			return nil
		}
		if *dst != nil {
			return newErr(ErrHeaderJSON, name, fmt.Sprintf("field %q appears twice", key))
		}
		*dst = v
		return nil
	})
	if err != nil {
		return ti, err
	}
	switch {
	case dtype == nil:
		return ti, newErr(ErrHeaderJSON, name, `missing field "dtype"`)
	case shapeRaw == nil:
		return ti, newErr(ErrHeaderJSON, name, `missing field "shape"`)
	case offsRaw == nil:
		return ti, newErr(ErrHeaderJSON, name, `missing field "data_offsets"`)
	}
	var dt string
	if dtype[0] != '"' || json.Unmarshal(dtype, &dt) != nil {
		return ti, newErr(ErrDType, name, "dtype is not a string: "+abbrev(string(dtype)))
	}
	ti.DType = DType(dt)
	if ti.DType.isSubByte() {
		return ti, newErr(ErrDType, name, fmt.Sprintf("sub-byte dtype %s is not supported", dt))
	}
	size := ti.DType.Size()
	if size == 0 {
		return ti, newErr(ErrDType, name, quote(dt))
	}
	shape, err := parseInts(shapeRaw)
	if err != nil {
		return ti, newErr(ErrShape, name, err.Error())
	}
	nbytes := uint64(size)
	ti.Shape = make([]int, len(shape))
	for i, d := range shape {
		if d < 0 {
			return ti, newErr(ErrShape, name, fmt.Sprintf("dimension %d is negative (%d)", i, d))
		}
		if d > math.MaxInt {
			return ti, newErr(ErrShape, name, fmt.Sprintf("dimension %d (%d) overflows int", i, d))
		}
		ti.Shape[i] = int(d)
		hi, lo := bits.Mul64(nbytes, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return ti, newErr(ErrShape, name, fmt.Sprintf("byte size of shape %v overflows int64", shape))
		}
		nbytes = lo
	}
	offs, err := parseInts(offsRaw)
	if err != nil {
		return ti, newErr(ErrOffsets, name, err.Error())
	}
	if len(offs) != 2 {
		return ti, newErr(ErrOffsets, name, fmt.Sprintf("want [begin, end], got %d numbers", len(offs)))
	}
	ti.Begin, ti.End = offs[0], offs[1]
	if ti.Begin < 0 || ti.End < ti.Begin {
		return ti, newErr(ErrOffsets, name, fmt.Sprintf("[%d, %d] is not a valid range", ti.Begin, ti.End))
	}
	if uint64(ti.End-ti.Begin) != nbytes {
		return ti, newErr(ErrOffsets, name, fmt.Sprintf("[%d, %d] spans %d bytes but shape %v of %s needs %d",
			ti.Begin, ti.End, ti.End-ti.Begin, ti.Shape, ti.DType, nbytes))
	}
	return ti, nil
}

// parseInts decodes a JSON array of integers that fit in int64.
func parseInts(raw json.RawMessage) ([]int64, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("not a JSON array: %s", abbrev(string(raw)))
	}
	var nums []json.RawMessage
	if err := json.Unmarshal(raw, &nums); err != nil {
		return nil, err
	}
	out := make([]int64, len(nums))
	for i, n := range nums {
		v, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("element %d (%s) is not an integer in int64 range", i, abbrev(string(n)))
		}
		out[i] = v
	}
	return out, nil
}

// checkLayout sorts ts into data order and checks that they tile
// [0, end) exactly.
func checkLayout(ts []TensorInfo) error {
	slices.SortFunc(ts, func(a, b TensorInfo) int {
		if a.Begin != b.Begin {
			return cmpInt64(a.Begin, b.Begin)
		}
		if a.End != b.End {
			return cmpInt64(a.End, b.End)
		}
		return strings.Compare(a.Name, b.Name)
	})
	var pos int64
	prev := ""
	for _, ti := range ts {
		switch {
		case ti.Begin > pos:
			what := "the start of the data buffer"
			if prev != "" {
				what = "tensor " + quote(prev)
			}
			return newErr(ErrGap, ti.Name, fmt.Sprintf("%d unused bytes between %s (ends at %d) and this tensor (begins at %d)",
				ti.Begin-pos, what, pos, ti.Begin))
		case ti.Begin < pos:
			return newErr(ErrOverlap, ti.Name, fmt.Sprintf("data_offsets [%d, %d] overlap tensor %s, which ends at %d",
				ti.Begin, ti.End, quote(prev), pos))
		}
		if ti.End > ti.Begin {
			pos = ti.End
			prev = ti.Name
		}
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// quote quotes s for an error message, shortening very long strings.
func quote(s string) string { return strconv.Quote(abbrev(s)) }

func abbrev(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
