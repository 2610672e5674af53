package cuda

import (
	"embed"
	"fmt"
	"strings"
)

// The kernels are CUDA C++ function templates in kernels/, embedded in the
// binary and compiled once per process by NVRTC for the device's
// architecture.
//
//go:embed kernels/common.cuh kernels/elementwise.cu kernels/reduce.cu kernels/index.cu kernels/fused.cu kernels/gine.cu
//go:embed kernels/dit.cu kernels/attention.cu kernels/deepset.cu
var kernelFS embed.FS

// sourceFiles is the order in which the kernel files form one program.
var sourceFiles = []string{
	"kernels/common.cuh", "kernels/elementwise.cu", "kernels/reduce.cu", "kernels/index.cu", "kernels/fused.cu",
	"kernels/gine.cu",
	"kernels/dit.cu", "kernels/attention.cu", "kernels/deepset.cu",
}

// kernelSource returns the program text: the files of sourceFiles, each
// preceded by a #line directive so that compiler messages name the file.
func kernelSource() (string, error) {
	var b strings.Builder
	for _, f := range sourceFiles {
		data, err := kernelFS.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("cuda: embedded kernel source %s: %w", f, err)
		}
		fmt.Fprintf(&b, "#line 1 %q\n", f)
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// kid identifies a kernel template.
type kid int

const (
	kFill kid = iota
	kCopy
	kUnary
	kBinary
	kWhere
	kAdamW
	kReduceRows
	kReduceGen
	kReduceFin
	kReduceAll
	kArgmax
	kSoftmaxRows
	kSoftmaxStrided
	kIndexSelect
	kScatterAtomic
	kCSRSum
	kScaleRows
	kLayerNorm
	kLayerNormBwd
	kLayerNormParams
	kAddParamGrads
	kCEFwd
	kCEBwd
	kAttnSoftmax
	kAttnDSoftmax
	kNonFinite
	kGINEFwd
	kGINEBwdSrc
	kGINEDeTiles
	kGINEDeSum
	kLNMod
	kLNModBwd
	kLNModSets
	kGateRes
	kGateResBwd
	kBiasGELU
	kBiasGELUBwd
	kColPartials
	kFlashFwd
	kFlashBwd
	kDeepSetFwd
	kDeepSetBwdDS
	kDeepSetBwdCols
	kDeepSetParams
	numKernels
)

// kernelNames are the template names in the .cu files, indexed by kid.
var kernelNames = [numKernels]string{
	kFill: "fill", kCopy: "copy_k", kUnary: "unary", kBinary: "binary", kWhere: "where_k",
	kAdamW: "adamw", kReduceRows: "reduce_rows", kReduceGen: "reduce_gen", kReduceFin: "reduce_fin",
	kReduceAll: "reduce_all", kArgmax: "argmax_k", kSoftmaxRows: "softmax_rows",
	kSoftmaxStrided: "softmax_strided", kIndexSelect: "index_select", kScatterAtomic: "scatter_atomic",
	kCSRSum: "csr_sum", kScaleRows: "scale_rows", kLayerNorm: "layernorm", kLayerNormBwd: "layernorm_bwd",
	kLayerNormParams: "layernorm_params", kAddParamGrads: "add_param_grads", kCEFwd: "ce_fwd",
	kCEBwd: "ce_bwd", kAttnSoftmax: "attn_softmax", kAttnDSoftmax: "attn_dsoftmax", kNonFinite: "nonfinite",
	kGINEFwd: "gine_fwd", kGINEBwdSrc: "gine_bwd_src", kGINEDeTiles: "gine_de_tiles", kGINEDeSum: "gine_de_sum",
	kLNMod: "ln_mod", kLNModBwd: "ln_mod_bwd", kLNModSets: "ln_mod_sets", kGateRes: "gate_res",
	kGateResBwd: "gate_res_bwd", kBiasGELU: "bias_gelu", kBiasGELUBwd: "bias_gelu_bwd",
	kColPartials: "col_partials", kFlashFwd: "flash_fwd", kFlashBwd: "flash_bwd",
	kDeepSetFwd: "deepset_fwd", kDeepSetBwdDS: "deepset_bwd_ds", kDeepSetBwdCols: "deepset_bwd_cols",
	kDeepSetParams: "deepset_params",
}

var ctypes = [2]string{"float", "double"}

// variants returns the number of instantiations of kernel k: 4 for the
// converting copy (index dst*2+src), 2 (float, double) for the others.
func variants(k kid) int {
	if k == kCopy {
		return 4
	}
	return 2
}

// kernelExpr returns the NVRTC name expression of variant v of kernel k.
func kernelExpr(k kid, v int) string {
	if k == kCopy {
		return fmt.Sprintf("%s<%s, %s>", kernelNames[k], ctypes[v/2], ctypes[v%2])
	}
	return fmt.Sprintf("%s<%s>", kernelNames[k], ctypes[v])
}

// allKernelExprs lists the name expressions of every instantiation.
func allKernelExprs() []string {
	var out []string
	for k := range numKernels {
		for v := range variants(k) {
			out = append(out, kernelExpr(k, v))
		}
	}
	return out
}
