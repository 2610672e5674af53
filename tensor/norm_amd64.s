//go:build amd64 && !noasm

#include "textflag.h"

// AVX2 kernels of the LayerNorm rows (norm_amd64.go). Each rounds every
// element exactly as the Go loops of cpu_fused.go and cpu_fused_dit.go do
// (no FMA; float64 sums in the same lanes and order), so the SIMD and Go
// paths give the same bits. Lengths are multiples of 4 or 8 as stated; the
// callers run the remaining elements in Go.

// func sum4AVX2(x *float32, n int, acc *[4]float64)
// acc[k] += x[i] as float64 for i ≡ k (mod 4), i ascending; n % 4 == 0.
TEXT ·sum4AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ acc+16(FP), DI
	VMOVUPD (DI), Y0
	SHRQ $2, CX
	JZ done
loop:
	VCVTPS2PD (SI), Y1
	VADDPD Y1, Y0, Y0
	ADDQ $16, SI
	DECQ CX
	JNZ loop
done:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func sumSqDev4AVX2(x *float32, n int, mu float64, acc *[4]float64)
// acc[k] += (x[i] - mu)² in float64 for i ≡ k (mod 4); n % 4 == 0.
TEXT ·sumSqDev4AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD mu+16(FP), Y2
	MOVQ acc+24(FP), DI
	VMOVUPD (DI), Y0
	SHRQ $2, CX
	JZ done
loop:
	VCVTPS2PD (SI), Y1
	VSUBPD Y2, Y1, Y1
	VMULPD Y1, Y1, Y1
	VADDPD Y1, Y0, Y0
	ADDQ $16, SI
	DECQ CX
	JNZ loop
done:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func lnScaleAVX2(y, x *float32, n int, m, s float32)
// y = (x - m)·s; n % 8 == 0.
TEXT ·lnScaleAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS m+24(FP), Y10
	VBROADCASTSS s+28(FP), Y11
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y0
	VSUBPS Y10, Y0, Y0
	VMULPS Y11, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func lnModAVX2(y, x, shift, scale *float32, n int, m, s float32)
// u = (x - m)·s; y = (u + u·scale) + shift; n % 8 == 0.
TEXT ·lnModAVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ shift+16(FP), DX
	MOVQ scale+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSS m+40(FP), Y10
	VBROADCASTSS s+44(FP), Y11
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y0
	VSUBPS Y10, Y0, Y0
	VMULPS Y11, Y0, Y0
	VMULPS (R8), Y0, Y1
	VADDPS Y1, Y0, Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, R8
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func lnModBackAVX2(gu, gy, scale *float32, ssh, ssc *float64, n int)
// With u = gu[i] and g = gy[i]: ssh[i] += g, ssc[i] += g·u (rounded to
// float32 first), both in float64; gu[i] = g + g·scale[i]. n % 4 == 0.
TEXT ·lnModBackAVX2(SB), NOSPLIT, $0-48
	MOVQ gu+0(FP), DI
	MOVQ gy+8(FP), SI
	MOVQ scale+16(FP), DX
	MOVQ ssh+24(FP), R8
	MOVQ ssc+32(FP), R9
	MOVQ n+40(FP), CX
	SHRQ $2, CX
	JZ done
