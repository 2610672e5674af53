//go:build amd64 && !noasm

#include "textflag.h"

// AVX2+FMA float32 kernels of mathf_amd64.go: 8 elements per ymm register.
// Each kernel processes n elements; the last n%8 go through the same code
// with masked loads and stores (VMASKMOVPS), so no element is read or
// written outside [0, n) and every element gets bit-identical treatment.
//
// Algorithms (accuracy is tested in mathf_test.go):
//
// exp(x): x is clamped to [-104, 88.8] (NaN passes: VMAXPS/VMINPS return
// their first Go operand when either is NaN); n = round(x·log2 e) with
// VROUNDPS; r = x - n·ln2 with ln2 split in Cody and Waite's two parts (the
// first exact in 9 bits, so n·C1 and x - n·C1 are exact); e^r = 1 + r +
// r²·P(r) with the degree-5 P of Cephes' expf; the result is scaled by
// 2^(n>>1)·2^(n-(n>>1)) so that results below 2^-126 round once into the
// subnormals, e^-104 rounds to 0 and e^88.8 overflows to +Inf.
//
// erfc(z), z = |x|/√2 >= 0: exp(-z²)·R(|x|) with R(x) = N(x)/D(x) a
// degree-4/5 rational fit of erfcx(x/√2) on [0, 14.45] (relative error 2e-8
// in exact arithmetic with these float32 coefficients; N and D have
// positive coefficients, so D has no zero for x >= 0). z² = x²/2 is carried
// as hh + ll (hh = 0.5x·x rounded, ll = its exact rounding error by FMA) and
// the exponential reduces -hh exactly before adding -ll, so the argument
// error of exp does not grow with z². |x| is clamped to 14.45 where both
// erfc and the Gaussian have underflowed to 0 in float32.
//
// tanh|x|: m = expm1(-2|x|) = 2^n·q + (2^n - 1) with q = e^r - 1 =
// r + r²·P(r) is accurate near 0, e = e^-2|x| = 2^n·q + 2^n; tanh|x| is
// -m/(2+m) for |x| < 0.6 and 1 - 2e/(2+m) above. |x| is clamped to 9.5
// where tanh rounds to 1; the sign of x is copied onto the result.

#define C8(name, v) \
	DATA name<>+0(SB)/4, $v; \
	DATA name<>+4(SB)/4, $v; \
	DATA name<>+8(SB)/4, $v; \
	DATA name<>+12(SB)/4, $v; \
	DATA name<>+16(SB)/4, $v; \
	DATA name<>+20(SB)/4, $v; \
	DATA name<>+24(SB)/4, $v; \
	DATA name<>+28(SB)/4, $v; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

C8(mfAbs, 0x7fffffff)
C8(mfSign, 0x80000000)
C8(mfBias, 127)
C8(mfOne, 1.0)
C8(mfTwo, 2.0)
C8(mfHalf, 0.5)
C8(mfMinus2, -2.0)
C8(mfExpLo, -104.0)
C8(mfExpHi, 88.8)
C8(mfLog2e, 1.44269504)
C8(mfNegLog2e, -1.44269504)
C8(mfLn2Hi, 0.693359375)
C8(mfLn2Lo, -2.12194440e-4)
C8(mfE0, 5.0000001201e-1)
C8(mfE1, 1.6666665459e-1)
C8(mfE2, 4.1665795894e-2)
C8(mfE3, 8.3334519073e-3)
C8(mfE4, 1.3981999507e-3)
C8(mfE5, 1.9875691500e-4)
C8(mfGeluMax, 14.45)
C8(mfN0, 0.5)
C8(mfN1, 0.438196003)
C8(mfN2, 0.18316178)
C8(mfN3, 0.0406084843)
C8(mfN4, 0.00411263201)
C8(mfD1, 1.67427695)
C8(mfD2, 1.20219851)
C8(mfD3, 0.469276965)
C8(mfD4, 0.101796858)
C8(mfD5, 0.0103087192)
C8(mfInvSqrt2Pi, 0.398942280)
C8(mfTanhMax, 9.5)
C8(mfTanhSplit, 0.6)
C8(mfXLo, -200.0)
C8(mfXHi, 200.0)

// mfMask: VMOVUPS from mfMask<>+4*(8-r) gives r lanes of all ones followed
// by 8-r zero lanes.
DATA mfMask<>+0(SB)/4, $0xffffffff
DATA mfMask<>+4(SB)/4, $0xffffffff
DATA mfMask<>+8(SB)/4, $0xffffffff
DATA mfMask<>+12(SB)/4, $0xffffffff
DATA mfMask<>+16(SB)/4, $0xffffffff
DATA mfMask<>+20(SB)/4, $0xffffffff
DATA mfMask<>+24(SB)/4, $0xffffffff
DATA mfMask<>+28(SB)/4, $0xffffffff
DATA mfMask<>+32(SB)/4, $0
DATA mfMask<>+36(SB)/4, $0
DATA mfMask<>+40(SB)/4, $0
DATA mfMask<>+44(SB)/4, $0
DATA mfMask<>+48(SB)/4, $0
DATA mfMask<>+52(SB)/4, $0
DATA mfMask<>+56(SB)/4, $0
DATA mfMask<>+60(SB)/4, $0
GLOBL mfMask<>(SB), RODATA|NOPTR, $64

// TAILMASK loads into Y12 the lane mask of the CX (1..7) remaining
// elements. Clobbers AX, R8.
#define TAILMASK \
	LEAQ mfMask<>(SB), AX; \
	MOVQ $8, R8; \
	SUBQ CX, R8; \
	VMOVUPS (AX)(R8*4), Y12

// EXPM1POLY sets pp = e^rr - 1 = rr + rr²·P(rr) for |rr| <= ln2/2.
// Clobbers tt.
#define EXPM1POLY(rr, pp, tt) \
	VMOVUPS mfE5<>(SB), pp; \
	VFMADD213PS mfE4<>(SB), rr, pp; \
	VFMADD213PS mfE3<>(SB), rr, pp; \
	VFMADD213PS mfE2<>(SB), rr, pp; \
	VFMADD213PS mfE1<>(SB), rr, pp; \
	VFMADD213PS mfE0<>(SB), rr, pp; \
	VMULPS rr, rr, tt; \
	VFMADD213PS rr, tt, pp

