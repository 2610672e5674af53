//go:build amd64 && !noasm

#include "textflag.h"

// Transposing packs for the float32 GEMM (see pack_amd64.go): rows of a
// row-major matrix become the interleaved columns of a packed panel,
//
//	dst[p*stride+i] = src[i*lda+p]   for i < 8 (or 4) and p < 8*blocks,
//
// eight columns at a time: 8 (4) rows are loaded 8 values each and
// transposed in registers with unpack, shuffle and 128-bit lane moves.

// func packT8AVX2(dst *float32, stride int, src *float32, lda int, blocks int)
TEXT ·packT8AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ stride+8(FP), DX
	SHLQ $2, DX
	MOVQ src+16(FP), SI
	MOVQ lda+24(FP), BX
	SHLQ $2, BX
	MOVQ blocks+32(FP), CX
	TESTQ CX, CX
	JEQ  done8
	// Row i starts i*lda bytes after row 0: BX, 2BX, R9, 4BX, R10, R11, R12.
	LEAQ (BX)(BX*2), R9  // 3*lda
	LEAQ (BX)(BX*4), R10 // 5*lda
	LEAQ (R9)(R9*1), R11 // 6*lda
	LEAQ (R11)(BX*1), R12 // 7*lda

loop8:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMOVUPS (SI)(BX*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (SI)(BX*4), Y4
	VMOVUPS (SI)(R10*1), Y5
	VMOVUPS (SI)(R11*1), Y6
	VMOVUPS (SI)(R12*1), Y7

	// t = unpack pairs of rows: t0 = r0_0 r1_0 r0_1 r1_1 | r0_4 r1_4 r0_5 r1_5, ...
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	// u = columns within each lane: u0 = col 0 | col 4 of rows 0-3, ...
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7

	// Columns 0-3 from the low lanes, 4-7 from the high lanes.
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	MOVQ DI, AX
	VMOVUPS Y8, (AX)
	ADDQ DX, AX
	VMOVUPS Y9, (AX)
	ADDQ DX, AX
	VMOVUPS Y10, (AX)
	ADDQ DX, AX
	VMOVUPS Y11, (AX)
	ADDQ DX, AX
	VMOVUPS Y12, (AX)
	ADDQ DX, AX
	VMOVUPS Y13, (AX)
	ADDQ DX, AX
	VMOVUPS Y14, (AX)
	ADDQ DX, AX
	VMOVUPS Y15, (AX)
	ADDQ DX, AX
	MOVQ AX, DI

	ADDQ $32, SI
	DECQ CX
	JNE  loop8

done8:
	VZEROUPPER
	RET

// func packT4AVX2(dst *float32, stride int, src *float32, lda int, blocks int)
TEXT ·packT4AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ stride+8(FP), DX
	SHLQ $2, DX
	MOVQ src+16(FP), SI
	MOVQ lda+24(FP), BX
	SHLQ $2, BX
	MOVQ blocks+32(FP), CX
	TESTQ CX, CX
	JEQ  done4
	LEAQ (BX)(BX*2), R9 // 3*lda

loop4:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMOVUPS (SI)(BX*2), Y2
	VMOVUPS (SI)(R9*1), Y3

	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11

	// u0 = col 0 | col 4, u1 = col 1 | col 5, u2 = col 2 | col 6, u3 = col 3 | col 7.
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3

	MOVQ DI, AX
	VMOVUPS X0, (AX)
	ADDQ DX, AX
	VMOVUPS X1, (AX)
	ADDQ DX, AX
	VMOVUPS X2, (AX)
	ADDQ DX, AX
	VMOVUPS X3, (AX)
	ADDQ DX, AX
	VEXTRACTF128 $1, Y0, (AX)
	ADDQ DX, AX
	VEXTRACTF128 $1, Y1, (AX)
	ADDQ DX, AX
	VEXTRACTF128 $1, Y2, (AX)
	ADDQ DX, AX
	VEXTRACTF128 $1, Y3, (AX)
	ADDQ DX, AX
	MOVQ AX, DI

	ADDQ $32, SI
	DECQ CX
	JNE  loop4

done4:
	VZEROUPPER
	RET
