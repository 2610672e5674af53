package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"lgflow/internal/atomicfile"
	"lgflow/tensor"
)

// RawTensor is a tensor given as bytes, for writing dtypes that have no
// tensor.Tensor counterpart (F16, I64, ...). Data must hold exactly
// NumElements*DType.Size() bytes, little-endian, row-major.
type RawTensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// entry is one tensor to write: its layout and a function writing its
// bytes (using buf as scratch space).
type entry struct {
	info  TensorInfo
	write func(w io.Writer, buf []byte) error
}

// WriteRaw writes a safetensors file holding ts and metadata to w, in the
// same layout as Write. ts is not modified.
func WriteRaw(w io.Writer, ts []RawTensor, metadata map[string]string) error {
	es := make([]entry, len(ts))
	for i, t := range ts {
		ti := TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
		es[i] = entry{info: ti, write: func(w io.Writer, _ []byte) error {
			_, err := w.Write(t.Data)
			return err
		}}
		if err := checkInfo(ti); err != nil {
			return err
		}
		if n := ti.NumElements() * int64(t.DType.Size()); int64(len(t.Data)) != n {
			return newErr(ErrOffsets, t.Name, fmt.Sprintf("Data holds %d bytes but shape %v of %s needs %d", len(t.Data), t.Shape, t.DType, n))
		}
	}
	return writeEntries(w, es, metadata)
}

// checkInfo validates the name, dtype and shape of a tensor to write.
func checkInfo(ti TensorInfo) error {
	if ti.Name == "" || ti.Name == metadataKey || !utf8.ValidString(ti.Name) {
		return newErr(ErrName, ti.Name, "names must be non-empty valid UTF-8 other than \"__metadata__\"")
	}
	if ti.DType.Size() == 0 {
		return newErr(ErrDType, ti.Name, quote(string(ti.DType)))
	}
	nbytes := uint64(ti.DType.Size())
	for i, d := range ti.Shape {
		if d < 0 {
			return newErr(ErrShape, ti.Name, fmt.Sprintf("dimension %d is negative (%d)", i, d))
		}
		hi, lo := bits.Mul64(nbytes, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return newErr(ErrShape, ti.Name, fmt.Sprintf("byte size of shape %v overflows int64", ti.Shape))
		}
		nbytes = lo
	}
	return nil
}

// writeEntries sorts es by name, assigns contiguous offsets, and writes
// the length, the padded header and the data.
func writeEntries(w io.Writer, es []entry, metadata map[string]string) error {
	slices.SortFunc(es, func(a, b entry) int {
		switch {
		case a.info.Name < b.info.Name:
			return -1
		case a.info.Name > b.info.Name:
			return 1
		}
		return 0
	})
	var off int64
	for i := range es {
		if i > 0 && es[i].info.Name == es[i-1].info.Name {
			return newErr(ErrDuplicate, es[i].info.Name, "name given twice")
		}
		es[i].info.Begin = off
		off += es[i].info.NumElements() * int64(es[i].info.DType.Size())
		es[i].info.End = off
	}
	infos := make([]TensorInfo, len(es))
	for i, e := range es {
		infos[i] = e.info
	}
	hdr, err := encodeHeader(infos, metadata)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for _, e := range es {
		if err := e.write(bw, buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// encodeHeader returns the 8-byte length followed by the JSON header
// (metadata first, then infos in the given order) padded with spaces to a
// multiple of 8 bytes.
func encodeHeader(infos []TensorInfo, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.Write(make([]byte, 8))
	b.WriteByte('{')
	first := true
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, newErr(ErrMetadata, k, "metadata keys and values must be valid UTF-8")
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, k)
			b.WriteByte(':')
			writeJSONString(&b, metadata[k])
		}
		b.WriteByte('}')
		first = false
	}
	for _, ti := range infos {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeJSONString(&b, ti.Name)
		b.WriteString(`:{"dtype":`)
		writeJSONString(&b, string(ti.DType))
		b.WriteString(`,"shape":[`)
		for i, d := range ti.Shape {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		b.WriteString(`],"data_offsets":[`)
		b.WriteString(strconv.FormatInt(ti.Begin, 10))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(ti.End, 10))
		b.WriteString("]}")
	}
	b.WriteByte('}')
	for (b.Len()-8)%8 != 0 {
		b.WriteByte(' ')
	}
	out := b.Bytes()
	binary.LittleEndian.PutUint64(out[:8], uint64(len(out)-8))
	return out, nil
}

// writeJSONString writes s as a JSON string without HTML escaping.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // cannot fail for a string
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

// SaveRaw writes ts and metadata to the file at path atomically (see Save).
func SaveRaw(path string, ts []RawTensor, metadata map[string]string) error {
	return withPath(atomicfile.Write(path, func(w io.Writer) error { return WriteRaw(w, ts, metadata) }), path)
}

// WriteOption changes how Write, Save and SaveSharded store tensors.
type WriteOption func(*writeOptions)

type writeOptions struct {
	as DType // "" keeps each tensor's own precision
}