loop:
	VMOVUPS (SI), X0
	VMOVUPS (DI), X1
	VCVTPS2PD X0, Y2
	VADDPD (R8), Y2, Y2
	VMOVUPD Y2, (R8)
	VMULPS X1, X0, X3
	VCVTPS2PD X3, Y3
	VADDPD (R9), Y3, Y3
	VMOVUPD Y3, (R9)
	VMULPS (DX), X0, X4
	VADDPS X4, X0, X4
	VMOVUPS X4, (DI)
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $16, DX
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func lnBackSums4AVX2(gr, x *float32, n int, mu float64, acc *[8]float64)
// For i ≡ k (mod 4): acc[k] += gr[i] and acc[4+k] += gr[i]·(x[i] - mu), in
// float64; n % 4 == 0.
TEXT ·lnBackSums4AVX2(SB), NOSPLIT, $0-40
	MOVQ gr+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ n+16(FP), CX
	VBROADCASTSD mu+24(FP), Y2
	MOVQ acc+32(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	SHRQ $2, CX
	JZ done
loop:
	VCVTPS2PD (SI), Y3
	VCVTPS2PD (DX), Y4
	VADDPD Y3, Y0, Y0
	VSUBPD Y2, Y4, Y4
	VMULPD Y4, Y3, Y4
	VADDPD Y4, Y1, Y1
	ADDQ $16, SI
	ADDQ $16, DX
	DECQ CX
	JNZ loop
done:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func lnBackOutAVX2(out, gr, x *float32, n int, c0, c1, c2, m float32)
// out = (c0·gr - c1) - (x - m)·c2; n % 8 == 0.
TEXT ·lnBackOutAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS c0+32(FP), Y10
	VBROADCASTSS c1+36(FP), Y11
	VBROADCASTSS c2+40(FP), Y12
	VBROADCASTSS m+44(FP), Y13
	SHRQ $3, CX
	JZ done
loop:
	VMULPS (SI), Y10, Y0
	VSUBPS Y11, Y0, Y0
	VMOVUPS (DX), Y1
	VSUBPS Y13, Y1, Y1
	VMULPS Y12, Y1, Y1
	VSUBPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func lnAffineAVX2(y, x, gamma, beta *float32, n int, m, s float32)
// y = ((x - m)·s)·gamma + beta; n % 8 == 0.
TEXT ·lnAffineAVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gamma+16(FP), DX
	MOVQ beta+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSS m+40(FP), Y10
	VBROADCASTSS s+44(FP), Y11
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y0
	VSUBPS Y10, Y0, Y0
	VMULPS Y11, Y0, Y0
	VMULPS (DX), Y0, Y0
	VADDPS (R8), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, R8
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func lnModAffineAVX2(y, x, gamma, beta, shift, scale *float32, n int, m, s float32)
// u = ((x - m)·s)·gamma + beta; y = (u + u·scale) + shift; n % 8 == 0.
TEXT ·lnModAffineAVX2(SB), NOSPLIT, $0-64
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gamma+16(FP), DX
	MOVQ beta+24(FP), R8
	MOVQ shift+32(FP), R9
	MOVQ scale+40(FP), R10
	MOVQ n+48(FP), CX
	VBROADCASTSS m+56(FP), Y10
	VBROADCASTSS s+60(FP), Y11
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (SI), Y0
	VSUBPS Y10, Y0, Y0
	VMULPS Y11, Y0, Y0
	VMULPS (DX), Y0, Y0
	VADDPS (R8), Y0, Y0
	VMULPS (R10), Y0, Y1
	VADDPS Y1, Y0, Y0
	VADDPS (R9), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func lnParamGradAVX2(gr, x *float32, dg, db *float64, n int, mu, rs float64)
// With g = gr[i] in float64: dg[i] += g·((x[i] - mu)·rs), db[i] += g;
// n % 4 == 0.
TEXT ·lnParamGradAVX2(SB), NOSPLIT, $0-56
	MOVQ gr+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ dg+16(FP), R8
	MOVQ db+24(FP), R9
	MOVQ n+32(FP), CX
	VBROADCASTSD mu+40(FP), Y10
	VBROADCASTSD rs+48(FP), Y11
	SHRQ $2, CX
	JZ done
loop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD (DX), Y1
	VSUBPD Y10, Y1, Y1
	VMULPD Y11, Y1, Y1
	VMULPD Y1, Y0, Y1
	VADDPD (R8), Y1, Y1
	VMOVUPD Y1, (R8)
	VADDPD (R9), Y0, Y0
	VMOVUPD Y0, (R9)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func lnBackSums4GammaAVX2(gr, x, gamma *float32, n int, mu float64, acc *[8]float64)
// lnBackSums4AVX2 with g = gr[i]·gamma[i] in float64 (exact).
TEXT ·lnBackSums4GammaAVX2(SB), NOSPLIT, $0-48
	MOVQ gr+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ gamma+16(FP), R8
	MOVQ n+24(FP), CX
	VBROADCASTSD mu+32(FP), Y2
	MOVQ acc+40(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	SHRQ $2, CX
	JZ done
loop:
	VCVTPS2PD (SI), Y3
	VCVTPS2PD (R8), Y5
	VMULPD Y5, Y3, Y3
	VCVTPS2PD (DX), Y4
	VADDPD Y3, Y0, Y0
	VSUBPD Y2, Y4, Y4
	VMULPD Y4, Y3, Y4
	VADDPD Y4, Y1, Y1
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, R8
	DECQ CX
	JNZ loop
done:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func lnBackOutGammaAVX2(out, gr, x, gamma *float32, n int, c0, c1, c2, m float32)
// out = ((c0·gr)·gamma - c1) - (x - m)·c2; n % 8 == 0.
TEXT ·lnBackOutGammaAVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ gamma+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSS c0+40(FP), Y10
	VBROADCASTSS c1+44(FP), Y11
	VBROADCASTSS c2+48(FP), Y12
	VBROADCASTSS m+52(FP), Y13
	SHRQ $3, CX
	JZ done
loop:
	VMULPS (SI), Y10, Y0
	VMULPS (R8), Y0, Y0
	VSUBPS Y11, Y0, Y0
	VMOVUPS (DX), Y1
	VSUBPS Y13, Y1, Y1
	VMULPS Y12, Y1, Y1
	VSUBPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func mulAcc64AVX2(acc *float64, a, b *float32, n int)
// acc[i] += a[i]·b[i] (the product rounded to float32, the sum in
// float64); n % 4 == 0.
TEXT ·mulAcc64AVX2(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $2, CX
	JZ done
loop:
	VMOVUPS (SI), X0
	VMULPS (DX), X0, X0
	VCVTPS2PD X0, Y1
	VADDPD (DI), Y1, Y1
	VMOVUPD Y1, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func sum4x4AVX2(x *float32, ld, n int, acc *[16]float64)
// sum4AVX2 on four rows at once (row r at x + r*ld): acc[4r+k] += x[r*ld+i]
// for i ≡ k (mod 4), i ascending; n % 4 == 0. The rows' four chains are
// independent, so they overlap where one row's chain waits on its adds.
TEXT ·sum4x4AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ n+16(FP), CX
	MOVQ acc+24(FP), DI
	VMOVUPD 0(DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	SHRQ $2, CX
	JZ done
loop:
	VCVTPS2PD (SI), Y4
	VADDPD Y4, Y0, Y0
	VCVTPS2PD (SI)(R8*1), Y5
	VADDPD Y5, Y1, Y1
	VCVTPS2PD (SI)(R8*2), Y6
	VADDPD Y6, Y2, Y2
	VCVTPS2PD (SI)(R9*1), Y7
	VADDPD Y7, Y3, Y3
	ADDQ $16, SI
	DECQ CX
	JNZ loop
done:
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func sumSqDev4x4AVX2(x *float32, ld, n int, mu *[4]float64, acc *[16]float64)
// sumSqDev4AVX2 on four rows at once (row r at x + r*ld, its mean mu[r]):
// acc[4r+k] += (x[r*ld+i] - mu[r])² for i ≡ k (mod 4); n % 4 == 0.
TEXT ·sumSqDev4x4AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ n+16(FP), CX
	MOVQ mu+24(FP), AX
	VBROADCASTSD 0(AX), Y8
	VBROADCASTSD 8(AX), Y9
	VBROADCASTSD 16(AX), Y10
	VBROADCASTSD 24(AX), Y11
	MOVQ acc+32(FP), DI
	VMOVUPD 0(DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	SHRQ $2, CX
	JZ done
loop:
	VCVTPS2PD (SI), Y4
	VSUBPD Y8, Y4, Y4
	VMULPD Y4, Y4, Y4
	VADDPD Y4, Y0, Y0
	VCVTPS2PD (SI)(R8*1), Y5
	VSUBPD Y9, Y5, Y5
	VMULPD Y5, Y5, Y5
	VADDPD Y5, Y1, Y1
	VCVTPS2PD (SI)(R8*2), Y6
	VSUBPD Y10, Y6, Y6
	VMULPD Y6, Y6, Y6
	VADDPD Y6, Y2, Y2
	VCVTPS2PD (SI)(R9*1), Y7
	VSUBPD Y11, Y7, Y7
	VMULPD Y7, Y7, Y7
	VADDPD Y7, Y3, Y3
	ADDQ $16, SI
	DECQ CX
	JNZ loop
done:
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// COLACC8 adds the four float32 values at lo and the four at hi (16
// bytes on), as float64, to ya and yb.
#define COLACC8(lo, hi, ya, yb) \
	VCVTPS2PD lo, Y12; \
	VADDPD Y12, ya, ya; \
	VCVTPS2PD hi, Y13; \
	VADDPD Y13, yb, yb

// func colAcc64AVX2(acc *float64, x *float32, ld, rows, n int)
// acc[i] += x[r*ld+i] (in float64) for r = 0, 1, ..., rows-1 in turn and
// i < n; n % 4 == 0. Column blocks of 32 (then 4) stay in registers over
// all the rows; each acc[i] takes its additions in row order.
TEXT ·colAcc64AVX2(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	MOVQ rows+24(FP), R9
	MOVQ n+32(FP), CX
	TESTQ R9, R9
	JZ cadone
cablock32:
	CMPQ CX, $32
	JLT cablock4
	VMOVUPD 0(DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	VMOVUPD 128(DI), Y4
	VMOVUPD 160(DI), Y5
	VMOVUPD 192(DI), Y6
	VMOVUPD 224(DI), Y7
	MOVQ SI, AX
	MOVQ R9, R10
carow32:
	COLACC8((AX), 16(AX), Y0, Y1)
	COLACC8(32(AX), 48(AX), Y2, Y3)
	COLACC8(64(AX), 80(AX), Y4, Y5)
	COLACC8(96(AX), 112(AX), Y6, Y7)
	ADDQ R8, AX
	DECQ R10
	JNZ carow32
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y4, 128(DI)
	VMOVUPD Y5, 160(DI)
	VMOVUPD Y6, 192(DI)
	VMOVUPD Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $128, SI
	SUBQ $32, CX
	JMP cablock32
cablock4:
	CMPQ CX, $4
	JLT cadone
	VMOVUPD 0(DI), Y0
	MOVQ SI, AX
	MOVQ R9, R10
carow4:
	VCVTPS2PD (AX), Y12
	VADDPD Y12, Y0, Y0
	ADDQ R8, AX
	DECQ R10
	JNZ carow4
	VMOVUPD Y0, 0(DI)
	ADDQ $32, DI
	ADDQ $16, SI
	SUBQ $4, CX
	JMP cablock4
cadone:
	VZEROUPPER
	RET

// func adamWAVX2(p, grad, m, v *float32, n int, c *[8]float64)
// AdamW on n % 4 == 0 float32 elements with adamWRange's operations, four
// at a time in float64 lanes; c holds b1, 1-b1, b2, 1-b2, stepSize, ibc2,
// eps and float64(decay):
//
//	mi = b1·m + (1-b1)·g;  vi = b2·v + ((1-b2)·g)·g
//	m, v = float32(mi), float32(vi)
//	p = float32(p·decay) - float32(stepSize·mi / (sqrt(vi)·ibc2 + eps))
TEXT ·adamWAVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ v+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	VBROADCASTSD 0(AX), Y8   // b1
	VBROADCASTSD 8(AX), Y9   // 1-b1
	VBROADCASTSD 16(AX), Y10 // b2
	VBROADCASTSD 24(AX), Y11 // 1-b2
	VBROADCASTSD 32(AX), Y12 // stepSize
	VBROADCASTSD 40(AX), Y13 // ibc2
	VBROADCASTSD 48(AX), Y14 // eps
	VCVTSD2SS 56(AX), X15, X15
	VBROADCASTSS X15, X15    // decay (float32)
	SHRQ $2, CX
	JZ awdone
awloop:
	VCVTPS2PD (SI), Y0       // g
	VCVTPS2PD (DX), Y1       // m
	VCVTPS2PD (R8), Y2       // v
	VMULPD Y8, Y1, Y1        // b1·m
	VMULPD Y9, Y0, Y3        // (1-b1)·g
	VADDPD Y3, Y1, Y1        // mi
	VMULPD Y10, Y2, Y2       // b2·v
	VMULPD Y11, Y0, Y4       // (1-b2)·g
	VMULPD Y0, Y4, Y4        // ·g
	VADDPD Y4, Y2, Y2        // vi
	VCVTPD2PSY Y1, X5
	VMOVUPS X5, (DX)
	VCVTPD2PSY Y2, X6
	VMOVUPS X6, (R8)
	VSQRTPD Y2, Y2
	VMULPD Y13, Y2, Y2       // sqrt(vi)·ibc2
	VADDPD Y14, Y2, Y2       // + eps
	VMULPD Y12, Y1, Y1       // stepSize·mi
	VDIVPD Y2, Y1, Y1
	VCVTPD2PSY Y1, X1        // float32(update)
	VMOVUPS (DI), X0
	VMULPS X15, X0, X0       // float32(p·decay)
	VSUBPS X1, X0, X0
	VMOVUPS X0, (DI)
	ADDQ $16, DI
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, R8
	DECQ CX
	JNZ awloop
awdone:
	VZEROUPPER
	RET
