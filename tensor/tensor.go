package tensor

import (
	"errors"
	"fmt"
	"strings"
)

// DType is the element type of a tensor.
type DType uint8

// The element types. Float32 is the working precision of models; Float64 is
// used by tests (finite differences) and numerically delicate code.
const (
	Float32 DType = iota
	Float64
)

// String returns "float32" or "float64".
func (dt DType) String() string {
	switch dt {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("DType(%d)", uint8(dt))
}

// Size returns the size of one element in bytes.
func (dt DType) Size() int {
	if dt == Float32 {
		return 4
	}
	return 8
}

// Errors wrapped by the values this package panics with on programmer errors,
// so that a recovered panic can be classified with errors.Is. The panic
// message names the operation and the offending shapes or indices, e.g.
// "tensor.Add: shapes [3 4] and [5 4] do not broadcast: tensor: shape mismatch".
var (
	// ErrShape reports operands whose shapes do not fit the operation.
	ErrShape = errors.New("tensor: shape mismatch")
	// ErrIndex reports an index or axis out of range.
	ErrIndex = errors.New("tensor: index out of range")
	// ErrDType reports operands of different dtypes, or the wrong dtype.
	ErrDType = errors.New("tensor: dtype mismatch")
	// ErrBackend reports operands on different backends, or CPU-only access
	// to a tensor on another backend.
	ErrBackend = errors.New("tensor: backend mismatch")
	// ErrLayout reports a tensor that must be contiguous but is not.
	ErrLayout = errors.New("tensor: tensor is not contiguous")
	// ErrDevice is wrapped by the errors a Backend panics with when its
	// device fails: memory exhausted, a kernel or library call that failed.
	// Backend methods have no error results, so functions that run a whole
	// computation (training, sampling) recover these panics with
	// CatchDeviceError and return them.
	ErrDevice = errors.New("tensor: device failure")
)

// CatchDeviceError turns a panic whose value is an error wrapping ErrDevice
// into the named error result of the function that defers it, joined with
// any error already there; other panics, programmer errors such as ErrShape
// included, continue:
//
//	func Train(...) (m *Model, err error) {
//		defer tensor.CatchDeviceError(&err)
//		...
//	}
func CatchDeviceError(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(error); ok && errors.Is(e, ErrDevice) {
		*err = errors.Join(*err, e)
		return
	}
	panic(r)
}

func fail(kind error, op, format string, args ...any) {
	panic(fmt.Errorf("tensor.%s: %s: %w", op, fmt.Sprintf(format, args...), kind))
}

// Tensor is an n-dimensional strided view on a Storage: element
// (i0, ..., in-1) lives at storage index offset + Σ ik·strides[k]. Several
// tensors may view the same storage (see Reshape, Transpose, Slice, ...);
// writing through one is visible through the others. A Tensor value is not
// safe for concurrent writes, but concurrent reads (and ops reading it) are.
type Tensor struct {
	dtype   DType
	shape   []int
	strides []int
	offset  int
	st      Storage
}

// rowMajorStrides returns the contiguous strides of shape.
func rowMajorStrides(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= shape[i]
	}
	return s
}

func shapeSize(op string, shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 {
			fail(ErrShape, op, "negative dimension in shape %v", shape)
		}
		n *= d
	}
	return n
}

func cloneInts(s []int) []int {
	return append(make([]int, 0, len(s)), s...)
}

// NewOn returns a zero tensor of the given dtype and shape in memory of
// backend b, contiguous.
func NewOn(b Backend, dt DType, shape ...int) *Tensor {
	checkDType("New", dt)
	n := shapeSize("New", shape)
	return &Tensor{dtype: dt, shape: cloneInts(shape), strides: rowMajorStrides(shape), st: b.Alloc(dt, n)}
}

