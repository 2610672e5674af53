package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"lgflow/tensor"
)

// File is the content of a safetensors file.
type File struct {
	// Tensors maps names to tensors: F32 as tensor.Float32, F64 as
	// tensor.Float64, and F16/BF16 as tensor.Float32 with HalfToFloat32.
	// Each tensor owns its memory (nothing aliases the input).
	Tensors map[string]*tensor.Tensor
	// Metadata is the header's "__metadata__", or nil if absent.
	Metadata map[string]string
	// Header describes every tensor of the file, the skipped ones included.
	Header Header
	// Skipped lists, in data order, the tensors left out of Tensors
	// because of SkipUnsupported.
	Skipped []string
}

// Option changes how Decode, Read and Load turn stored tensors into
// tensor.Tensor values.
type Option func(*readOptions)

type readOptions struct {
	half, skip bool
}

// HalfToFloat32 makes F16 and BF16 tensors load as tensor.Float32 (the
// conversion is exact). Without it they are reported with ErrUnsupported.
func HalfToFloat32() Option { return func(o *readOptions) { o.half = true } }

// SkipUnsupported makes tensors whose dtype has no tensor.Tensor
// counterpart (integers, BOOL, 8-bit floats, C64, and F16/BF16 without
// HalfToFloat32) be left out of File.Tensors and listed in File.Skipped,
// instead of failing the whole read with ErrUnsupported.
func SkipUnsupported() Option { return func(o *readOptions) { o.skip = true } }

// ReadHeader reads and validates the length prefix and header of the
// safetensors file of size bytes that r holds, and checks that the data
// buffer is exactly covered by the tensors. It allocates at most the
// header's length (itself at most MaxHeaderSize and the file's size).
func ReadHeader(r io.ReaderAt, size int64) (Header, error) {
	if size < 8 {
		return Header{}, newErr(ErrTooShort, "", fmt.Sprintf("%d bytes", size))
	}
	var lenBuf [8]byte
	if err := readFull(r, lenBuf[:], 0); err != nil {
		return Header{}, err
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	switch {
	case n > MaxHeaderSize:
		return Header{}, newErr(ErrHeaderLength, "", fmt.Sprintf("header length %d exceeds the limit of %d bytes", n, MaxHeaderSize))
	case n > uint64(size-8):
		return Header{}, newErr(ErrHeaderLength, "", fmt.Sprintf("header length %d is past the end of the %d-byte file", n, size))
	}
	hb := make([]byte, n)
	if err := readFull(r, hb, 8); err != nil {
		return Header{}, err
	}
	h, err := ParseHeader(hb)
	if err != nil {
		return Header{}, err
	}
	h.DataOffset = 8 + int64(n)
	avail := size - h.DataOffset
	if end := h.DataSize(); end > avail {
		for _, ti := range h.Tensors {
			if ti.End > avail {
				return Header{}, newErr(ErrTruncated, ti.Name, fmt.Sprintf("data_offsets [%d, %d] but the data buffer holds %d bytes", ti.Begin, ti.End, avail))
			}
		}
	} else if end < avail {
		return Header{}, newErr(ErrGap, "", fmt.Sprintf("%d trailing bytes after the last tensor (data buffer %d bytes, tensors cover %d)", avail-end, avail, end))
	}
	return h, nil
}

// readFull reads exactly len(p) bytes at off.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("safetensors: reading %d bytes at offset %d: %w", len(p), off, err)
}

// Read reads and validates the safetensors file of size bytes that r
// holds. The whole header is validated before any tensor memory is
// allocated, so the memory used is bounded by the file size (twice it for
// half-precision tensors converted to float32).
func Read(r io.ReaderAt, size int64, opts ...Option) (*File, error) {
	return read(r, nil, size, opts)
}

// Decode parses a safetensors file held in memory (for example embedded
// with go:embed). data is not retained or modified; tensors are copies.
func Decode(data []byte, opts ...Option) (*File, error) {
	return read(bytes.NewReader(data), data, int64(len(data)), opts)
}

// Load reads the safetensors file at path (see Read). Errors name path.
func Load(path string, opts ...Option) (*File, error) {
	return openAndRead(path, func(r io.ReaderAt, size int64) (*File, error) { return Read(r, size, opts...) })
}