// EXPSCALE multiplies pp by 2^nn (nn integral floats in [-152, 128]) in
// two steps, 2^(nn>>1) then 2^(nn-(nn>>1)), each a normal float32.
// Clobbers nn, tt.
#define EXPSCALE(nn, pp, tt) \
	VCVTPS2DQ nn, nn; \
	VPSRAD $1, nn, tt; \
	VPSUBD tt, nn, nn; \
	VPADDD mfBias<>(SB), tt, tt; \
	VPADDD mfBias<>(SB), nn, nn; \
	VPSLLD $23, tt, tt; \
	VPSLLD $23, nn, nn; \
	VMULPS tt, pp, pp; \
	VMULPS nn, pp, pp

// EXPCORE sets pp = e^xx for xx already clamped to [-104, 88.8] (or NaN).
// Clobbers xx, nn, tt.
#define EXPCORE(xx, nn, pp, tt) \
	VMULPS mfLog2e<>(SB), xx, nn; \
	VROUNDPS $0, nn, nn; \
	VFNMADD231PS mfLn2Hi<>(SB), nn, xx; \
	VFNMADD231PS mfLn2Lo<>(SB), nn, xx; \
	EXPM1POLY(xx, pp, tt); \
	VADDPS mfOne<>(SB), pp, pp; \
	EXPSCALE(nn, pp, tt)

// EXPCLAMP clamps xx to [Y14, Y15] = [-104, 88.8], keeping NaN.
#define EXPCLAMP(xx) \
	VMAXPS xx, Y14, xx; \
	VMINPS xx, Y15, xx

// GELUCORE takes x in Y0 and sets Y1 = min(|x|, 14.45), Y2 = erfc(Y1/√2)/2
// and Y7 = exp(-Y1²/2). Needs Y15 = abs mask, Y14 = 14.45. Clobbers Y3-Y8.
#define GELUCORE \
	VANDPS Y15, Y0, Y1; \
	VMINPS Y1, Y14, Y1; \
	VMOVUPS mfN4<>(SB), Y2; \
	VMOVUPS mfD5<>(SB), Y3; \
	VFMADD213PS mfN3<>(SB), Y1, Y2; \
	VFMADD213PS mfD4<>(SB), Y1, Y3; \
	VFMADD213PS mfN2<>(SB), Y1, Y2; \
	VFMADD213PS mfD3<>(SB), Y1, Y3; \
	VFMADD213PS mfN1<>(SB), Y1, Y2; \
	VFMADD213PS mfD2<>(SB), Y1, Y3; \
	VFMADD213PS mfN0<>(SB), Y1, Y2; \
	VFMADD213PS mfD1<>(SB), Y1, Y3; \
	VFMADD213PS mfOne<>(SB), Y1, Y3; \
	VDIVPS Y3, Y2, Y2; \
	VMULPS mfHalf<>(SB), Y1, Y4; \
	VMULPS Y1, Y4, Y5; \
	VFMSUB213PS Y5, Y1, Y4; \
	VMULPS mfNegLog2e<>(SB), Y5, Y6; \
	VROUNDPS $0, Y6, Y6; \
	VFNMSUB231PS mfLn2Hi<>(SB), Y6, Y5; \
	VFNMADD231PS mfLn2Lo<>(SB), Y6, Y5; \
	VSUBPS Y4, Y5, Y5; \
	EXPM1POLY(Y5, Y7, Y8); \
	VADDPS mfOne<>(SB), Y7, Y7; \
	EXPSCALE(Y6, Y7, Y8); \
	VMULPS Y7, Y2, Y2

// Kernel bodies: x in Y0 (gy in Y9 for the gradients), result in Y3.

// exp(x). Needs Y14, Y15 = exp clamp bounds.
#define EXPBODY \
	EXPCLAMP(Y0); \
	EXPCORE(Y0, Y1, Y3, Y2)

// 1/(1+e^-x). Needs Y13 = 1, Y14, Y15 = exp clamp bounds.
#define SIGMOIDBODY \
	VXORPS mfSign<>(SB), Y0, Y0; \
	EXPCLAMP(Y0); \
	EXPCORE(Y0, Y1, Y2, Y4); \
	VADDPS Y13, Y2, Y2; \
	VDIVPS Y2, Y13, Y3

// max(x,-200)/(1+e^-x). Needs Y11 = -200, Y13 = 1, Y14, Y15 = exp clamp
// bounds. (For x < -104 the result is -0 either way; the clamp makes
// x = -Inf give -0 instead of -Inf/Inf.)
#define SILUBODY \
	VXORPS mfSign<>(SB), Y0, Y1; \
	EXPCLAMP(Y1); \
	EXPCORE(Y1, Y2, Y4, Y5); \
	VADDPS Y13, Y4, Y4; \
	VMAXPS Y0, Y11, Y0; \
	VDIVPS Y4, Y0, Y3

// gy·s·(1 + x·(1-s)), s = 1/(1+e), e = e^-x, with 1-s = e·s for x >= 0
// (no cancellation) and 1-s for x < 0; x clamped to [-200, 200] in the
// product so that ±Inf give 0 and gy. Needs Y10 = 200, Y11 = -200,
// Y13 = 1, Y14, Y15 = exp clamp bounds.
#define SILUGRADBODY \
	VXORPS mfSign<>(SB), Y0, Y1; \
	EXPCLAMP(Y1); \
	EXPCORE(Y1, Y2, Y4, Y5); \
	VADDPS Y13, Y4, Y5; \
	VDIVPS Y5, Y13, Y5; \
	VMULPS Y5, Y4, Y4; \
	VSUBPS Y5, Y13, Y6; \
	VBLENDVPS Y0, Y6, Y4, Y4; \
	VMAXPS Y0, Y11, Y0; \
	VMINPS Y0, Y10, Y0; \
	VFMADD213PS Y13, Y4, Y0; \
	VMULPS Y5, Y0, Y0; \
	VMULPS Y9, Y0, Y3

