package safetensors

import "math"

// DType is the element type of a stored tensor, spelt as in the header
// ("F32", "BF16", "I64", ...).
type DType string

// The element types of the safetensors specification that this package
// can parse. Sub-byte types (F4, F6_E2M3, F6_E3M2) are rejected with
// [ErrDType].
const (
	BOOL   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	F8E8M0 DType = "F8_E8M0"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	I64    DType = "I64"
	U64    DType = "U64"
	F64    DType = "F64"
	C64    DType = "C64"
)

// Size returns the number of bytes of one element, or 0 if d is not a
// dtype this package knows.
func (d DType) Size() int {
	switch d {
	case BOOL, U8, I8, F8E5M2, F8E4M3, F8E8M0:
		return 1
	case I16, U16, F16, BF16:
		return 2
	case I32, U32, F32:
		return 4
	case I64, U64, F64, C64:
		return 8
	}
	return 0
}

// isSubByte reports whether d is one of the packed sub-byte dtypes of the
// specification, which this package does not support.
func (d DType) isSubByte() bool {
	switch d {
	case "F4", "F6_E2M3", "F6_E3M2":
		return true
	}
	return false
}

// halfToFloat32 converts an IEEE 754 binary16 value to float32 exactly
// (every binary16 value, subnormals, infinities and NaN payloads included,
// is representable in binary32).
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0x1f: // Inf or NaN; keep the payload
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: mant * 2^-24, exact in float32.
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+(127-15))<<23 | mant<<13)
}

// bfloat16ToFloat32 converts a bfloat16 value (the top 16 bits of a
// float32) to float32 exactly.
func bfloat16ToFloat32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// float32ToHalf rounds f to the nearest IEEE 754 binary16 value (ties to
// even): magnitudes past the largest half (65504, rounding included)
// become infinities, tiny ones subnormals or zeros with f's sign, and NaN
// stays NaN (quiet, with the top bits of its payload).
func float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(mant>>13)
	case exp > 127+15: // |f| >= 2^16: overflow
		return sign | 0x7c00
	case exp >= 127-14: // normal half (rounding may carry into the exponent, or to Inf)
		h := uint32(exp-127+15)<<10 | mant>>13
		rest := mant & 0x1fff
		if rest > 0x1000 || rest == 0x1000 && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	case exp >= 127-25: // subnormal half: mant·2^-24 with the implicit bit
		m := mant | 0x800000
		shift := uint(126 - exp) // 14..24 more bits to drop
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || rest == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	return sign // underflow to zero
}

// float32ToBFloat16 rounds f to the nearest bfloat16 value (the top 16 bits
// of a float32, ties to even); NaN stays a quiet NaN.
func float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
