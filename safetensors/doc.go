// Package safetensors reads and writes the safetensors file format of
// Hugging Face (https://huggingface.co/docs/safetensors), so lgflow
// checkpoints can be opened by PyTorch, JAX and other tools, and files
// written by them can be loaded here.
//
// # Format
//
// A file is
//
//	[8 bytes]  N, the header length, a little-endian uint64
//	[N bytes]  a UTF-8 JSON object (the header)
//	[rest]     the data buffer
//
// The header maps every tensor name to
//
//	{"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
//
// where the offsets are byte offsets into the data buffer (relative to the
// first byte after the header), and may hold the optional key
// "__metadata__" mapping strings to strings. Tensor data is stored
// little-endian in row-major (C) order. The data buffer must be covered
// exactly: no overlapping tensors, no holes, no trailing bytes.
//
// # What this package does
//
// [Write] and [Save] write tensors in sorted name order, contiguously, with
// "__metadata__" first and the header padded with spaces to a multiple of 8
// bytes (as the reference Rust implementation does). [Save] is atomic: it
// writes a temporary file in the destination directory, syncs it and
// renames it over the destination.
//
// [Decode] (for bytes, for example from go:embed), [Read] (for an
// io.ReaderAt) and [Load] (for a path) validate the whole header before
// allocating anything for tensor data, so a hostile or corrupt file yields
// an error, never a panic or an allocation beyond the file's size (twice
// it when half-precision tensors are converted to float32). Errors are
// of type *[Error] and wrap one of the Err* values, so callers can test the
// cause with errors.Is.
//
// Float32 ("F32") and float64 ("F64") tensors load as tensor.Float32 and
// tensor.Float64 tensors. Half precision ("F16", "BF16") loads as Float32
// with the [HalfToFloat32] option; other dtypes (integers, bool, 8-bit
// floats) are reported with [ErrUnsupported] unless [SkipUnsupported] is
// given. [ParseHeader] and [ReadHeader] give the header alone, for
// inspecting a file without loading it.
package safetensors
