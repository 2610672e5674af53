package safetensors

import (
	"errors"
	"strings"
)

// Causes of failure. Every error returned by this package that concerns the
// content of a file or of the tensors to write is an *[Error] wrapping one
// of these, so callers can write errors.Is(err, safetensors.ErrGap).
var (
	// ErrTooShort: the input is shorter than the 8-byte header length.
	ErrTooShort = errors.New("file shorter than 8 bytes")
	// ErrHeaderLength: the header length is past the end of the input or
	// larger than MaxHeaderSize.
	ErrHeaderLength = errors.New("invalid header length")
	// ErrHeaderJSON: the header is not a UTF-8 JSON object, or an entry is
	// not an object with the fields dtype, shape and data_offsets.
	ErrHeaderJSON = errors.New("invalid header JSON")
	// ErrDType: a dtype is not one of the specification's byte-sized dtypes.
	ErrDType = errors.New("unknown dtype")
	// ErrShape: a shape holds a negative or non-integer dimension, or its
	// byte size overflows.
	ErrShape = errors.New("invalid shape")
	// ErrOffsets: data_offsets is malformed or does not span exactly
	// shape*dtype-size bytes.
	ErrOffsets = errors.New("invalid data_offsets")
	// ErrOverlap: two tensors share bytes of the data buffer.
	ErrOverlap = errors.New("overlapping tensors")
	// ErrGap: the tensors leave bytes of the data buffer unused (the
	// specification requires the buffer to be covered with no holes and
	// no trailing bytes).
	ErrGap = errors.New("data buffer not fully covered")
	// ErrTruncated: a tensor's data extends past the end of the input.
	ErrTruncated = errors.New("tensor data past end of file")
	// ErrDuplicate: a name appears twice in the header (or in metadata).
	ErrDuplicate = errors.New("duplicate name")
	// ErrMetadata: "__metadata__" is not an object of strings.
	ErrMetadata = errors.New("invalid __metadata__")
	// ErrUnsupported: a tensor's dtype cannot be represented as a
	// tensor.Tensor (see HalfToFloat32 and SkipUnsupported).
	ErrUnsupported = errors.New("unsupported dtype for tensor.Tensor")
	// ErrName: a tensor to write has an invalid name (empty or
	// "__metadata__").
	ErrName = errors.New("invalid tensor name")
)

// Error describes a failure to read or write a safetensors file.
type Error struct {
	// Path is the file concerned, or "" for in-memory data.
	Path string
	// Tensor is the tensor (or metadata key) concerned, or "".
	Tensor string
	// Kind is one of the Err* values of this package.
	Kind error
	// Detail says what exactly is wrong.
	Detail string
}

// Error formats the error as
// "safetensors: PATH: tensor "NAME": KIND: DETAIL", leaving out empty parts.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("safetensors: ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Tensor != "" {
		b.WriteString("tensor ")
		b.WriteString(quote(e.Tensor))
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns e.Kind.
func (e *Error) Unwrap() error { return e.Kind }

// withPath sets the path of err if it is an *Error without one.
func withPath(err error, path string) error {
	var e *Error
	if errors.As(err, &e) && e.Path == "" {
		c := *e
		c.Path = path
		return &c
	}
	return err
}

func newErr(kind error, tensor, detail string) *Error {
	return &Error{Tensor: tensor, Kind: kind, Detail: detail}
}
