package cuda

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"lgflow/tensor"
)

// These tests need no GPU and no CUDA library (TestNVRTCCompile uses NVRTC
// when one is installed: it needs no GPU either).

func TestLibraryLoadFailure(t *testing.T) {
	bad := libNames{
		cuda:   []string{"/nonexistent/libcuda.so.1"},
		cublas: []string{"/nonexistent/libcublas.so.12"},
		nvrtc:  []string{"/nonexistent/libnvrtc.so.12"},
	}
	info, reason := probe(bad)
	if info != "" || !strings.Contains(reason, "cannot load") || !strings.Contains(reason, "/nonexistent/libcuda.so.1") {
		t.Fatalf("probe with missing libcuda: info %q, reason %q", info, reason)
	}
	if _, err := open(bad, 0); err == nil || !strings.Contains(err.Error(), "/nonexistent/libcuda.so.1") {
		t.Fatalf("open with missing libcuda: %v", err)
	}
	if _, err := loadCublas(bad.cublas); err == nil || !strings.Contains(err.Error(), "cuBLAS") {
		t.Fatalf("loadCublas: %v", err)
	}
	if _, err := loadNVRTC(bad.nvrtc); err == nil || !strings.Contains(err.Error(), "NVRTC") {
		t.Fatalf("loadNVRTC: %v", err)
	}
	if _, _, err := openLib("nothing", nil); err == nil {
		t.Fatal("openLib with no names succeeded")
	}
}

func TestCandidates(t *testing.T) {
	got := candidates([]string{"libx.so.2", "/abs/libx.so"}, "/a::/b", "/cuda")
	want := []string{"/a/libx.so.2", "/b/libx.so.2", "libx.so.2", "/abs/libx.so", "/cuda/lib64/libx.so.2", "/usr/local/cuda/lib64/libx.so.2"}
	if !slices.Equal(got, want) {
		t.Errorf("candidates = %q, want %q", got, want)
	}
	if got := candidates([]string{"liby.so"}, "", ""); !slices.Equal(got, []string{"liby.so", "/usr/local/cuda/lib64/liby.so"}) {
		t.Errorf("candidates without environment = %q", got)
	}
}

func TestAvailableAndInitAgree(t *testing.T) {
	ok, why := Available()
	if why == "" {
		t.Fatal("Available gave an empty description")
	}
	if ok2, why2 := Available(); ok2 != ok || why2 != why {
		t.Fatal("Available is not stable")
	}
	if ok {
		t.Logf("GPU: %s", why)
		return
	}
	t.Logf("no GPU: %s", why)
	b, err := Init()
	if err == nil || b != nil {
		t.Fatalf("Init without a usable GPU: backend %v, error %v", b, err)
	}
	if tensor.BackendByName("cuda") != nil {
		t.Fatal("failed Init registered a backend")
	}
}

func TestDisabledByEnv(t *testing.T) {
	t.Setenv("LGFLOW_CUDA_DISABLE", "1")
	if r := disabledReason(); !strings.Contains(r, "LGFLOW_CUDA_DISABLE") {
		t.Fatalf("disabledReason = %q", r)
	}
}

func TestErrorOutOfMemory(t *testing.T) {
	cases := []struct {
		err  *Error
		want bool
	}{
		{&Error{Op: "cuMemAlloc_v2", Code: 2}, true},
		{&Error{Op: "cuMemAlloc_v2", Code: 1}, false},
		{&Error{Op: "cublasSgemm_v2", Code: 3}, true},
		{&Error{Op: "cublasSgemm_v2", Code: 2}, false},
		{&Error{Op: "nvrtcCompileProgram", Code: 2}, false},
	}
	for _, c := range cases {
		if got := c.err.Is(ErrOutOfMemory); got != c.want {
			t.Errorf("%v Is(ErrOutOfMemory) = %v", c.err, got)
		}
	}
	if s := (&Error{Op: "cuInit", Code: 100, Msg: "no CUDA-capable device"}).Error(); s != "cuda: cuInit: no CUDA-capable device (code 100)" {
		t.Errorf("Error() = %q", s)
	}
}

var globalRE = regexp.MustCompile(`template\s*<[^>]*>\s*__global__\s+void\s+(\w+)\s*\(`)