// tanh x. With m = e^-2|x| - 1 (accurate near 0) and e = e^-2|x|:
// -m/(2+m) for |x| < 0.6 and 1 - 2e/(2+m) above, where the quotient is
// small and its rounding error shrinks with it. Needs Y13 = 1, Y14 = 9.5,
// Y15 = abs mask. Uses Y9 for the branch mask.
#define TANHBODY \
	VANDPS Y15, Y0, Y1; \
	VMINPS Y1, Y14, Y1; \
	VCMPPS $0x1d, mfTanhSplit<>(SB), Y1, Y9; \
	VMULPS mfMinus2<>(SB), Y1, Y1; \
	VMULPS mfLog2e<>(SB), Y1, Y2; \
	VROUNDPS $0, Y2, Y2; \
	VFNMADD231PS mfLn2Hi<>(SB), Y2, Y1; \
	VFNMADD231PS mfLn2Lo<>(SB), Y2, Y1; \
	EXPM1POLY(Y1, Y4, Y5); \
	VCVTPS2DQ Y2, Y2; \
	VPADDD mfBias<>(SB), Y2, Y2; \
	VPSLLD $23, Y2, Y2; \
	VSUBPS Y13, Y2, Y5; \
	VFMADD231PS Y4, Y2, Y5; \
	VFMADD231PS Y4, Y2, Y2; \
	VADDPS Y2, Y2, Y2; \
	VADDPS mfTwo<>(SB), Y5, Y6; \
	VXORPS mfSign<>(SB), Y5, Y5; \
	VBLENDVPS Y9, Y2, Y5, Y5; \
	VDIVPS Y6, Y5, Y5; \
	VSUBPS Y5, Y13, Y6; \
	VBLENDVPS Y9, Y6, Y5, Y5; \
	VANDPS Y15, Y5, Y5; \
	VANDPS mfSign<>(SB), Y0, Y0; \
	VORPS Y0, Y5, Y3

// x·Φ(x): x - |x|·c for x >= 0, -|x|·c for x < 0, c = erfc(|x|/√2)/2.
// Needs Y14 = 14.45, Y15 = abs mask.
#define GELUBODY \
	GELUCORE; \
	VMULPS Y1, Y2, Y2; \
	VSUBPS Y2, Y0, Y3; \
	VXORPS mfSign<>(SB), Y2, Y2; \
	VBLENDVPS Y0, Y2, Y3, Y3

// gy·(Φ(x) + x·φ(x)): with w = c - |x|·φ(x), 1 - w for x >= 0 and w for
// x < 0. Needs Y13 = 1, Y14 = 14.45, Y15 = abs mask.
#define GELUGRADBODY \
	GELUCORE; \
	VMULPS mfInvSqrt2Pi<>(SB), Y7, Y7; \
	VMULPS Y1, Y7, Y7; \
	VSUBPS Y7, Y2, Y2; \
	VSUBPS Y2, Y13, Y3; \
	VBLENDVPS Y0, Y2, Y3, Y3; \
	VMULPS Y9, Y3, Y3

// FTZON sets MXCSR's FTZ and DAZ bits for the call, the caller's MXCSR
// saved at mxcsr-4(SP) (a frame of 8 bytes): the GELU kernels' erfc goes
// denormal in the tails (x < -12.95: the result's magnitude is then under
// 1e-36), each denormal a microcode assist of hundreds of cycles, and a
// trained network's pre-activations reach there by the thousands; such
// values are flushed to zero instead. FTZRET, as a loop macro's fin,
// restores the caller's MXCSR and returns. Clobbers AX.
#define FTZON \
	STMXCSR mxcsr-4(SP); \
	MOVL mxcsr-4(SP), AX; \
	ORL $0x8040, AX; \
	MOVL AX, ftz-8(SP); \
	LDMXCSR ftz-8(SP)

#define FTZRET \
	LDMXCSR mxcsr-4(SP); \
	RET

// UNARYLOOP runs body over the CX elements at SI, storing to DI, after
// the caller has loaded the arguments and the constant registers, and
// returns.
#define UNARYLOOP(body, fin) \
	MOVQ CX, BX; \
	SHRQ $3, BX; \
	ANDQ $7, CX; \
	TESTQ BX, BX; \
	JZ tail; \
loop: \
	VMOVUPS (SI), Y0; \
	body; \
	VMOVUPS Y3, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	DECQ BX; \
	JNZ loop; \
tail: \
	TESTQ CX, CX; \
	JZ done; \
	TAILMASK; \
	VMASKMOVPS (SI), Y12, Y0; \
	body; \
	VMASKMOVPS Y3, Y12, (DI); \
done: \
	VZEROUPPER; \
	fin

// BINARYLOOP is UNARYLOOP with a second input at DX, loaded into Y9.
#define BINARYLOOP(body, fin) \
	MOVQ CX, BX; \
	SHRQ $3, BX; \
	ANDQ $7, CX; \
	TESTQ BX, BX; \
	JZ tail; \
loop: \
	VMOVUPS (SI), Y0; \
	VMOVUPS (DX), Y9; \
	body; \
	VMOVUPS Y3, (DI); \
	ADDQ $32, SI; \
	ADDQ $32, DX; \
	ADDQ $32, DI; \
	DECQ BX; \
	JNZ loop; \
tail: \
	TESTQ CX, CX; \
	JZ done; \
	TAILMASK; \
	VMASKMOVPS (SI), Y12, Y0; \
	VMASKMOVPS (DX), Y12, Y9; \
	body; \
	VMASKMOVPS Y3, Y12, (DI); \
done: \
	VZEROUPPER; \
	fin

#define SETUPEXP \
	VMOVUPS mfExpLo<>(SB), Y14; \
	VMOVUPS mfExpHi<>(SB), Y15

#define SETUPSIGMOID \
	SETUPEXP; \
	VMOVUPS mfOne<>(SB), Y13

#define SETUPSILU \
	SETUPSIGMOID; \
	VMOVUPS mfXLo<>(SB), Y11; \
	VMOVUPS mfXHi<>(SB), Y10

#define SETUPTANH \
	VMOVUPS mfAbs<>(SB), Y15; \
	VMOVUPS mfTanhMax<>(SB), Y14; \
	VMOVUPS mfOne<>(SB), Y13

#define SETUPGELU \
	VMOVUPS mfAbs<>(SB), Y15; \
	VMOVUPS mfGeluMax<>(SB), Y14; \
	VMOVUPS mfOne<>(SB), Y13

// func expAVX2(d, a *float32, n int)
TEXT ·expAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	SETUPEXP
	UNARYLOOP(EXPBODY, RET)

// func sigmoidAVX2(d, a *float32, n int)
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	SETUPSIGMOID
	UNARYLOOP(SIGMOIDBODY, RET)

// func siluAVX2(d, a *float32, n int)
TEXT ·siluAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	SETUPSILU
	UNARYLOOP(SILUBODY, RET)

// func tanhAVX2(d, a *float32, n int)
TEXT ·tanhAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	SETUPTANH
	UNARYLOOP(TANHBODY, RET)

// func geluAVX2(d, a *float32, n int)
TEXT ·geluAVX2(SB), NOSPLIT, $8-24
	FTZON
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	SETUPGELU
	UNARYLOOP(GELUBODY, FTZRET)

