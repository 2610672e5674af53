package cuda_test

import (
	"fmt"

	"lgflow/cuda"
	"lgflow/tensor"
)

// Run on the GPU when there is one, else on the CPU: the results are the
// same.
func Example() {
	be := tensor.CPU
	if ok, _ := cuda.Available(); ok {
		if gpu, err := cuda.Init(); err == nil {
			be = gpu
		}
	}
	a := tensor.FromFloat32([]float32{1, 2, 3, 4}, 2, 2).ToBackend(be) // host -> device
	c := tensor.MatMul(nil, a, a, false, false)                        // computed where a lives
	fmt.Println(c.Float64s(), tensor.SumAll(c))                        // copied back to the host
	// Output: [7 10 15 22] 54
}

// Available says why there is no GPU, without initialising anything.
func ExampleAvailable() {
	if ok, why := cuda.Available(); !ok {
		fmt.Println("CUDA unavailable:", why)
		return
	}
	gpu, err := cuda.Default()
	if err != nil {
		fmt.Println("CUDA initialisation failed:", err)
		return
	}
	d := gpu.Device()
	fmt.Printf("%s, compute capability %d.%d, kernels for %s\n", d.Name, d.ComputeCapability[0], d.ComputeCapability[1], d.Arch)
}
