package cuda

import (
	"fmt"
	"unsafe"
)

// driver holds the functions of libcuda (the CUDA driver API) that the
// backend uses. Handles (contexts, streams, modules, functions) and device
// pointers are plain integers on the Go side and never point into Go memory.
type driver struct {
	file string

	cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet, cuDeviceGetAttribute uintptr
	cuDeviceGetName, cuDeviceTotalMem, cuDevicePrimaryCtxRetain, cuCtxSetCurrent    uintptr
	cuCtxSynchronize, cuStreamCreate, cuStreamSynchronize, cuMemAlloc, cuMemFree    uintptr
	cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync, cuMemsetD8Async        uintptr
	cuMemGetInfo, cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel             uintptr
	cuGetErrorString, cuGetErrorName                                                uintptr
}

func (d *driver) table() []sym {
	return []sym{
		{"cuInit", &d.cuInit, false},
		{"cuDriverGetVersion", &d.cuDriverGetVersion, false},
		{"cuDeviceGetCount", &d.cuDeviceGetCount, false},
		{"cuDeviceGet", &d.cuDeviceGet, false},
		{"cuDeviceGetAttribute", &d.cuDeviceGetAttribute, false},
		{"cuDeviceGetName", &d.cuDeviceGetName, false},
		{"cuDeviceTotalMem_v2", &d.cuDeviceTotalMem, false},
		{"cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain, false},
		{"cuCtxSetCurrent", &d.cuCtxSetCurrent, false},
		{"cuCtxSynchronize", &d.cuCtxSynchronize, false},
		{"cuStreamCreate", &d.cuStreamCreate, false},
		{"cuStreamSynchronize", &d.cuStreamSynchronize, false},
		{"cuMemAlloc_v2", &d.cuMemAlloc, false},
		{"cuMemFree_v2", &d.cuMemFree, false},
		{"cuMemcpyHtoDAsync_v2", &d.cuMemcpyHtoDAsync, false},
		{"cuMemcpyDtoHAsync_v2", &d.cuMemcpyDtoHAsync, false},
		{"cuMemcpyDtoDAsync_v2", &d.cuMemcpyDtoDAsync, false},
		{"cuMemsetD8Async", &d.cuMemsetD8Async, false},
		{"cuMemGetInfo_v2", &d.cuMemGetInfo, false},
		{"cuModuleLoadData", &d.cuModuleLoadData, false},
		{"cuModuleGetFunction", &d.cuModuleGetFunction, false},
		{"cuLaunchKernel", &d.cuLaunchKernel, false},
		{"cuGetErrorString", &d.cuGetErrorString, false},
		{"cuGetErrorName", &d.cuGetErrorName, false},
	}
}

// Driver API constants (cuda.h).
const (
	attrMultiprocessorCount = 16
	attrComputeCapMajor     = 75
	attrComputeCapMinor     = 76
	streamNonBlocking       = 1
	cudaErrorNoDevice       = 100
)

// check converts a CUresult into an *Error (nil for CUDA_SUCCESS).
func (d *driver) check(op string, code int) error {
	if code == 0 {
		return nil
	}
	var name, msg *byte
	if d.cuGetErrorName != 0 {
		call(d.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&name)))
	}
	if d.cuGetErrorString != 0 {
		call(d.cuGetErrorString, uintptr(code), uintptr(unsafe.Pointer(&msg)))
	}
	text := goString(name)
	if m := goString(msg); m != "" {
		if text != "" {
			text += ": "
		}
		text += m
	}
	if text == "" {
		text = fmt.Sprintf("CUresult %d", code)
	}
	return &Error{Op: op, Code: code, Msg: text}
}

// device describes the GPU the backend runs on.
type device struct {
	ordinal      int
	handle       int32
	name         string
	major, minor int
	sms          int
	totalMem     uint64
	driverVer    int
}

// openDevice initialises the driver and queries device ordinal.
func (d *driver) openDevice(ordinal int) (*device, error) {
	if err := d.check("cuInit", call(d.cuInit, 0)); err != nil {
		return nil, err
	}
	var ver, count int32
	if err := d.check("cuDriverGetVersion", call(d.cuDriverGetVersion, uintptr(unsafe.Pointer(&ver)))); err != nil {
		return nil, err
	}
	if err := d.check("cuDeviceGetCount", call(d.cuDeviceGetCount, uintptr(unsafe.Pointer(&count)))); err != nil {
		return nil, err
	}
	if int(count) <= ordinal {
		return nil, &Error{Op: "cuDeviceGetCount", Code: cudaErrorNoDevice,
			Msg: fmt.Sprintf("%d CUDA devices, need device %d", count, ordinal)}
	}
	dev := &device{ordinal: ordinal, driverVer: int(ver)}
	if err := d.check("cuDeviceGet", call(d.cuDeviceGet, uintptr(unsafe.Pointer(&dev.handle)), uintptr(ordinal))); err != nil {
		return nil, err
	}
	attr := func(a int) (int, error) {
		var v int32
		err := d.check("cuDeviceGetAttribute", call(d.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(dev.handle)))
		return int(v), err
	}
	var err error
	if dev.major, err = attr(attrComputeCapMajor); err != nil {
		return nil, err
	}
	if dev.minor, err = attr(attrComputeCapMinor); err != nil {
		return nil, err
	}
	if dev.sms, err = attr(attrMultiprocessorCount); err != nil {
		return nil, err
	}
	buf := make([]byte, 256)
	if err := d.check("cuDeviceGetName", call(d.cuDeviceGetName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)-1), uintptr(dev.handle))); err != nil {
		return nil, err
	}
	dev.name = goString(&buf[0])
	var total uint64
	if err := d.check("cuDeviceTotalMem_v2", call(d.cuDeviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(dev.handle))); err != nil {
		return nil, err
	}
	dev.totalMem = total
	return dev, nil
}