// EmptyOn returns a contiguous tensor of the given dtype and shape in memory
// of backend b whose contents are undefined (Backend.AllocUninit): for a
// result that is about to be overwritten in full, it saves a GPU backend
// the memset that NewOn needs. On the CPU it is NewOn.
func EmptyOn(b Backend, dt DType, shape ...int) *Tensor {
	checkDType("EmptyOn", dt)
	n := shapeSize("EmptyOn", shape)
	return &Tensor{dtype: dt, shape: cloneInts(shape), strides: rowMajorStrides(shape), st: b.AllocUninit(dt, n)}
}

// Release hands the memory of each tensor's storage back to its backend at
// once (Backend.Release; a GPU backend returns it to its caching
// allocator, the CPU does nothing). The tensors and every view of their
// storage must not be used afterwards. Nil tensors are skipped.
func Release(ts ...*Tensor) {
	for _, t := range ts {
		if t != nil {
			t.backend().Release(t)
		}
	}
}

// New returns a zero tensor of the given dtype and shape on the CPU,
// contiguous. New(dt) with no dimensions is a rank-0 scalar.
func New(dt DType, shape ...int) *Tensor {
	checkDType("New", dt)
	n := shapeSize("New", shape)
	return &Tensor{dtype: dt, shape: cloneInts(shape), strides: rowMajorStrides(shape), st: newCPUStorage(dt, n)}
}

// Full returns a CPU tensor of the given shape with every element v.
func Full(dt DType, v float64, shape ...int) *Tensor {
	return New(dt, shape...).Fill(v)
}

// Scalar returns a rank-0 CPU tensor holding v.
func Scalar(dt DType, v float64) *Tensor {
	return Full(dt, v)
}

// FromFloat32 returns a contiguous float32 CPU tensor of the given shape that
// wraps data without copying: writes through either are visible in both.
// len(data) must equal the product of shape; with no shape, data is a vector.
func FromFloat32(data []float32, shape ...int) *Tensor {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	if n := shapeSize("FromFloat32", shape); n != len(data) {
		fail(ErrShape, "FromFloat32", "%d elements for shape %v", len(data), shape)
	}
	return &Tensor{dtype: Float32, shape: cloneInts(shape), strides: rowMajorStrides(shape), st: &cpuStorage{dt: Float32, f32: data}}
}

// FromFloat64 is FromFloat32 for float64 data.
func FromFloat64(data []float64, shape ...int) *Tensor {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	if n := shapeSize("FromFloat64", shape); n != len(data) {
		fail(ErrShape, "FromFloat64", "%d elements for shape %v", len(data), shape)
	}
	return &Tensor{dtype: Float64, shape: cloneInts(shape), strides: rowMajorStrides(shape), st: &cpuStorage{dt: Float64, f64: data}}
}

// FromStorage returns a contiguous tensor of the given shape viewing st from
// its start. It is meant for backends; st.Len() must be at least the size.
func FromStorage(st Storage, shape ...int) *Tensor {
	n := shapeSize("FromStorage", shape)
	if n > st.Len() {
		fail(ErrShape, "FromStorage", "shape %v needs %d elements, storage has %d", shape, n, st.Len())
	}
	return &Tensor{dtype: st.DType(), shape: cloneInts(shape), strides: rowMajorStrides(shape), st: st}
}

// NewView returns the strided view of st with the given offset, shape and
// strides (copied). It is meant for backends and checks that every element
// lies inside the storage.
func NewView(st Storage, offset int, shape, strides []int) *Tensor {
	if len(shape) != len(strides) {
		fail(ErrShape, "NewView", "shape %v and strides %v differ in rank", shape, strides)
	}
	t := &Tensor{dtype: st.DType(), shape: cloneInts(shape), strides: cloneInts(strides), offset: offset, st: st}
	if lo, hi := t.span(); t.Size() > 0 && (lo < 0 || hi > st.Len()) {
		fail(ErrIndex, "NewView", "view offset %d shape %v strides %v outside storage of %d elements", offset, shape, strides, st.Len())
	}
	return t
}