// LoadHeader reads and validates only the header of the safetensors file at
// path (see ReadHeader), for example to read a checkpoint's metadata before
// anything is built to load it into. Errors name path.
func LoadHeader(path string) (Header, error) {
	f, err := openAndRead(path, func(r io.ReaderAt, size int64) (*File, error) {
		h, err := ReadHeader(r, size)
		return &File{Header: h}, err
	})
	if err != nil {
		return Header{}, err
	}
	return f.Header, nil
}

// openAndRead opens path and hands it to read, naming path in errors.
func openAndRead(path string, read func(r io.ReaderAt, size int64) (*File, error)) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	file, err := read(f, st.Size())
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return nil, fmt.Errorf("safetensors: %s: %w", path, err)
		}
		return nil, withPath(err, path)
	}
	return file, nil
}

// read implements Read and Decode; data, when non-nil, is the whole file
// and is sliced instead of read through r.
func read(r io.ReaderAt, data []byte, size int64, opts []Option) (*File, error) {
	var o readOptions
	for _, opt := range opts {
		opt(&o)
	}
	h, err := ReadHeader(r, size)
	if err != nil {
		return nil, err
	}
	f := &File{Tensors: make(map[string]*tensor.Tensor, len(h.Tensors)), Metadata: h.Metadata, Header: h}
	// Decide every tensor's fate before allocating any of them.
	for _, ti := range h.Tensors {
		if !o.loadable(ti.DType) {
			if !o.skip {
				return nil, newErr(ErrUnsupported, ti.Name, fmt.Sprintf("dtype %s (use HalfToFloat32 for F16/BF16, SkipUnsupported to leave such tensors out)", ti.DType))
			}
			f.Skipped = append(f.Skipped, ti.Name)
		}
	}
	var buf []byte
	if data == nil {
		buf = make([]byte, 1<<16)
	}
	for _, ti := range h.Tensors {
		if !o.loadable(ti.DType) {
			continue
		}
		t, err := loadTensor(r, data, h.DataOffset, ti, buf)
		if err != nil {
			return nil, err
		}
		f.Tensors[ti.Name] = t
	}
	return f, nil
}

func (o readOptions) loadable(dt DType) bool {
	switch dt {
	case F32, F64:
		return true
	case F16, BF16:
		return o.half
	}
	return false
}

// loadTensor allocates the tensor described by ti and fills it from data
// (if non-nil) or from r in chunks of len(buf) bytes.
func loadTensor(r io.ReaderAt, data []byte, base int64, ti TensorInfo, buf []byte) (*tensor.Tensor, error) {
	var t *tensor.Tensor
	var conv func(src []byte, at int)
	switch ti.DType {
	case F64:
		// tensor.New, not FromFloat64: a header shape [] is a rank-0
		// scalar, which FromFloat64 would make a vector of one element.
		t = tensor.New(tensor.Float64, ti.Shape...)
		d := t.Data64()
		conv = func(src []byte, at int) {
			dst := d[at : at+len(src)/8]
			for i := range dst {
				dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
			}
		}
	default:
		t = tensor.New(tensor.Float32, ti.Shape...)
		d := t.Data32()
		switch ti.DType {
		case F32:
			conv = func(src []byte, at int) {
				dst := d[at : at+len(src)/4]
				for i := range dst {
					dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
				}
			}
		case F16:
			conv = func(src []byte, at int) {
				dst := d[at : at+len(src)/2]
				for i := range dst {
					dst[i] = halfToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
				}
			}
		case BF16:
			conv = func(src []byte, at int) {
				dst := d[at : at+len(src)/2]
				for i := range dst {
					dst[i] = bfloat16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
				}
			}
		}
	}
	esz := ti.DType.Size()
	begin, end := base+ti.Begin, base+ti.End
	if data != nil {
		conv(data[begin:end], 0)
		return t, nil
	}
	for off := begin; off < end; {
		k := int(min(int64(len(buf)), end-off))
		if err := readFull(r, buf[:k], off); err != nil {
			return nil, err
		}
		conv(buf[:k], int(off-begin)/esz)
		off += int64(k)
	}
	return t, nil
}
