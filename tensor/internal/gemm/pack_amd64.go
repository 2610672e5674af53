//go:build amd64 && !noasm

package gemm

import "unsafe"

// packT8AVX2 sets dst[p*stride+i] = src[i*lda+p] for i < 8 and p < 8*blocks
// (strides in elements); packT4AVX2 does the same for 4 rows. They are the
// transposing packs of packA (rows of A into an A panel) and packB (rows of a
// transposed B into a B panel); see pack_amd64.s.
//
//go:noescape
func packT8AVX2(dst *float32, stride int, src *float32, lda int, blocks int)

//go:noescape
func packT4AVX2(dst *float32, stride int, src *float32, lda int, blocks int)

// packRows sets d[p*stride+i] = s[i*lda+p] for i < rows and p < kc with the
// AVX2 transposes, eight columns at a time; it returns how many leading
// columns it packed (a multiple of 8), leaving the rest to the caller, or 0
// when it cannot (no AVX2, float64, rows not a positive multiple of 4). d
// and s must hold the panel and the rows.
func packRows[T scalar](d []T, stride int, s []T, lda, rows, kc int) int {
	var z T
	blocks := kc / 8
	if !hasAVX2FMA || unsafe.Sizeof(z) != 4 || rows == 0 || rows%4 != 0 || blocks == 0 {
		return 0
	}
	// Bounds: the last element each side touches.
	_ = d[(8*blocks-1)*stride+rows-1]
	_ = s[(rows-1)*lda+8*blocks-1]
	dp := (*float32)(unsafe.Pointer(&d[0]))
	sp := (*float32)(unsafe.Pointer(&s[0]))
	i := 0
	for ; i+8 <= rows; i += 8 {
		packT8AVX2((*float32)(unsafe.Add(unsafe.Pointer(dp), 4*i)), stride, (*float32)(unsafe.Add(unsafe.Pointer(sp), 4*i*lda)), lda, blocks)
	}
	if i < rows {
		packT4AVX2((*float32)(unsafe.Add(unsafe.Pointer(dp), 4*i)), stride, (*float32)(unsafe.Add(unsafe.Pointer(sp), 4*i*lda)), lda, blocks)
	}
	return 8 * blocks
}