// func geluGradAVX2(d, a, gy *float32, n int)
TEXT ·geluGradAVX2(SB), NOSPLIT, $8-32
	FTZON
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ gy+16(FP), DX
	MOVQ n+24(FP), CX
	SETUPGELU
	BINARYLOOP(GELUGRADBODY, FTZRET)

// func siluGradAVX2(d, a, gy *float32, n int)
TEXT ·siluGradAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ gy+16(FP), DX
	MOVQ n+24(FP), CX
	SETUPSILU
	BINARYLOOP(SILUGRADBODY, RET)

// EXPSUBBODY sets Y3 = exp(x - m) (m in Y11) and adds its lanes, as
// float64, to Y9 (lanes 0-3) and Y10 (lanes 4-7). In the tail, lanes
// outside the mask Y12 are zeroed first.
#define EXPSUBBODY \
	VSUBPS Y11, Y0, Y0; \
	EXPCLAMP(Y0); \
	EXPCORE(Y0, Y1, Y3, Y2)

#define EXPSUBSUM \
	VCVTPS2PD X3, Y4; \
	VEXTRACTF128 $1, Y3, X5; \
	VCVTPS2PD X5, Y5; \
	VADDPD Y4, Y9, Y9; \
	VADDPD Y5, Y10, Y10

// EXPSUMRET stores Y9+Y10 summed over lanes at ret.
#define EXPSUMRET(dst) \
	VADDPD Y10, Y9, Y9; \
	VEXTRACTF128 $1, Y9, X10; \
	VADDPD X10, X9, X9; \
	VHADDPD X9, X9, X9; \
	MOVSD X9, dst

