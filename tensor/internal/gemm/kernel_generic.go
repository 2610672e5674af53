//go:build !amd64 || noasm

package gemm

// Without assembly only the portable Go kernels exist.

func sgemmKernels() []*kernel[float32] { return []*kernel[float32]{sGo} }

func dgemmKernels() []*kernel[float64] { return []*kernel[float64]{dGo} }

func sgemmKernelFor(name string) *kernel[float32] {
	if name == sGo.name {
		return sGo
	}
	return nil
}

// asmBuilt reports whether the assembly kernels are compiled in.
const asmBuilt = false

// packRows packs nothing without assembly (see pack_amd64.go).
func packRows[T scalar](d []T, stride int, s []T, lda, rows, kc int) int { return 0 }