// span returns the smallest and one past the largest storage index viewed.
func (t *Tensor) span() (lo, hi int) {
	lo, hi = t.offset, t.offset+1
	for i, d := range t.shape {
		if d == 0 {
			return t.offset, t.offset
		}
		s := t.strides[i] * (d - 1)
		if s < 0 {
			lo += s
		} else {
			hi += s
		}
	}
	return lo, hi
}

func checkDType(op string, dt DType) {
	if dt != Float32 && dt != Float64 {
		fail(ErrDType, op, "unsupported dtype %v", dt)
	}
}

// NewLike returns a zero contiguous tensor with t's dtype, shape and backend.
func (t *Tensor) NewLike() *Tensor { return NewOn(t.backend(), t.dtype, t.shape...) }

// Clone returns a contiguous deep copy of t on t's backend.
func (t *Tensor) Clone() *Tensor {
	c := EmptyOn(t.backend(), t.dtype, t.shape...)
	t.backend().Copy(c, t)
	return c
}

// To returns a contiguous copy of t converted to dtype dt, or t itself if it
// already has that dtype.
func (t *Tensor) To(dt DType) *Tensor {
	if dt == t.dtype {
		return t
	}
	c := EmptyOn(t.backend(), dt, t.shape...)
	t.backend().Copy(c, t)
	return c
}

// Shape returns the dimensions. The slice is t's own: do not modify it.
func (t *Tensor) Shape() []int { return t.shape }

// Strides returns the element strides. The slice is t's own: do not modify it.
func (t *Tensor) Strides() []int { return t.strides }

// Offset returns the storage index of the first element.
func (t *Tensor) Offset() int { return t.offset }

// Storage returns the memory t views.
func (t *Tensor) Storage() Storage { return t.st }

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { return len(t.shape) }

// Dim returns dimension i; negative i counts from the end (-1 is the last).
func (t *Tensor) Dim(i int) int { return t.shape[t.axis("Dim", i)] }

// axis normalises a possibly negative axis and panics if out of range.
func (t *Tensor) axis(op string, i int) int {
	if i < 0 {
		i += len(t.shape)
	}
	if i < 0 || i >= len(t.shape) {
		fail(ErrIndex, op, "axis %d out of range for shape %v", i, t.shape)
	}
	return i
}

// Size returns the number of elements (1 for a scalar).
func (t *Tensor) Size() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// DType returns the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Backend returns the backend owning t's memory.
func (t *Tensor) Backend() Backend { return t.st.Backend() }

func (t *Tensor) backend() Backend { return t.st.Backend() }

// IsContiguous reports whether t's elements are laid out row-major without
// gaps (dimensions of size 1 may have any stride). The offset may be non-zero.
func (t *Tensor) IsContiguous() bool {
	n := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		d := t.shape[i]
		if d == 1 {
			continue
		}
		if t.strides[i] != n {
			return false
		}
		n *= d
	}
	return true
}

// Data32 returns the elements of a contiguous float32 CPU tensor as a slice
// of its storage (no copy: writes are visible through t). It panics if t is
// not contiguous, not float32, or not on the CPU.
func (t *Tensor) Data32() []float32 {
	s := t.cpuStorage("Data32")
	if t.dtype != Float32 {
		fail(ErrDType, "Data32", "tensor is %v", t.dtype)
	}
	if !t.IsContiguous() {
		fail(ErrLayout, "Data32", "shape %v strides %v", t.shape, t.strides)
	}
	return s.f32[t.offset : t.offset+t.Size() : t.offset+t.Size()]
}

// Data64 is Data32 for float64 tensors.
func (t *Tensor) Data64() []float64 {
	s := t.cpuStorage("Data64")
	if t.dtype != Float64 {
		fail(ErrDType, "Data64", "tensor is %v", t.dtype)
	}
	if !t.IsContiguous() {
		fail(ErrLayout, "Data64", "shape %v strides %v", t.shape, t.strides)
	}
	return s.f64[t.offset : t.offset+t.Size() : t.offset+t.Size()]
}