// func expSubAVX2(d, x *float32, n int, m float32) float64
TEXT ·expSubAVX2(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS m+24(FP), Y11
	SETUPEXP
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	MOVQ CX, BX
	SHRQ $3, BX
	ANDQ $7, CX
	TESTQ BX, BX
	JZ tail

loop:
	VMOVUPS (SI), Y0
	EXPSUBBODY
	VMOVUPS Y3, (DI)
	EXPSUBSUM
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ BX
	JNZ loop

tail:
	TESTQ CX, CX
	JZ done
	TAILMASK
	VMASKMOVPS (SI), Y12, Y0
	EXPSUBBODY
	VANDPS Y12, Y3, Y3
	VMASKMOVPS Y3, Y12, (DI)
	EXPSUBSUM

done:
	EXPSUMRET(ret+32(FP))
	VZEROUPPER
	RET

// func sumExpSubAVX2(x *float32, n int, m float32) float64
TEXT ·sumExpSubAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Y11
	SETUPEXP
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	MOVQ CX, BX
	SHRQ $3, BX
	ANDQ $7, CX
	TESTQ BX, BX
	JZ tail

loop:
	VMOVUPS (SI), Y0
	EXPSUBBODY
	EXPSUBSUM
	ADDQ $32, SI
	DECQ BX
	JNZ loop

tail:
	TESTQ CX, CX
	JZ done
	TAILMASK
	VMASKMOVPS (SI), Y12, Y0
	EXPSUBBODY
	VANDPS Y12, Y3, Y3
	EXPSUBSUM

done:
	EXPSUMRET(ret+24(FP))
	VZEROUPPER
	RET

// The arithmetic kernels: d = a op b, 8 lanes at a time (BINARYLOOP),
// each lane rounded exactly as the scalar Go loops round it.
#define ADDBODY VADDPS Y9, Y0, Y3
#define SUBBODY VSUBPS Y9, Y0, Y3
#define MULBODY VMULPS Y9, Y0, Y3
// ADDSCALEDBODY sets Y3 = a + alpha*b (alpha in Y11), two roundings as in Go.
#define ADDSCALEDBODY \
	VMULPS Y9, Y11, Y3; \
	VADDPS Y3, Y0, Y3

// func addAVX2(d, a, b *float32, n int)
TEXT ·addAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	BINARYLOOP(ADDBODY, RET)

// func subAVX2(d, a, b *float32, n int)
TEXT ·subAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	BINARYLOOP(SUBBODY, RET)

// func mulAVX2(d, a, b *float32, n int)
TEXT ·mulAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	BINARYLOOP(MULBODY, RET)

// func addScaledAVX2(d, a, b *float32, n int, alpha float32)
TEXT ·addScaledAVX2(SB), NOSPLIT, $0-36
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS alpha+32(FP), Y11
	BINARYLOOP(ADDSCALEDBODY, RET)

DATA mfNegInf<>+0(SB)/4, $0xff800000
GLOBL mfNegInf<>(SB), RODATA|NOPTR, $4

// SCALEBODY sets Y3 = a*s (s in Y11), one rounding as in Go.
#define SCALEBODY VMULPS Y11, Y0, Y3

// func scaleAVX2(d, a *float32, n int, s float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-28
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y11
	UNARYLOOP(SCALEBODY, RET)

// func maskedMaxAVX2(row, keep *float32, n int) float32
//
// Sets row[j] = -Inf where keep[j] == 0 and returns the largest other
// element (NaNs skipped; -Inf when none): the first pass of a masked
// softmax row, as maskedSoftmaxRow's Go loop does it.
TEXT ·maskedMaxAVX2(SB), NOSPLIT, $0-28
	MOVQ row+0(FP), DI
	MOVQ keep+8(FP), DX
	MOVQ n+16(FP), CX
	VBROADCASTSS mfNegInf<>(SB), Y7
	VMOVAPS Y7, Y5
	VXORPS Y6, Y6, Y6
	MOVQ CX, BX
	SHRQ $3, BX
	ANDQ $7, CX
	TESTQ BX, BX
	JZ tail
loop:
	VMOVUPS (DI), Y0
	VMOVUPS (DX), Y1
	VCMPPS $0, Y6, Y1, Y2
	VBLENDVPS Y2, Y7, Y0, Y0
	VMOVUPS Y0, (DI)
	VMAXPS Y5, Y0, Y5
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ BX
	JNZ loop
tail:
	TESTQ CX, CX
	JZ reduce
	TAILMASK
	VMASKMOVPS (DI), Y12, Y0
	VMASKMOVPS (DX), Y12, Y1
	VCMPPS $0, Y6, Y1, Y2
	VBLENDVPS Y2, Y7, Y0, Y0
	VMASKMOVPS Y0, Y12, (DI)
	VBLENDVPS Y12, Y0, Y7, Y0
	VMAXPS Y5, Y0, Y5
reduce:
	VEXTRACTF128 $1, Y5, X1
	VMAXPS X5, X1, X5
	VPERMILPS $0x4E, X5, X1
	VMAXPS X5, X1, X5
	VPERMILPS $0xB1, X5, X1
	VMAXPS X5, X1, X5
	VMOVSS X5, ret+24(FP)
	VZEROUPPER
	RET

// ADDSCALARBODY sets Y3 = a + s (s in Y11).
#define ADDSCALARBODY VADDPS Y11, Y0, Y3

// func addScalarAVX2(d, a *float32, n int, s float32)
TEXT ·addScalarAVX2(SB), NOSPLIT, $0-28
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y11
	UNARYLOOP(ADDSCALARBODY, RET)

// AVX-512 forms of the GELU kernels: the AVX2 instruction sequence on 16
// lanes (constants broadcast from the same tables), so each lane gets the
// AVX2 kernel's bits; the sign select is a mask move on the sign bits of x
// and the tail is a masked load and store. Need AVX-512F and DQ.

#define EXPM1POLY512(rr, pp, tt) \
	VBROADCASTSS mfE5<>(SB), pp; \
	VFMADD213PS.BCST mfE4<>(SB), rr, pp; \
	VFMADD213PS.BCST mfE3<>(SB), rr, pp; \
	VFMADD213PS.BCST mfE2<>(SB), rr, pp; \
	VFMADD213PS.BCST mfE1<>(SB), rr, pp; \
	VFMADD213PS.BCST mfE0<>(SB), rr, pp; \
	VMULPS rr, rr, tt; \
	VFMADD213PS rr, tt, pp

#define EXPSCALE512(nn, pp, tt) \
	VCVTPS2DQ nn, nn; \
	VPSRAD $1, nn, tt; \
	VPSUBD tt, nn, nn; \
	VPADDD.BCST mfBias<>(SB), tt, tt; \
	VPADDD.BCST mfBias<>(SB), nn, nn; \
	VPSLLD $23, tt, tt; \
	VPSLLD $23, nn, nn; \
	VMULPS tt, pp, pp; \
	VMULPS nn, pp, pp

// GELUCORE512 is GELUCORE on Z registers: x in Z0; sets Z1, Z2, Z7. Needs
// Z13 = 1, Z14 = 14.45, Z15 = abs mask. Clobbers Z3-Z8.
#define GELUCORE512 \
	VPANDD Z15, Z0, Z1; \
	VMINPS Z1, Z14, Z1; \
	VBROADCASTSS mfN4<>(SB), Z2; \
	VBROADCASTSS mfD5<>(SB), Z3; \
	VFMADD213PS.BCST mfN3<>(SB), Z1, Z2; \
	VFMADD213PS.BCST mfD4<>(SB), Z1, Z3; \
	VFMADD213PS.BCST mfN2<>(SB), Z1, Z2; \
	VFMADD213PS.BCST mfD3<>(SB), Z1, Z3; \
	VFMADD213PS.BCST mfN1<>(SB), Z1, Z2; \
	VFMADD213PS.BCST mfD2<>(SB), Z1, Z3; \
	VFMADD213PS.BCST mfN0<>(SB), Z1, Z2; \
	VFMADD213PS.BCST mfD1<>(SB), Z1, Z3; \
	VFMADD213PS Z13, Z1, Z3; \
	VDIVPS Z3, Z2, Z2; \
	VMULPS.BCST mfHalf<>(SB), Z1, Z4; \
	VMULPS Z1, Z4, Z5; \
	VFMSUB213PS Z5, Z1, Z4; \
	VMULPS.BCST mfNegLog2e<>(SB), Z5, Z6; \
	VRNDSCALEPS $0, Z6, Z6; \
	VFNMSUB231PS.BCST mfLn2Hi<>(SB), Z6, Z5; \
	VFNMADD231PS.BCST mfLn2Lo<>(SB), Z6, Z5; \
	VSUBPS Z4, Z5, Z5; \
	EXPM1POLY512(Z5, Z7, Z8); \
	VADDPS Z13, Z7, Z7; \
	EXPSCALE512(Z6, Z7, Z8); \
	VMULPS Z7, Z2, Z2

// x·Φ(x), result in Z3 (GELUBODY).
#define GELUBODY512 \
	GELUCORE512; \
	VMULPS Z1, Z2, Z2; \
	VSUBPS Z2, Z0, Z3; \
	VPXORD.BCST mfSign<>(SB), Z2, Z2; \
	VPMOVD2M Z0, K1; \
	VMOVAPS Z2, K1, Z3

// gy·(Φ(x) + x·φ(x)) with gy in Z9, result in Z3 (GELUGRADBODY).
#define GELUGRADBODY512 \
	GELUCORE512; \
	VMULPS.BCST mfInvSqrt2Pi<>(SB), Z7, Z7; \
	VMULPS Z1, Z7, Z7; \
	VSUBPS Z7, Z2, Z2; \
	VSUBPS Z2, Z13, Z3; \
	VPMOVD2M Z0, K1; \
	VMOVAPS Z2, K1, Z3; \
	VMULPS Z9, Z3, Z3

#define SETUPGELU512 \
	VBROADCASTSS mfAbs<>(SB), Z15; \
	VBROADCASTSS mfGeluMax<>(SB), Z14; \
	VBROADCASTSS mfOne<>(SB), Z13

// TAILMASK512 sets K2 to the low CX (1-15) lanes.
#define TAILMASK512 \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K2

// UNARYLOOP512 is UNARYLOOP on 16 lanes: body over the CX elements at SI,
// storing Z3 to DI, the tail through the mask K2; then returns.
#define UNARYLOOP512(body, fin) \
	MOVQ CX, BX; \
	SHRQ $4, BX; \
	ANDQ $15, CX; \
	TESTQ BX, BX; \
	JZ tail; \
loop: \
	VMOVUPS (SI), Z0; \
	body; \
	VMOVUPS Z3, (DI); \
	ADDQ $64, SI; \
	ADDQ $64, DI; \
	DECQ BX; \
	JNZ loop; \
tail: \
	TESTQ CX, CX; \
	JZ done; \
	TAILMASK512; \
	VMOVUPS.Z (SI), K2, Z0; \
	body; \
	VMOVUPS Z3, K2, (DI); \
done: \
	VZEROUPPER; \
	fin

// BINARYLOOP512 is UNARYLOOP512 with a second input at DX, loaded into Z9.
#define BINARYLOOP512(body, fin) \
	MOVQ CX, BX; \
	SHRQ $4, BX; \
	ANDQ $15, CX; \
	TESTQ BX, BX; \
	JZ tail; \
loop: \
	VMOVUPS (SI), Z0; \
	VMOVUPS (DX), Z9; \
	body; \
	VMOVUPS Z3, (DI); \
	ADDQ $64, SI; \
	ADDQ $64, DX; \
	ADDQ $64, DI; \
	DECQ BX; \
	JNZ loop; \
tail: \
	TESTQ CX, CX; \
	JZ done; \
	TAILMASK512; \
	VMOVUPS.Z (SI), K2, Z0; \
	VMOVUPS.Z (DX), K2, Z9; \
	body; \
	VMOVUPS Z3, K2, (DI); \
done: \
	VZEROUPPER; \
	fin

// func geluAVX512(d, a *float32, n int)
TEXT ·geluAVX512(SB), NOSPLIT, $8-24
	FTZON
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	SETUPGELU512
	UNARYLOOP512(GELUBODY512, FTZRET)

// func geluGradAVX512(d, a, gy *float32, n int)
TEXT ·geluGradAVX512(SB), NOSPLIT, $8-32
	FTZON
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ gy+16(FP), DX
	MOVQ n+24(FP), CX
	SETUPGELU512
	BINARYLOOP512(GELUGRADBODY512, FTZRET)

// EXPCORE512 is EXPCORE on Z registers (Z13 = 1).
#define EXPCORE512(xx, nn, pp, tt) \
	VMULPS.BCST mfLog2e<>(SB), xx, nn; \
	VRNDSCALEPS $0, nn, nn; \
	VFNMADD231PS.BCST mfLn2Hi<>(SB), nn, xx; \
	VFNMADD231PS.BCST mfLn2Lo<>(SB), nn, xx; \
	EXPM1POLY512(xx, pp, tt); \
	VADDPS Z13, pp, pp; \
	EXPSCALE512(nn, pp, tt)

// SOFTMAXMAXBODY512 sets the lanes of Z0 (row) whose keep (Z1) is 0 to
// -Inf (Z7) and folds Z0 into the running maximum Z5 (maskedMaxAVX2's
// operations). Z6 = 0.
#define SOFTMAXMAXBODY512 \
	VCMPPS $0, Z6, Z1, K1; \
	VMOVAPS Z7, K1, Z0; \
	VMAXPS Z5, Z0, Z5

// SOFTMAXEXPBODY512 sets Z3 = exp(Z0 - m) (m in Z11; expSubAVX2's
// operations) and adds its lanes, as float64, to Z9: the low eight first,
// then the high eight, which is the order of expSubAVX2's two four-lane
// accumulators (Z9 lanes 0-3 and 4-7) over its eight-lane blocks.
#define SOFTMAXEXPBODY512 \
	VSUBPS Z11, Z0, Z0; \
	VMAXPS Z0, Z14, Z0; \
	VMINPS Z0, Z15, Z0; \
	EXPCORE512(Z0, Z1, Z3, Z2)

#define SOFTMAXEXPSUM512 \
	VCVTPS2PD Y3, Z4; \
	VADDPD Z4, Z9, Z9; \
	VEXTRACTF32X8 $1, Z3, Y4; \
	VCVTPS2PD Y4, Z4; \
	VADDPD Z4, Z9, Z9

// SOFTMAXTAILMASK sets K2 to the lanes of a row's last block of 16 (n in
// CX, n >= 1): the low ((n-1)%16)+1 bits, all 16 when n%16 == 0. It
// clobbers AX, CX and R8.
#define SOFTMAXTAILMASK \
	LEAQ -1(CX), R8; \
	ANDQ $15, R8; \
	LEAQ 1(R8), CX; \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K2

// func softmaxRowAVX512(row, keep *float32, n int) (m float32, sum float64)
//
// The whole of maskedSoftmaxRow for a float32 row with a key mask, in one
// call and with its bits: keep == 0 sets an entry to -Inf; m is the
// maximum; a row with no finite maximum (m = -Inf) is zeroed with sum 0;
// otherwise row[j] = exp(row[j]-m)·float32(1/sum) with sum = Σ exp(row[j]-m)
// in float64. n >= 1.
TEXT ·softmaxRowAVX512(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), DI
	MOVQ keep+8(FP), DX
	MOVQ n+16(FP), CX
	VBROADCASTSS mfNegInf<>(SB), Z7
	VMOVAPS Z7, Z5
	VPXORD Z6, Z6, Z6
	SOFTMAXTAILMASK
	MOVQ n+16(FP), CX
	// BX: the blocks of 16 before the last block (partial or full).
	MOVQ CX, BX
	DECQ BX
	SHRQ $4, BX

	// Pass 1: mask and maximum.
	MOVQ DI, SI
	MOVQ DX, R9
	MOVQ BX, R10
	TESTQ R10, R10
	JZ maxlast
maxloop:
	VMOVUPS (SI), Z0
	VMOVUPS (R9), Z1
	SOFTMAXMAXBODY512
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	ADDQ $64, R9
	DECQ R10
	JNZ maxloop
maxlast:
	VMOVUPS.Z (SI), K2, Z0
	VMOVUPS.Z (R9), K2, Z1
	VCMPPS $0, Z6, Z1, K1
	VMOVAPS Z7, K1, Z0
	VMOVUPS Z0, K2, (SI)
	VMAXPS Z5, Z0, Z5 // the lanes past n hold -Inf: their keep read as 0
	// Reduce the maximum over the lanes.
	VEXTRACTF32X8 $1, Z5, Y1
	VMAXPS Y5, Y1, Y5
	VEXTRACTF128 $1, Y5, X1
	VMAXPS X5, X1, X5
	VPERMILPS $0x4E, X5, X1
	VMAXPS X5, X1, X5
	VPERMILPS $0xB1, X5, X1
	VMAXPS X5, X1, X5
	VMOVSS X5, m+24(FP)
	VUCOMISS X7, X5
	JNE finite
	JP finite
	// m = -Inf: the row is zero, the sum 0.
	MOVQ $0, sum+32(FP)
	MOVQ DI, SI
	MOVQ BX, R10
	TESTQ R10, R10
	JZ zerolast
zeroloop:
	VMOVUPS Z6, (SI)
	ADDQ $64, SI
	DECQ R10
	JNZ zeroloop
zerolast:
	VMOVUPS Z6, K2, (SI)
	VZEROUPPER
	RET

finite:
	// Pass 2: exponentials and their float64 sum.
	VBROADCASTSS X5, Z11
	VBROADCASTSS mfExpLo<>(SB), Z14
	VBROADCASTSS mfExpHi<>(SB), Z15
	VBROADCASTSS mfOne<>(SB), Z13
	VXORPD Z9, Z9, Z9
	MOVQ DI, SI
	MOVQ BX, R10
	TESTQ R10, R10
	JZ explast
exploop:
	VMOVUPS (SI), Z0
	SOFTMAXEXPBODY512
	VMOVUPS Z3, (SI)
	SOFTMAXEXPSUM512
	ADDQ $64, SI
	DECQ R10
	JNZ exploop
explast:
	VMOVUPS.Z (SI), K2, Z0
	SOFTMAXEXPBODY512
	VMOVAPS.Z Z3, K2, Z3
	VMOVUPS Z3, K2, (SI)
	SOFTMAXEXPSUM512
	// sum: lanes 0-3 plus lanes 4-7, then EXPSUMRET's reduction.
	VEXTRACTF64X4 $1, Z9, Y10
	VADDPD Y10, Y9, Y9
	VEXTRACTF128 $1, Y9, X10
	VADDPD X10, X9, X9
	VHADDPD X9, X9, X9
	MOVSD X9, sum+32(FP)

	// Pass 3: row *= float32(1/sum).
	MOVSD $1.0, X10
	VDIVSD X9, X10, X10
	VCVTSD2SS X10, X10, X10
	VBROADCASTSS X10, Z10
	MOVQ DI, SI
	MOVQ BX, R10
	TESTQ R10, R10
	JZ scalelast
scaleloop:
	VMULPS (SI), Z10, Z0
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	DECQ R10
	JNZ scaleloop
scalelast:
	VMOVUPS.Z (SI), K2, Z0
	VMULPS Z10, Z0, Z0
	VMOVUPS Z0, K2, (SI)
	VZEROUPPER
	RET

// func gateResidualAVX2(o, x, gate, h *float32, n int)
// o = x + gate·h with two roundings (the product, then the sum), as the Go
// loop; o may be h.
TEXT ·gateResidualAVX2(SB), NOSPLIT, $0-40
	MOVQ o+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gate+16(FP), DX
	MOVQ h+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ CX, BX
	SHRQ $3, BX
	ANDQ $7, CX
	TESTQ BX, BX
	JZ tail
loop:
	VMOVUPS (DX), Y0
	VMULPS (R9), Y0, Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, R9
	ADDQ $32, DI
	DECQ BX
	JNZ loop
tail:
	TESTQ CX, CX
	JZ done
	TAILMASK
	VMASKMOVPS (DX), Y12, Y0
	VMASKMOVPS (R9), Y12, Y1
	VMASKMOVPS (SI), Y12, Y2
	VMULPS Y1, Y0, Y0
	VADDPS Y2, Y0, Y0
	VMASKMOVPS Y0, Y12, (DI)
done:
	VZEROUPPER
	RET

// SOFTMAX4EXP sets the row block at addr to exp(block - m) (m in mm;
// SOFTMAXEXPBODY512's operations) and adds its lanes to the row's float64
// sum ss (SOFTMAXEXPSUM512's order). K1 = 0xffff for a full block.
#define SOFTMAX4EXP(addr, mm, ss) \
	VMOVUPS.Z addr, K1, Z0; \
	VSUBPS mm, Z0, Z0; \
	VMAXPS Z0, Z14, Z0; \
	VMINPS Z0, Z15, Z0; \
	EXPCORE512(Z0, Z1, Z3, Z2); \
	VMOVAPS.Z Z3, K1, Z3; \
	VMOVUPS Z3, K1, addr; \
	VCVTPS2PD Y3, Z4; \
	VADDPD Z4, ss, ss; \
	VEXTRACTF32X8 $1, Z3, Y4; \
	VCVTPS2PD Y4, Z4; \
	VADDPD Z4, ss, ss

// SOFTMAX4MAX masks the row block at addr where keep (K3) is 0 with -Inf
// and folds it into the row's maximum mm (SOFTMAXMAXBODY512's operations).
// K1 selects the block's lanes.
#define SOFTMAX4MAX(addr, mm) \
	VMOVUPS.Z addr, K1, Z0; \
	VMOVAPS Z7, K3, Z0; \
	VMOVUPS Z0, K1, addr; \
	VMAXPS mm, Z0, mm

// SOFTMAX4REDUCEMAX sets X5 to the maximum over the lanes of zz as
// softmaxRowAVX512 reduces it, and stores it at out.
#define SOFTMAX4REDUCEMAX(zz, out) \
	VMOVAPS zz, Z5; \
	VEXTRACTF32X8 $1, Z5, Y1; \
	VMAXPS Y5, Y1, Y5; \
	VEXTRACTF128 $1, Y5, X1; \
	VMAXPS X5, X1, X5; \
	VPERMILPS $0x4E, X5, X1; \
	VMAXPS X5, X1, X5; \
	VPERMILPS $0xB1, X5, X1; \
	VMAXPS X5, X1, X5; \
	VMOVSS X5, out; \
	VBROADCASTSS X5, zz

// SOFTMAX4REDUCESUM reduces the float64 lanes of zz as softmaxRowAVX512
// does, stores the sum at out and sets zz to float32(1/sum) in every lane.
#define SOFTMAX4REDUCESUM(zz, out) \
	VMOVAPD zz, Z9; \
	VEXTRACTF64X4 $1, Z9, Y10; \
	VADDPD Y10, Y9, Y9; \
	VEXTRACTF128 $1, Y9, X10; \
	VADDPD X10, X9, X9; \
	VHADDPD X9, X9, X9; \
	MOVSD X9, out; \
	MOVSD $1.0, X10; \
	VDIVSD X9, X10, X10; \
	VCVTSD2SS X10, X10, X10; \
	VBROADCASTSS X10, zz

// SOFTMAX4SCALE multiplies the row block at addr by ss (K1: its lanes).
#define SOFTMAX4SCALE(addr, ss) \
	VMOVUPS.Z addr, K1, Z0; \
	VMULPS ss, Z0, Z0; \
	VMOVUPS Z0, K1, addr

// func softmaxRows4AVX512(row *float32, ld int, keep *float32, n int, m *[4]float32, sum *[4]float64) (ok bool)
//
// softmaxRowAVX512 on four rows at once (row + r*ld, r < 4, one key mask),
// their operations interleaved so that one row's latencies hide behind the
// others'; each row gets softmaxRowAVX512's bits, m[r] and sum[r]. If a
// row's maximum is -Inf it returns false after only the masking pass (the
// caller then runs softmaxRowAVX512 on the rows, which masks again, with no
// change). n >= 1.
TEXT ·softmaxRows4AVX512(SB), NOSPLIT, $0-49
	MOVQ row+0(FP), DI
	MOVQ ld+8(FP), BX
	SHLQ $2, BX
	LEAQ (BX)(BX*2), R11 // 3*ld bytes
	MOVQ keep+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ m+32(FP), R12
	MOVQ sum+40(FP), R13
	VBROADCASTSS mfNegInf<>(SB), Z7
	VPXORD Z6, Z6, Z6
	SOFTMAXTAILMASK
	MOVL $0xffff, AX
	KMOVW AX, K4 // a full block
	MOVQ n+24(FP), CX
	// R10 and R14: the blocks of 16 before the last block (partial or full).
	MOVQ CX, R10
	DECQ R10
	SHRQ $4, R10
	MOVQ R10, R14

	// Pass 1: mask and maxima (Z16-Z19).
	VMOVAPS Z7, Z16
	VMOVAPS Z7, Z17
	VMOVAPS Z7, Z18
	VMOVAPS Z7, Z19
	MOVQ DI, SI
	MOVQ DX, R9
	KMOVW K4, K1
	TESTQ R10, R10
	JZ s4maxlast
s4maxloop:
	VMOVUPS (R9), Z1
	VCMPPS $0, Z6, Z1, K3
	SOFTMAX4MAX((SI), Z16)
	SOFTMAX4MAX((SI)(BX*1), Z17)
	SOFTMAX4MAX((SI)(BX*2), Z18)
	SOFTMAX4MAX((SI)(R11*1), Z19)
	ADDQ $64, SI
	ADDQ $64, R9
	DECQ R10
	JNZ s4maxloop
s4maxlast:
	KMOVW K2, K1
	VMOVUPS.Z (R9), K2, Z1
	VCMPPS $0, Z6, Z1, K3
	SOFTMAX4MAX((SI), Z16)
	SOFTMAX4MAX((SI)(BX*1), Z17)
	SOFTMAX4MAX((SI)(BX*2), Z18)
	SOFTMAX4MAX((SI)(R11*1), Z19)
	SOFTMAX4REDUCEMAX(Z16, 0(R12))
	VUCOMISS X7, X5
	JNE s4fin0
	JP s4fin0
	JMP s4inf
s4fin0:
	SOFTMAX4REDUCEMAX(Z17, 4(R12))
	VUCOMISS X7, X5
	JNE s4fin1
	JP s4fin1
	JMP s4inf
s4fin1:
	SOFTMAX4REDUCEMAX(Z18, 8(R12))
	VUCOMISS X7, X5
	JNE s4fin2
	JP s4fin2
	JMP s4inf
s4fin2:
	SOFTMAX4REDUCEMAX(Z19, 12(R12))
	VUCOMISS X7, X5
	JNE s4fin3
	JP s4fin3
	JMP s4inf

s4fin3:
	// Pass 2: exponentials and their float64 sums (Z20-Z23).
	VBROADCASTSS mfExpLo<>(SB), Z14
	VBROADCASTSS mfExpHi<>(SB), Z15
	VBROADCASTSS mfOne<>(SB), Z13
	VXORPD Z20, Z20, Z20
	VXORPD Z21, Z21, Z21
	VXORPD Z22, Z22, Z22
	VXORPD Z23, Z23, Z23
	MOVQ DI, SI
	MOVQ R14, R10
	KMOVW K4, K1
	TESTQ R10, R10
	JZ s4explast
s4exploop:
	SOFTMAX4EXP((SI), Z16, Z20)
	SOFTMAX4EXP((SI)(BX*1), Z17, Z21)
	SOFTMAX4EXP((SI)(BX*2), Z18, Z22)
	SOFTMAX4EXP((SI)(R11*1), Z19, Z23)
	ADDQ $64, SI
	DECQ R10
	JNZ s4exploop
s4explast:
	KMOVW K2, K1
	SOFTMAX4EXP((SI), Z16, Z20)
	SOFTMAX4EXP((SI)(BX*1), Z17, Z21)
	SOFTMAX4EXP((SI)(BX*2), Z18, Z22)
	SOFTMAX4EXP((SI)(R11*1), Z19, Z23)
	SOFTMAX4REDUCESUM(Z20, 0(R13))
	SOFTMAX4REDUCESUM(Z21, 8(R13))
	SOFTMAX4REDUCESUM(Z22, 16(R13))
	SOFTMAX4REDUCESUM(Z23, 24(R13))

	// Pass 3: each row times float32(1/sum).
	MOVQ DI, SI
	MOVQ R14, R10
	KMOVW K4, K1
	TESTQ R10, R10
	JZ s4scalelast
s4scaleloop:
	SOFTMAX4SCALE((SI), Z20)
	SOFTMAX4SCALE((SI)(BX*1), Z21)
	SOFTMAX4SCALE((SI)(BX*2), Z22)
	SOFTMAX4SCALE((SI)(R11*1), Z23)
	ADDQ $64, SI
	DECQ R10
	JNZ s4scaleloop
s4scalelast:
	KMOVW K2, K1
	SOFTMAX4SCALE((SI), Z20)
	SOFTMAX4SCALE((SI)(BX*1), Z21)
	SOFTMAX4SCALE((SI)(BX*2), Z22)
	SOFTMAX4SCALE((SI)(R11*1), Z23)
	MOVB $1, ok+48(FP)
	VZEROUPPER
	RET

s4inf:
	MOVB $0, ok+48(FP)
	VZEROUPPER
	RET

// RELUBODY sets Y3 = max(x, 0) as the Go loop does: x where x > 0, else
// +0 (for -0 and NaN too: MAXPS returns its second source, the zero in
// Y11, unless the first is greater).
#define RELUBODY VMAXPS Y11, Y0, Y3

// func reluAVX2(d, a *float32, n int)
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y11, Y11, Y11
	UNARYLOOP(RELUBODY, RET)

// RELUGRADBODY sets Y3 = gy where x > 0, else 0 (x in Y0, gy in Y9;
// ordered compare: NaN gives 0, as the Go loop).
#define RELUGRADBODY \
	VCMPPS $0x1e, Y11, Y0, Y3; \
	VANDPS Y9, Y3, Y3

// func reluGradAVX2(d, x, gy *float32, n int)
TEXT ·reluGradAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gy+16(FP), DX
	MOVQ n+24(FP), CX
	VXORPS Y11, Y11, Y11
	BINARYLOOP(RELUGRADBODY, RET)