func TestKernelSource(t *testing.T) {
	src, err := kernelSource()
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range globalRE.FindAllStringSubmatch(src, -1) {
		defined[m[1]] = true
	}
	for k := range numKernels {
		name := kernelNames[k]
		if name == "" || !defined[name] {
			t.Errorf("kernel %d (%q) is not a template __global__ function of the source", k, name)
		}
		delete(defined, name)
	}
	for name := range defined {
		t.Errorf("kernel %s of the source is not in the Go kernel table", name)
	}
	// Each file: balanced braces and parentheses, no #include (NVRTC has no
	// toolkit headers here), announced by a #line directive.
	for _, f := range sourceFiles {
		data, err := kernelFS.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := stripComments(string(data))
		if strings.Count(s, "{") != strings.Count(s, "}") || strings.Count(s, "(") != strings.Count(s, ")") {
			t.Errorf("%s: unbalanced braces or parentheses", f)
		}
		if strings.Contains(s, "#include") {
			t.Errorf("%s includes a header", f)
		}
		if !strings.Contains(src, `#line 1 "`+f+`"`) {
			t.Errorf("program lacks the #line directive of %s", f)
		}
	}
	exprs := allKernelExprs()
	if len(exprs) != 2*int(numKernels)+2 || !slices.Contains(exprs, "copy_k<float, double>") || !slices.Contains(exprs, "unary<double>") {
		t.Errorf("kernel expressions %v", exprs)
	}
}

// stripComments removes // and /* */ comments.
func stripComments(s string) string {
	s = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(s, "")
	return regexp.MustCompile(`//[^\n]*`).ReplaceAllString(s, "")
}

func TestLayoutMirrorsC(t *testing.T) {
	if got := unsafe.Sizeof(layout{}); got != 8+8+8*maxDims+8*maxOps*maxDims {
		t.Fatalf("layout is %d bytes", got)
	}
	if unsafe.Offsetof(layout{}.dims) != 16 || unsafe.Offsetof(layout{}.str) != 16+8*maxDims {
		t.Fatal("layout field offsets differ from struct Lay")
	}
	data, err := kernelFS.ReadFile("kernels/common.cuh")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"MAXD": maxDims, "MAXOPS": maxOps} {
		m := regexp.MustCompile(`#define ` + name + ` (\d+)`).FindStringSubmatch(string(data))
		if m == nil || m[1] != strconv.Itoa(want) {
			t.Errorf("common.cuh %s = %v, Go has %d", name, m, want)
		}
	}
	// The enums of the .cu files follow tensor's op numbering.
	checkEnum(t, "kernels/elementwise.cu", "U_NEG", int(tensor.UnaryNeg), "U_POW", int(tensor.UnaryPow))
	checkEnum(t, "kernels/elementwise.cu", "B_ADD", int(tensor.BinaryAdd), "B_TANHGRADY", int(tensor.BinaryTanhGradY))
	checkEnum(t, "kernels/reduce.cu", "R_SUM", int(tensor.ReduceSum), "R_SUMSQ", int(tensor.ReduceSumSquares))
	checkEnum(t, "kernels/reduce.cu", "R_SUM", 0, "R_SUMEXP", rSumExp)
}

