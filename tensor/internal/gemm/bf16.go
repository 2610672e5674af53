package gemm

import (
	"errors"
	"os"
	"sync/atomic"
)

// The bf16 path of Sgemm (see the package documentation): off by default,
// switched on by SetBF16 or by LGFLOW_GEMM_BF16=1 at start-up.

// ErrNoBF16 is returned by SetBF16(true) where the bf16 kernel cannot run:
// a CPU (or OS) without AVX-512F, AVX-512BW and AVX512_BF16, a build
// other than amd64, or one with the noasm tag.
var ErrNoBF16 = errors.New("gemm: bf16 matrix products need AVX512_BF16 (with AVX-512F and AVX-512BW) on amd64; this CPU or build lacks it")

// hasBF16 reports whether the bf16 kernel can run here; the tests clear it
// to simulate a CPU without AVX512_BF16.
var hasBF16 = cpuHasBF16 && sBF16 != nil

// bf16On is the switch: Sgemm uses the bf16 kernel for large products.
var bf16On atomic.Bool

// bf16MinWork is the number of multiply-adds (m*n*k) from which Sgemm uses
// the bf16 kernel when the switch is on; smaller products keep the
// float32 path (its tiny-product and direct forms), where packing and
// converting both operands costs about what the faster kernel saves: on
// one Zen 5 thread, 64^3 takes the same time either way, 64x64x128 is 5%
// faster in bf16, 96^3 1.5x, 256^3 1.9x (rough: a shared machine).
const bf16MinWork = 64 * 64 * 128

// bf16MinDim is the least m, n and k of a product on the bf16 path: a
// matrix-vector-like product (a few rows or columns) would compute mostly
// padding in the 12x32 tile, and a depth of one or two gains nothing from
// pairs.
const bf16MinDim = 8

func init() {
	if os.Getenv("LGFLOW_GEMM_BF16") == "1" {
		_ = SetBF16(true) // where the CPU lacks it, the float32 path stays
	}
}

// BF16Available reports whether this CPU and build can run the bf16
// kernel (see SetBF16).
func BF16Available() bool { return hasBF16 }

// SetBF16 switches the bf16 path of Sgemm and SgemmBias on or off for the
// whole process. With it on, products of at least bf16MinWork multiply-adds
// (and bf16MinDim in every dimension) round op(A) and op(B) to bf16 (to
// nearest even) and accumulate their products in float32 with VDPBF16PS;
// C, alpha, beta and the bias stay float32. Smaller products, Dgemm and
// DgemmBias are unaffected. Turning it on returns ErrNoBF16, and leaves it
// off, where BF16Available is false; turning it off always succeeds. It is
// safe to call concurrently with products, each of which uses the setting
// it finds when it starts.
func SetBF16(on bool) error {
	if on && !hasBF16 {
		bf16On.Store(false)
		return ErrNoBF16
	}
	bf16On.Store(on)
	return nil
}

// BF16 reports whether the bf16 path is on.
func BF16() bool { return bf16On.Load() }

// sgemmKern returns the kernel of a float32 product: the bf16 one when the
// switch is on and the product is large enough, else sKern.
func sgemmKern(m, n, k int) *kernel[float32] {
	if bf16On.Load() && min(m, n, k) >= bf16MinDim && work(m, n, k) >= bf16MinWork {
		return sBF16
	}
	return sKern
}

// packAPairs is packA for a kernel with pairs: the panels of a transposed
// A (A stored k x m, so the mr values of each step of k lie together, as
// op(B)'s do) are made straight from A (kn.pairsFrom), the others packed
// as float32 and converted in place (kn.pairs).
func (j *job[T]) packAPairs(dst []T, ic, mcur, pc, kcur int) {
	kn := j.kn
	mr := kn.mr
	full := 0
	if j.transA && kn.pairsFrom != nil {
		full = mcur / mr
		for r := range full {
			kn.pairsFrom(dst[r*mr*kcur:], j.a[pc*j.lda+ic+r*mr:], j.lda, mr, kcur)
		}
		if full*mr == mcur {
			return
		}
	}
	d := dst[full*mr*kcur:]
	j.packAValues(d, ic+full*mr, mcur-full*mr, pc, kcur)
	kn.pairs(d, mr, kcur, ceilDiv(mcur-full*mr, mr))
}

// packBPairs is packB for a kernel with pairs: the full panels of a
// row-major op(B) are made straight from B (kn.pairsFrom), the others
// packed as float32 and converted in place (kn.pairs).
func (j *job[T]) packBPairs(dst []T, jc, ncur, pc, kcur, q0, q1 int) {
	kn := j.kn
	nr := kn.nr
	for q := q0; q < q1; q++ {
		col := jc + q*nr
		d := dst[q*nr*kcur:]
		if !j.transB && kn.pairsFrom != nil && jc+ncur-col >= nr {
			kn.pairsFrom(d, j.b[pc*j.ldb+col:], j.ldb, nr, kcur)
			continue
		}
		j.packBValues(dst, jc, ncur, pc, kcur, q, q+1)
		kn.pairs(d, nr, kcur, 1)
	}
}