// StoreAs stores every tensor with dtype dt: F32, F64, F16 or BF16.
// Values are rounded to the nearest representable one (ties to even);
// with F16, magnitudes beyond its largest finite value (65504) become
// infinities and ones below 2^-24 zeros, so it suits weights (typically
// well inside that range) rather than optimiser state. Half precision
// halves a float32 model's file; Load reads it back as float32 with
// HalfToFloat32 (LoadModel always does).
func StoreAs(dt DType) WriteOption { return func(o *writeOptions) { o.as = dt } }

func buildWriteOptions(opts []WriteOption) (writeOptions, error) {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	switch o.as {
	case "", F32, F64, F16, BF16:
		return o, nil
	}
	return o, newErr(ErrUnsupported, "", fmt.Sprintf("cannot store tensors as %s (F32, F64, F16 or BF16)", quote(string(o.as))))
}

// storedDType returns the dtype a tensor of dtype dt is stored with.
func (o writeOptions) storedDType(name string, dt tensor.DType) (DType, error) {
	if o.as != "" {
		return o.as, nil
	}
	switch dt {
	case tensor.Float32:
		return F32, nil
	case tensor.Float64:
		return F64, nil
	}
	return "", newErr(ErrUnsupported, name, fmt.Sprintf("dtype %v", dt))
}

// tensorEntries returns the entries that write tensors with options o.
func tensorEntries(tensors map[string]*tensor.Tensor, o writeOptions) ([]entry, error) {
	es := make([]entry, 0, len(tensors))
	for name, t := range tensors {
		if t == nil {
			return nil, newErr(ErrUnsupported, name, "tensor is nil")
		}
		dt, err := o.storedDType(name, t.DType())
		if err != nil {
			return nil, err
		}
		ti := TensorInfo{Name: name, DType: dt, Shape: t.Shape()}
		if err := checkInfo(ti); err != nil {
			return nil, err
		}
		es = append(es, entry{info: ti, write: func(w io.Writer, buf []byte) error {
			return writeTensor(w, buf, t, dt)
		}})
	}
	return es, nil
}

// Write writes tensors and metadata to w as a safetensors file: tensors in
// sorted name order, contiguous, "__metadata__" first (left out when
// metadata is empty), header padded with spaces to a multiple of 8 bytes.
// Float32 tensors are stored as F32 and Float64 as F64, or all with the
// dtype of StoreAs; non-contiguous tensors and tensors on another backend
// are copied to a contiguous CPU tensor one at a time while writing. The
// tensors are not modified.
func Write(w io.Writer, tensors map[string]*tensor.Tensor, metadata map[string]string, opts ...WriteOption) error {
	o, err := buildWriteOptions(opts)
	if err != nil {
		return err
	}
	es, err := tensorEntries(tensors, o)
	if err != nil {
		return err
	}
	return writeEntries(w, es, metadata)
}

// Save writes tensors and metadata to the file at path (see Write)
// atomically: into a temporary file in the same directory, synced, then
// renamed over path, so path holds either the old or the complete new
// file. Errors name path.
func Save(path string, tensors map[string]*tensor.Tensor, metadata map[string]string, opts ...WriteOption) error {
	return withPath(atomicfile.Write(path, func(w io.Writer) error { return Write(w, tensors, metadata, opts...) }), path)
}

// writeTensor writes t's elements little-endian, row-major, as dtype dt
// (F32, F64, F16 or BF16), converting len(buf) bytes at a time.
func writeTensor(w io.Writer, buf []byte, t *tensor.Tensor, dt DType) error {
	if t.Backend() != tensor.CPU {
		t = t.ToBackend(tensor.CPU)
	}
	t = t.Contiguous()
	if dt == F64 && t.DType() == tensor.Float32 || dt != F64 && t.DType() == tensor.Float64 {
		// Float64 to a half goes through float32 (a model's tensors are
		// small next to memory: the whole tensor is converted at once).
		want := tensor.Float64
		if dt != F64 {
			want = tensor.Float32
		}
		t = t.To(want)
	}
	switch dt {
	case F16, BF16:
		conv := float32ToHalf
		if dt == BF16 {
			conv = float32ToBFloat16
		}
		d := t.Data32()
		for len(d) > 0 {
			n := min(len(d), len(buf)/2)
			for i, v := range d[:n] {
				binary.LittleEndian.PutUint16(buf[2*i:], conv(v))
			}
			if _, err := w.Write(buf[:2*n]); err != nil {
				return err
			}
			d = d[n:]
		}
		return nil
	}
	if t.DType() == tensor.Float64 {
		d := t.Data64()
		for len(d) > 0 {
			n := min(len(d), len(buf)/8)
			for i, v := range d[:n] {
				binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
			}
			if _, err := w.Write(buf[:8*n]); err != nil {
				return err
			}
			d = d[n:]
		}
		return nil
	}
	d := t.Data32()
	for len(d) > 0 {
		n := min(len(d), len(buf)/4)
		for i, v := range d[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if _, err := w.Write(buf[:4*n]); err != nil {
			return err
		}
		d = d[n:]
	}
	return nil
}