// checkEnum checks that in the first C enum of file containing first, first
// has value a and last has value b.
func checkEnum(t *testing.T, file, first string, a int, last string, b int) {
	t.Helper()
	data, err := kernelFS.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?s)enum\s*\{([^}]*)\}`).FindAllStringSubmatch(stripComments(string(data)), -1) {
		var names []string
		for _, f := range strings.Split(m[1], ",") {
			if f = strings.TrimSpace(f); f != "" {
				names = append(names, f)
			}
		}
		if !slices.Contains(names, first) {
			continue
		}
		if ia, ib := slices.Index(names, first), slices.Index(names, last); ia != a || ib != b {
			t.Errorf("%s: %s = %d, %s = %d; want %d, %d", file, first, ia, last, ib, a, b)
		}
		return
	}
	t.Errorf("%s: no enum with %s", file, first)
}

func TestArgPacking(t *testing.T) {
	a := new(kargs)
	l := elemLayout([]int{2, 3}, tensor.New(tensor.Float32, 3, 2).T())
	a.reset()
	a.i32(-7).ptr(0xdeadbeef00).f64(2.5).lay(&l).i64(1 << 40).f32(1.5)
	if a.n != 6 {
		t.Fatalf("%d arguments", a.n)
	}
	p := a.params()
	params := unsafe.Slice((*uintptr)(unsafe.Pointer(&a.ptrs[0])), a.n)
	if p != uintptr(unsafe.Pointer(&a.ptrs[0])) {
		t.Fatal("params() is not &ptrs[0]")
	}
	for i, q := range params {
		if q%8 != 0 {
			t.Errorf("argument %d at unaligned address %#x", i, q)
		}
		if q < uintptr(unsafe.Pointer(&a.vals[0])) || q >= uintptr(unsafe.Pointer(&a.vals[len(a.vals)-1]))+8 {
			t.Errorf("argument %d points outside the value slots", i)
		}
	}
	slot := func(i int) int { return int(params[i]-uintptr(unsafe.Pointer(&a.vals[0]))) / 8 }
	if got := int32(uint32(a.vals[slot(0)])); got != -7 {
		t.Errorf("int32 argument = %d", got)
	}
	if a.vals[slot(1)] != 0xdeadbeef00 {
		t.Errorf("pointer argument = %#x", a.vals[slot(1)])
	}
	if got := math.Float64frombits(a.vals[slot(2)]); got != 2.5 {
		t.Errorf("double argument = %v", got)
	}
	var back layout
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(&back)), unsafe.Sizeof(back)/8), a.vals[slot(3):])
	if back != l {
		t.Errorf("layout argument = %+v, want %+v", back, l)
	}
	if slot(4)-slot(3) != int(unsafe.Sizeof(l))/8 {
		t.Errorf("layout occupies %d slots", slot(4)-slot(3))
	}
	if int64(a.vals[slot(4)]) != 1<<40 {
		t.Errorf("int64 argument = %d", a.vals[slot(4)])
	}
	if math.Float32frombits(uint32(a.vals[slot(5)])) != 1.5 {
		t.Errorf("float argument = %#x", a.vals[slot(5)])
	}
	a.reset()
	if a.params() != 0 || a.n != 0 {
		t.Fatal("reset did not clear")
	}
	mustPanicWith(t, "overflows int32", func() { a.i32(1 << 40) })
	mustPanicWith(t, "overflow", func() {
		for range 40 {
			a.i64(1)
		}
	})
}

func mustPanicWith(t *testing.T, frag string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one mentioning %q", frag)
		}
		if msg, _ := r.(string); !strings.Contains(msg, frag) {
			if err, ok := r.(error); !ok || !strings.Contains(err.Error(), frag) {
				t.Fatalf("panic %v lacks %q", r, frag)
			}
		}
	}()
	f()
}

func TestElemLayout(t *testing.T) {
	x := tensor.New(tensor.Float32, 4, 5, 6)
	cases := []struct {
		name  string
		shape []int
		ts    []*tensor.Tensor
		nd    int
		dims  []int64
		str   [][]int64
	}{
		{"contiguous", []int{4, 5, 6}, []*tensor.Tensor{x, x}, 1, []int64{120}, [][]int64{{1}, {1}}},
		{"transposed", []int{4, 6, 5}, []*tensor.Tensor{tensor.New(tensor.Float32, 4, 6, 5), x.Transpose(1, 2)}, 3,
			[]int64{4, 6, 5}, [][]int64{{30, 5, 1}, {30, 1, 6}}},
		{"offset slice", []int{2, 5, 6}, []*tensor.Tensor{x.Slice(0, 1, 3)}, 1, []int64{60}, [][]int64{{1}}},
		{"broadcast row", []int{4, 5, 6}, []*tensor.Tensor{x, tensor.New(tensor.Float32, 6)}, 2,
			[]int64{20, 6}, [][]int64{{6, 1}, {0, 1}}},
		{"broadcast col", []int{4, 5, 6}, []*tensor.Tensor{x, tensor.New(tensor.Float32, 5, 1)}, 3,
			[]int64{4, 5, 6}, [][]int64{{30, 6, 1}, {0, 1, 0}}},
		{"sliced", []int{4, 5, 3}, []*tensor.Tensor{x.Slice(2, 1, 4)}, 2, []int64{20, 3}, [][]int64{{6, 1}}},
		{"size-1 dims", []int{1, 7, 1}, []*tensor.Tensor{tensor.New(tensor.Float32, 1, 7, 1)}, 1, []int64{7}, [][]int64{{1}}},
		{"scalar", nil, []*tensor.Tensor{tensor.New(tensor.Float32)}, 1, []int64{1}, [][]int64{{0}}},
		{"nil operand", []int{3, 2}, []*tensor.Tensor{tensor.New(tensor.Float32, 3, 2), nil}, 1, []int64{6}, [][]int64{{1}, {0}}},
	}
	for _, c := range cases {
		l := elemLayout(c.shape, c.ts...)
		n := int64(1)
		for _, d := range c.shape {
			n *= int64(d)
		}
		if l.n != n || int(l.nd) != c.nd || !slices.Equal(l.dims[:l.nd], c.dims) {
			t.Errorf("%s: n %d nd %d dims %v, want %d %d %v", c.name, l.n, l.nd, l.dims[:l.nd], n, c.nd, c.dims)
			continue
		}
		for k, s := range c.str {
			if !slices.Equal(l.str[k][:l.nd], s) {
				t.Errorf("%s: operand %d strides %v, want %v", c.name, k, l.str[k][:l.nd], s)
			}
		}
	}
	// Nine dimensions that cannot merge exceed the kernels' limit.
	shape := []int{2, 2, 2, 2, 2, 2, 2, 2, 2}
	str := []int{1000, 400, 150, 60, 25, 11, 5, 3, 1}
	mustPanicWith(t, "cannot be merged", func() { stridedLayout(shape, 1, &[maxOps][]int{str}) })
}

func TestBucket(t *testing.T) {
	cases := []struct{ n, want uint64 }{
		{1, 512}, {512, 512}, {513, 1024}, {1000, 1024}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<16},
		{3 << 20, 3 << 20}, {100 << 20, 100 << 20}, {100<<20 + 1, 104 << 20},
	}
	for _, c := range cases {
		got := bucket(c.n)
		if got != c.want {
			t.Errorf("bucket(%d) = %d, want %d", c.n, got, c.want)
		}
		if got < c.n || float64(got-c.n) > 0.07*float64(c.n)+512 {
			t.Errorf("bucket(%d) = %d wastes too much", c.n, got)
		}
	}
}

func TestAllocatorCache(t *testing.T) {
	a := allocator{free: map[uint64][]uintptr{}}
	a.inUse = 2048
	b1 := &block{ptr: 0x1000, size: 1024}
	a.putBlock(b1)
	a.putBlock(b1) // second put is a no-op
	if b1.ptr != 0 || a.cached != 1024 || a.inUse != 1024 || len(a.free[1024]) != 1 {
		t.Fatalf("after put: %+v cached %d inUse %d", b1, a.cached, a.inUse)
	}
}

func TestMatLayout(t *testing.T) {
	cases := []struct {
		rows, cols, sr, sc int
		flip               bool
		ld                 int
		ok                 bool
	}{
		{3, 4, 4, 1, false, 4, true},   // row-major
		{3, 4, 10, 1, false, 10, true}, // row-major, padded rows
		{3, 4, 1, 3, true, 3, true},    // transposed view
		{3, 4, 1, 5, true, 5, true},    // transposed view with padding
		{1, 4, 0, 1, false, 4, true},   // one row
		{4, 1, 1, 0, false, 1, true},   // one column
		{3, 4, 8, 2, false, 0, false},  // strided both ways
		{3, 4, 0, 1, false, 0, false},  // broadcast rows
		{0, 4, 4, 1, false, 4, true},   // empty
	}
	for _, c := range cases {
		f, ld, ok := matLayout(c.rows, c.cols, c.sr, c.sc)
		if ok != c.ok || (ok && (f != c.flip || ld != c.ld)) {
			t.Errorf("matLayout(%d, %d, %d, %d) = %v, %d, %v; want %v, %d, %v", c.rows, c.cols, c.sr, c.sc, f, ld, ok, c.flip, c.ld, c.ok)
		}
	}
}

func TestBuildCSR(t *testing.T) {
	idx := []int32{3, 0, 3, 1, 3, 0}
	rows := 5
	scratch := make([]int32, 3*rows+1+len(idx))
	buf, u := buildCSR(idx, rows, scratch[:rows], scratch[rows:])
	if u != 3 {
		t.Fatalf("u = %d", u)
	}
	list, ptr, perm := buf[:u], buf[u:2*u+1], buf[2*u+1:]
	if !slices.Equal(list, []int32{0, 1, 3}) || !slices.Equal(ptr, []int32{0, 2, 3, 6}) || !slices.Equal(perm, []int32{1, 5, 3, 0, 2, 4}) {
		t.Fatalf("list %v ptr %v perm %v", list, ptr, perm)
	}
	if &buf[0] != &scratch[rows] {
		t.Fatal("buildCSR allocated despite enough scratch")
	}
	buf, u = buildCSR(nil, rows, scratch[:rows], scratch[rows:])
	if u != 0 || len(buf) != 1 || buf[0] != 0 {
		t.Fatalf("empty: %v %d", buf, u)
	}
}

func TestChooseArch(t *testing.T) {
	cases := []struct {
		cc        int
		supported []int
		cubin     bool
		arch      string
		wantCubin bool
	}{
		{90, []int{70, 80, 86, 89, 90}, true, "sm_90", true},
		{100, []int{70, 80, 90}, true, "compute_90", false},
		{90, []int{70, 80, 90}, false, "compute_90", false},
		{86, nil, true, "sm_86", true},
		{86, nil, false, "compute_86", false},
		{75, []int{80, 90}, true, "compute_80", false},
	}
	for _, c := range cases {
		a, cb := chooseArch(c.cc, c.supported, c.cubin)
		if a != c.arch || cb != c.wantCubin {
			t.Errorf("chooseArch(%d, %v, %v) = %s, %v; want %s, %v", c.cc, c.supported, c.cubin, a, cb, c.arch, c.wantCubin)
		}
	}
}

// TestNVRTCCompile compiles the kernels with the installed NVRTC (no GPU
// needed) and resolves every instantiation. It is skipped without NVRTC;
// set LGFLOW_NVRTC_ARCHS (e.g. "70,90") to choose architectures.
func TestNVRTCCompile(t *testing.T) {
	rtc, err := loadNVRTC(defaultLibs.nvrtc)
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	src, err := kernelSource()
	if err != nil {
		t.Fatal(err)
	}
	supported := rtc.supportedArchs()
	archs := []int{70}
	if s := os.Getenv("LGFLOW_NVRTC_ARCHS"); s != "" {
		archs = nil
		for _, f := range strings.Split(s, ",") {
			n := 0
			for _, c := range strings.TrimSpace(f) {
				n = n*10 + int(c-'0')
			}
			archs = append(archs, n)
		}
	}
	exprs := allKernelExprs()
	lastArch := ""
	for _, cc := range archs {
		arch, cubin := chooseArch(cc, supported, rtc.cubin != 0)
		lastArch = arch
		p, err := rtc.compileProgram(src, "lgflow_kernels.cu", exprs, arch, cubin, nil)
		if err != nil {
			t.Fatalf("%s (NVRTC %s, %s): %v", arch, rtc.versionString(), rtc.file, err)
		}
		for _, e := range exprs {
			if p.names[e] == "" || !strings.HasPrefix(p.names[e], "_Z") {
				t.Errorf("%s: lowered name of %s = %q", arch, e, p.names[e])
			}
		}
		if len(p.image) < 1000 {
			t.Errorf("%s: image of %d bytes", arch, len(p.image))
		}
		if p.log != "" {
			t.Logf("%s compiler log:\n%s", arch, p.log)
		}
		t.Logf("NVRTC %s compiled %d kernels for %s (cubin %v): %d bytes", rtc.versionString(), len(exprs), arch, cubin, len(p.image))
	}
	// A syntax error is reported with the log. The architecture is one this
	// NVRTC accepts: NVRTC 13 dropped compute_70, for example.
	_, err = rtc.compileProgram("__global__ void f( {", "bad.cu", nil, strings.Replace(lastArch, "sm_", "compute_", 1), false, nil)
	if err == nil || !strings.Contains(err.Error(), "bad.cu") {
		t.Errorf("bad source: %v", err)
	}
}

func TestSelect(t *testing.T) {
	for _, name := range []string{"cpu", ""} {
		if b, err := Select(name); err != nil || b != tensor.CPU {
			t.Errorf("Select(%q) = %v, %v; want the CPU", name, b, err)
		}
	}
	if _, err := Select("tpu"); err == nil || !strings.Contains(err.Error(), "tpu") {
		t.Errorf("Select(tpu): error %v", err)
	}
	ok, why := Available()
	b, err := Select("cuda")
	switch {
	case ok && (err != nil || b != tensor.BackendByName("cuda")):
		t.Errorf("GPU available, Select(cuda) = %v, %v", b, err)
	case !ok && err == nil:
		t.Errorf("no GPU (%s), but Select(cuda) succeeded", why)
	}
}
