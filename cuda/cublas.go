package cuda

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// cublas holds the functions of libcublas (the v2 API) that the backend uses.
type cublas struct {
	file string

	create, setStream, setMathMode, getVersion                     uintptr
	sgemm, sgemmStridedBatched, dgemm, dgemmStridedBatched, status uintptr

	statusStr func(int32) string // cublasGetStatusString (nil before CUDA 11.4)
}

func (c *cublas) table() []sym {
	return []sym{
		{"cublasCreate_v2", &c.create, false},
		{"cublasSetStream_v2", &c.setStream, false},
		{"cublasSetMathMode", &c.setMathMode, false},
		{"cublasGetVersion_v2", &c.getVersion, false},
		{"cublasSgemm_v2", &c.sgemm, false},
		{"cublasSgemmStridedBatched", &c.sgemmStridedBatched, false},
		{"cublasDgemm_v2", &c.dgemm, false},
		{"cublasDgemmStridedBatched", &c.dgemmStridedBatched, false},
		{"cublasGetStatusString", &c.status, true},
	}
}

// cuBLAS constants (cublas_api.h).
const (
	cublasOpN            = 0
	cublasOpT            = 1
	cublasDefaultMath    = 0
	cublasTF32TensorMath = 3
)

// loadCublas opens the first loadable cuBLAS library of names.
func loadCublas(names []string) (*cublas, error) {
	h, file, err := openLib("cuBLAS", names)
	if err != nil {
		return nil, err
	}
	c := &cublas{file: file}
	if err := bind(h, file, c.table()); err != nil {
		return nil, err
	}
	if c.status != 0 {
		purego.RegisterFunc(&c.statusStr, c.status)
	}
	return c, nil
}

var cublasStatusNames = map[int]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (c *cublas) check(op string, code int) error {
	if code == 0 {
		return nil
	}
	msg := cublasStatusNames[code]
	if c.statusStr != nil {
		msg = c.statusStr(int32(code))
	}
	if msg == "" {
		msg = fmt.Sprintf("cublasStatus_t %d", code)
	}
	return &Error{Op: op, Code: code, Msg: msg}
}