func (t *Tensor) cpuStorage(op string) *cpuStorage {
	s, ok := t.st.(*cpuStorage)
	if !ok {
		fail(ErrBackend, op, "tensor is on backend %q, not cpu", t.st.Backend().Name())
	}
	return s
}

// index returns the storage index of the element at idx.
func (t *Tensor) index(op string, idx []int) int {
	if len(idx) != len(t.shape) {
		fail(ErrIndex, op, "%d indices for shape %v", len(idx), t.shape)
	}
	p := t.offset
	for i, x := range idx {
		if x < 0 || x >= t.shape[i] {
			fail(ErrIndex, op, "index %v out of range for shape %v", idx, t.shape)
		}
		p += x * t.strides[i]
	}
	return p
}

// At returns the element at idx (one index per dimension), as float64.
// On a non-CPU backend it copies the element to the host.
func (t *Tensor) At(idx ...int) float64 {
	p := t.index("At", idx)
	if s, ok := t.st.(*cpuStorage); ok {
		if t.dtype == Float32 {
			return float64(s.f32[p])
		}
		return s.f64[p]
	}
	host := New(t.dtype, 1)
	t.backend().Download(host, &Tensor{dtype: t.dtype, shape: []int{1}, strides: []int{1}, offset: p, st: t.st})
	return host.At(0)
}

// Set stores v (rounded to t's dtype) at idx.
func (t *Tensor) Set(v float64, idx ...int) {
	p := t.index("Set", idx)
	if s, ok := t.st.(*cpuStorage); ok {
		if t.dtype == Float32 {
			s.f32[p] = float32(v)
		} else {
			s.f64[p] = v
		}
		return
	}
	host := Full(t.dtype, v, 1)
	t.backend().Upload(&Tensor{dtype: t.dtype, shape: []int{1}, strides: []int{1}, offset: p, st: t.st}, host)
}

// Item returns the only element of a tensor of size 1 (any rank).
func (t *Tensor) Item() float64 {
	if t.Size() != 1 {
		fail(ErrShape, "Item", "shape %v has %d elements, want 1", t.shape, t.Size())
	}
	return t.At(make([]int, len(t.shape))...)
}

// Float64s returns a new row-major []float64 copy of t's elements (any
// layout, any backend).
func (t *Tensor) Float64s() []float64 {
	c := NewOn(CPU, Float64, t.shape...)
	Copy(c, t)
	return c.Data64()
}

// Float32s returns a new row-major []float32 copy of t's elements (any
// layout, any backend).
func (t *Tensor) Float32s() []float32 {
	c := NewOn(CPU, Float32, t.shape...)
	Copy(c, t)
	return c.Data32()
}

// String formats t like numpy, eliding the middle of long dimensions:
//
//	Tensor(float32 [2 3])
//	[[1 2 3]
//	 [4 5 6]]
func (t *Tensor) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tensor(%v %v)\n", t.dtype, t.shape)
	vals := t.Float64s()
	elide := t.Size() > 1000
	var rec func(dim, base, indent int)
	strides := rowMajorStrides(t.shape)
	rec = func(dim, base, indent int) {
		if dim == len(t.shape) {
			fmt.Fprintf(&b, "%.6g", vals[base])
			return
		}
		b.WriteByte('[')
		n := t.shape[dim]
		for i := 0; i < n; i++ {
			if elide && n > 6 && i == 3 {
				if dim == len(t.shape)-1 {
					b.WriteString("... ")
				} else {
					b.WriteString("...\n" + strings.Repeat(" ", indent+1))
				}
				i = n - 3
			}
			rec(dim+1, base+i*strides[dim], indent+1)
			if i < n-1 {
				if dim == len(t.shape)-1 {
					b.WriteByte(' ')
				} else {
					b.WriteString(strings.Repeat("\n", len(t.shape)-dim-1) + strings.Repeat(" ", indent+1))
				}
			}
		}
		b.WriteByte(']')
	}
	rec(0, 0, 0)
	return b.String()
}
