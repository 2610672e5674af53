//go:build !amd64 || noasm

package gemm

// sAVX512f32 returns the float32 kernel in use: there is no AVX-512 one.
func sAVX512f32() *kernel[float32] { return sKern }
