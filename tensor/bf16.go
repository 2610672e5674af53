package tensor

import "lgflow/tensor/internal/gemm"

// ErrBF16Unsupported is returned by SetBF16MatMul(true) on a CPU (or build)
// without the bf16 matrix kernel: it needs AVX512_BF16 with AVX-512F and
// AVX-512BW (AMD Zen 4 and later, Intel Cooper Lake and Sapphire Rapids
// and later) on amd64, in a build without the noasm tag.
var ErrBF16Unsupported = gemm.ErrNoBF16

// SetBF16MatMul switches bf16 matrix products on or off for the whole
// process (off by default; LGFLOW_GEMM_BF16=1 in the environment at start-up
// switches them on where the CPU supports them). With it on, the float32
// products of the CPU backend (MatMul, Gemm, GemmBias and the fused ops
// built on them) of at least 64·64·128 multiply-adds, and at least 8 in every
// dimension, round both operands to bfloat16 (to nearest even) and
// accumulate in float32 with the CPU's VDPBF16PS: about twice the float32
// speed, with relative errors of about 2^-8 per operand instead of 2^-24
// (the results differ from the float32 path's). C, alpha, beta and bias
// stay float32; smaller products, float64 and other backends are
// unaffected. Turning it on where BF16MatMulAvailable is false returns
// ErrBF16Unsupported and leaves it off; turning it off always succeeds.
// Products already running keep the setting they started with.
func SetBF16MatMul(on bool) error { return gemm.SetBF16(on) }

// BF16MatMul reports whether bf16 matrix products are on (see
// SetBF16MatMul).
func BF16MatMul() bool { return gemm.BF16() }

// BF16MatMulAvailable reports whether this CPU and build can run bf16
// matrix products (see SetBF16MatMul).
func BF16MatMulAvailable() bool { return gemm.BF16Available() }
