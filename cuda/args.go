package cuda

import (
	"fmt"
	"math"
	"unsafe"
)

// kargs packs the arguments of one cuLaunchKernel call. cuLaunchKernel
// takes kernelParams, a void** array whose i-th entry points to the value of
// the kernel's i-th parameter; the driver copies the values (sizes taken
// from the compiled kernel) before it returns.
//
// Why passing Go memory is safe here: a kargs is allocated once on the heap
// (it is a field of the Backend, reached through a pointer) and reused by
// every launch under the backend's mutex. Go's heap objects never move, so
// the addresses stored in ptrs (as uintptr, invisible to the GC, which is
// fine because the kargs itself keeps vals alive) stay valid; the backend
// keeps the kargs reachable across the call (runtime.KeepAlive), and the
// driver does not retain the pointers after cuLaunchKernel returns. Values
// live in 8-byte slots so every scalar and every struct (whose C alignment
// is at most 8) is suitably aligned.
type kargs struct {
	vals  [256]uint64 // argument values
	ptrs  [32]uintptr // kernelParams: ptrs[i] = &vals[slot of argument i]
	nvals int         // slots used
	n     int         // arguments packed
}

func (a *kargs) reset() { a.nvals, a.n = 0, 0 }

// slots reserves k slots for the next argument and returns the first.
func (a *kargs) slots(k int) *uint64 {
	if a.n == len(a.ptrs) || a.nvals+k > len(a.vals) {
		panic(fmt.Sprintf("cuda: kernel arguments overflow (%d arguments, %d slots)", a.n, a.nvals+k))
	}
	p := &a.vals[a.nvals]
	a.ptrs[a.n] = uintptr(unsafe.Pointer(p))
	a.nvals += k
	a.n++
	return p
}

// i32 packs a C int.
func (a *kargs) i32(v int) *kargs {
	if v != int(int32(v)) {
		panic(fmt.Sprintf("cuda: kernel argument %d overflows int32", v))
	}
	*a.slots(1) = uint64(uint32(int32(v)))
	return a
}

// i64 packs a C long long.
func (a *kargs) i64(v int) *kargs {
	*a.slots(1) = uint64(int64(v))
	return a
}

// f64 packs a C double.
func (a *kargs) f64(v float64) *kargs {
	*a.slots(1) = math.Float64bits(v)
	return a
}

// f32 packs a C float.
func (a *kargs) f32(v float32) *kargs {
	*a.slots(1) = uint64(math.Float32bits(v))
	return a
}

// ptr packs a device pointer (0 is NULL).
func (a *kargs) ptr(p uintptr) *kargs {
	*a.slots(1) = uint64(p)
	return a
}

// lay packs a layout struct by value (C struct Lay).
func (a *kargs) lay(l *layout) *kargs {
	const k = int(unsafe.Sizeof(layout{})) / 8
	p := a.slots(k)
	dst := unsafe.Slice(p, k)
	src := unsafe.Slice((*uint64)(unsafe.Pointer(l)), k)
	copy(dst, src)
	return a
}

// params returns the kernelParams pointer for cuLaunchKernel.
func (a *kargs) params() uintptr {
	if a.n == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&a.ptrs[0]))
}
