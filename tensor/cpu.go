package tensor

import "unsafe"

// float is the element type constraint of the generic CPU kernels.
type float interface{ float32 | float64 }

// cpuStorage is CPU memory: exactly one of f32, f64 is used.
type cpuStorage struct {
	dt  DType
	f32 []float32
	f64 []float64
}

func newCPUStorage(dt DType, n int) *cpuStorage {
	if dt == Float32 {
		return &cpuStorage{dt: dt, f32: make([]float32, n)}
	}
	return &cpuStorage{dt: dt, f64: make([]float64, n)}
}

func (s *cpuStorage) Backend() Backend { return CPU }
func (s *cpuStorage) DType() DType     { return s.dt }
func (s *cpuStorage) Len() int {
	if s.dt == Float32 {
		return len(s.f32)
	}
	return len(s.f64)
}

// data returns the whole storage of a CPU tensor as []T (T must match the
// tensor's dtype; the kernels are instantiated per dtype).
func data[T float](t *Tensor) []T {
	s := t.st.(*cpuStorage)
	var z T
	if unsafe.Sizeof(z) == 4 {
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s.f32))), len(s.f32))
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s.f64))), len(s.f64))
}

// contig returns the elements of a contiguous CPU tensor as []T.
func contig[T float](t *Tensor) []T {
	n := t.Size()
	return data[T](t)[t.offset : t.offset+n : t.offset+n]
}

// cpuBackend is the CPU implementation of Backend.
type cpuBackend struct{}

// CPU is the backend of host memory, the default of every constructor. Its
// kernels are written once for float32 and float64 with generics, take fast
// paths for contiguous operands and common broadcasts, and split tensors of
// more than about 32K elements over a fixed pool of GOMAXPROCS goroutines.
var CPU Backend = cpuBackend{}

func init() { Register(CPU) }

func (cpuBackend) Name() string { return "cpu" }

func (cpuBackend) Alloc(dt DType, n int) Storage { return newCPUStorage(dt, n) }

// AllocUninit is Alloc: Go zeroes new memory anyway.
func (cpuBackend) AllocUninit(dt DType, n int) Storage { return newCPUStorage(dt, n) }

// Release does nothing: the garbage collector frees host memory.
func (cpuBackend) Release(*Tensor) {}

func (cpuBackend) Upload(dst, src *Tensor)   { CPU.Copy(dst, src) }
func (cpuBackend) Download(dst, src *Tensor) { CPU.Copy(dst, src) }

// pick returns f32 for float32 tensors and f64 otherwise.
func pick(dt DType, f32, f64 func(*job, int, int)) func(*job, int, int) {
	if dt == Float32 {
		return f32
	}
	return f64
}

func (cpuBackend) Fill(dst *Tensor, v float64) {
	j := getJob(pick(dst.dtype, fillRange[float32], fillRange[float64]))
	j.t[0] = dst
	j.f[0] = v
	j.l.setup(dst.shape, dst)
	j.run(j.l.size, elementGrain)
	putJob(j)
}

func fillRange[T float](j *job, lo, hi int) {
	d := data[T](j.t[0])
	v := T(j.f[0])
	l := &j.l
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	sd := l.str[0][in]
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		if sd == 1 {
			seg := d[c.off[0] : c.off[0]+n]
			for i := range seg {
				seg[i] = v
			}
		} else {
			for i := range n {
				d[c.off[0]+i*sd] = v
			}
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}

func (cpuBackend) Copy(dst, src *Tensor) {
	var fn func(*job, int, int)
	switch {
	case dst.dtype == Float32 && src.dtype == Float32:
		fn = copyRange[float32, float32]
	case dst.dtype == Float32:
		fn = copyRange[float32, float64]
	case src.dtype == Float32:
		fn = copyRange[float64, float32]
	default:
		fn = copyRange[float64, float64]
	}
	j := getJob(fn)
	j.t[0], j.t[1] = dst, src
	j.l.setup(dst.shape, dst, src)
	j.run(j.l.size, elementGrain)
	putJob(j)
}

func copyRange[D, S float](j *job, lo, hi int) {
	d, s := data[D](j.t[0]), data[S](j.t[1])
	l := &j.l
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	sd, ss := l.str[0][in], l.str[1][in]
	// same: D and S are one type (both float types of one size), so
	// contiguous runs are memory moves.
	same := is32[D]() == is32[S]()
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		od, os := c.off[0], c.off[1]
		switch {
		case sd == 1 && ss == 1 && same:
			copy(d[od:od+n], unsafe.Slice((*D)(unsafe.Pointer(unsafe.SliceData(s[os:os+n]))), n))
		case sd == 1 && ss == 1:
			dd, sv := d[od:od+n], s[os:os+n]
			for i := range dd {
				dd[i] = D(sv[i])
			}
		case sd == 1 && ss == 0:
			dd, v := d[od:od+n], D(s[os])
			for i := range dd {
				dd[i] = v
			}
		default:
			for i := range n {
				d[od+i*sd] = D(s[os+i*ss])
			}
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}
