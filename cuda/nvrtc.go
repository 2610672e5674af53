package cuda

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// nvrtc holds the functions of libnvrtc (CUDA runtime compilation).
type nvrtc struct {
	file string

	create, addName, compile, logSize, log, ptxSize, ptx, cubinSize, cubin uintptr
	lowered, destroy, errString, version, numArchs, archs                  uintptr

	errStr func(int32) string // nvrtcGetErrorString, bound with purego.RegisterFunc
}

func (n *nvrtc) table() []sym {
	return []sym{
		{"nvrtcCreateProgram", &n.create, false},
		{"nvrtcAddNameExpression", &n.addName, false},
		{"nvrtcCompileProgram", &n.compile, false},
		{"nvrtcGetProgramLogSize", &n.logSize, false},
		{"nvrtcGetProgramLog", &n.log, false},
		{"nvrtcGetPTXSize", &n.ptxSize, false},
		{"nvrtcGetPTX", &n.ptx, false},
		{"nvrtcGetCUBINSize", &n.cubinSize, true},
		{"nvrtcGetCUBIN", &n.cubin, true},
		{"nvrtcGetLoweredName", &n.lowered, false},
		{"nvrtcDestroyProgram", &n.destroy, false},
		{"nvrtcGetErrorString", &n.errString, false},
		{"nvrtcVersion", &n.version, false},
		{"nvrtcGetNumSupportedArchs", &n.numArchs, true},
		{"nvrtcGetSupportedArchs", &n.archs, true},
	}
}

// loadNVRTC opens the first loadable NVRTC library of names.
func loadNVRTC(names []string) (*nvrtc, error) {
	h, file, err := openLib("NVRTC", names)
	if err != nil {
		return nil, err
	}
	n := &nvrtc{file: file}
	if err := bind(h, file, n.table()); err != nil {
		return nil, err
	}
	purego.RegisterFunc(&n.errStr, n.errString)
	return n, nil
}

func (n *nvrtc) check(op string, code int) error {
	if code == 0 {
		return nil
	}
	return &Error{Op: op, Code: code, Msg: n.errStr(int32(code))}
}

// versionString returns NVRTC's "major.minor".
func (n *nvrtc) versionString() string {
	var major, minor int32
	if n.check("nvrtcVersion", call(n.version, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))) != nil {
		return "?"
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

// supportedArchs returns the sm_XX numbers NVRTC can compile for (nil if it
// cannot tell).
func (n *nvrtc) supportedArchs() []int {
	if n.numArchs == 0 || n.archs == 0 {
		return nil
	}
	var cnt int32
	if n.check("nvrtcGetNumSupportedArchs", call(n.numArchs, uintptr(unsafe.Pointer(&cnt)))) != nil || cnt <= 0 {
		return nil
	}
	a := make([]int32, cnt)
	if n.check("nvrtcGetSupportedArchs", call(n.archs, uintptr(unsafe.Pointer(&a[0])))) != nil {
		return nil
	}
	out := make([]int, cnt)
	for i, v := range a {
		out[i] = int(v)
	}
	slices.Sort(out)
	return out
}

// chooseArch returns the --gpu-architecture value for a device of compute
// capability cc (e.g. 90): sm_cc (a CUBIN for exactly this device) when
// NVRTC supports it and can emit CUBINs, else compute_XX (PTX that the
// driver compiles) for the highest supported XX <= cc.
func chooseArch(cc int, supported []int, canCubin bool) (arch string, cubin bool) {
	if len(supported) == 0 {
		if canCubin {
			return fmt.Sprintf("sm_%d", cc), true
		}
		return fmt.Sprintf("compute_%d", cc), false
	}
	if canCubin && slices.Contains(supported, cc) {
		return fmt.Sprintf("sm_%d", cc), true
	}
	best := supported[0]
	for _, a := range supported {
		if a <= cc {
			best = a
		}
	}
	return fmt.Sprintf("compute_%d", best), false
}

// program is the result of compiling the kernel source.
type program struct {
	image []byte            // CUBIN, or NUL-terminated PTX
	cubin bool              // image is a CUBIN
	arch  string            // the --gpu-architecture used
	names map[string]string // name expression -> lowered (mangled) name
	log   string            // compiler log (warnings)
}

// compileProgram compiles src for the given architecture and resolves the
// lowered names of the kernel name expressions exprs (e.g. "unary<float>").
// Compilation errors are returned with NVRTC's log.
func (n *nvrtc) compileProgram(src, file string, exprs []string, arch string, cubin bool, extra []string) (*program, error) {
	csrc, cname := cstr(src), cstr(file)
	var prog uintptr
	if err := n.check("nvrtcCreateProgram", call(n.create, uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0)); err != nil {
		return nil, err
	}
	defer call(n.destroy, uintptr(unsafe.Pointer(&prog)))
	cexprs := make([][]byte, len(exprs))
	for i, e := range exprs {
		cexprs[i] = cstr(e)
		if err := n.check("nvrtcAddNameExpression", call(n.addName, prog, uintptr(unsafe.Pointer(&cexprs[i][0])))); err != nil {
			return nil, fmt.Errorf("%w (%s)", err, e)
		}
	}
	opts := append([]string{"--gpu-architecture=" + arch}, extra...)
	copts := make([][]byte, len(opts))
	optPtrs := make([]uintptr, len(opts))
	for i, o := range opts {
		copts[i] = cstr(o)
		optPtrs[i] = uintptr(unsafe.Pointer(&copts[i][0]))
	}
	code := call(n.compile, prog, uintptr(len(opts)), uintptr(unsafe.Pointer(&optPtrs[0])))
	runtime.KeepAlive(copts)
	log := n.programLog(prog)
	if err := n.check("nvrtcCompileProgram", code); err != nil {
		return nil, fmt.Errorf("%w; options %s; log:\n%s", err, strings.Join(opts, " "), log)
	}
	p := &program{arch: arch, cubin: cubin, names: make(map[string]string, len(exprs)), log: log}
	for i, e := range exprs {
		var low *byte
		if err := n.check("nvrtcGetLoweredName", call(n.lowered, prog, uintptr(unsafe.Pointer(&cexprs[i][0])), uintptr(unsafe.Pointer(&low)))); err != nil {
			return nil, fmt.Errorf("%w (%s)", err, e)
		}
		p.names[e] = goString(low)
	}
	runtime.KeepAlive(cexprs)
	sizeFn, getFn, what := n.ptxSize, n.ptx, "PTX"
	if cubin {
		sizeFn, getFn, what = n.cubinSize, n.cubin, "CUBIN"
	}
	var size uint64
	if err := n.check("nvrtcGet"+what+"Size", call(sizeFn, prog, uintptr(unsafe.Pointer(&size)))); err != nil {
		return nil, err
	}
	img := make([]byte, size+1) // PTX sizes include the NUL; one spare byte keeps a CUBIN safe too
	if err := n.check("nvrtcGet"+what, call(getFn, prog, uintptr(unsafe.Pointer(&img[0])))); err != nil {
		return nil, err
	}
	p.image = img[:size]
	if !cubin {
		p.image = img // keep the NUL terminator for cuModuleLoadData
	}
	return p, nil
}

func (n *nvrtc) programLog(prog uintptr) string {
	var size uint64
	if call(n.logSize, prog, uintptr(unsafe.Pointer(&size))) != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if call(n.log, prog, uintptr(unsafe.Pointer(&buf[0]))) != 0 {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00\n ")
}
