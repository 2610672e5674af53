package tensor_test

import (
	"fmt"
	"math"

	"lgflow/tensor"
)

// Broadcasting a bias row over a batch, into a preallocated destination.
func Example() {
	x := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	bias := tensor.FromFloat32([]float32{10, 20, 30}, 3)
	y := tensor.New(tensor.Float32, 2, 3)
	tensor.Add(y, x, bias) // y = x + bias, no allocation
	fmt.Println(y.Float32s())
	fmt.Println(tensor.Sum(nil, y, 0, false).Float32s()) // column sums
	// Output:
	// [11 22 33 14 25 36]
	// [25 47 69]
}

// Views share memory with their source.
func ExampleTensor_T() {
	x := tensor.FromFloat64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	xt := x.T() // (3, 2) view, no copy
	xt.Set(0, 2, 1)
	fmt.Println(x.Float64s(), xt.IsContiguous())
	// Output: [1 2 3 4 5 0] false
}

func ExampleMatMul() {
	a := tensor.FromFloat32([]float32{1, 2, 3, 4}, 2, 2)
	b := tensor.FromFloat32([]float32{5, 6, 7, 8}, 2, 2)
	fmt.Println(tensor.MatMul(nil, a, b, false, false).Float32s())
	fmt.Println(tensor.MatMul(nil, a, b, false, true).Float32s()) // a·bᵀ
	// Output:
	// [19 22 43 50]
	// [17 23 39 53]
}

// Message passing on an edge list: gather source features, scatter-add
// them into destination nodes.
func ExampleScatterAdd() {
	h := tensor.FromFloat32([]float32{1, 10, 2, 20, 3, 30}, 3, 2) // 3 nodes
	src, dst := []int32{0, 1, 2, 0}, []int32{1, 2, 0, 2}          // 4 edges
	msg := tensor.Gather(nil, h, src)
	agg := tensor.New(tensor.Float32, 3, 2)
	tensor.ScatterAdd(agg, msg, dst)
	fmt.Println(agg.Float32s())
	// Output: [3 30 1 10 3 30]
}

func ExampleSegmentMean() {
	x := tensor.FromFloat64([]float64{1, 2, 3, 4, 5}, 5, 1)
	graphOf := []int32{0, 0, 1, 1, 1} // two graphs in a batch
	fmt.Println(tensor.SegmentMean(nil, x, graphOf, 2).Float64s())
	// Output: [1.5 4]
}

func ExampleSoftmaxCrossEntropy() {
	logits := tensor.FromFloat64([]float64{2, 0, 0, 0, 0, 0}, 2, 3)
	prob := tensor.New(tensor.Float64, 2, 3)
	loss := tensor.SoftmaxCrossEntropy(prob, logits, []int32{0, 2}, nil)
	fmt.Printf("%.4f %.4f\n", loss, -math.Log(math.E*math.E/(math.E*math.E+2))-math.Log(1.0/3))
	grad := tensor.SoftmaxCrossEntropyBackward(nil, prob, []int32{0, 2}, nil, 0.5)
	fmt.Printf("%.4f\n", grad.Float64s())
	// Output:
	// 1.3382 1.3382
	// [-0.1065 0.0533 0.0533 0.1667 0.1667 -0.3333]
}

// A padded batch: the second sequence has one real token.
func ExampleAttention() {
	q := tensor.Full(tensor.Float32, 1, 2, 1, 2, 1) // (B=2, H=1, N=2, Dh=1)
	k := tensor.FromFloat32([]float32{0, 1, 0, 1}, 2, 1, 2, 1)
	v := tensor.FromFloat32([]float32{1, 3, 1, 3}, 2, 1, 2, 1)
	mask := tensor.FromFloat32([]float32{1, 1, 1, 0}, 2, 2)
	probs := tensor.New(tensor.Float32, 2, 1, 2, 2)
	out := tensor.Attention(nil, probs, q, k, v, mask, 1)
	fmt.Printf("%.4f\n", out.Float32s())
	// Output: [2.4621 2.4621 1.0000 1.0000]
}

func ExampleNewRNG() {
	r := tensor.NewRNG(42)
	w := tensor.RandN(r, tensor.Float32, 2, 2) // same numbers on every machine
	fmt.Println(w.Shape(), r.Intn(10))
	// Output: [2 2] 1
}

func ExampleLayerNorm() {
	x := tensor.FromFloat64([]float64{1, 2, 3, 4}, 1, 4)
	mean, rstd := tensor.New(tensor.Float64, 1), tensor.New(tensor.Float64, 1)
	y := tensor.LayerNorm(nil, mean, rstd, x, nil, nil, 0)
	fmt.Printf("%.4f mean=%v var=%.2f\n", y.Float64s(), mean.Item(), 1/(rstd.Item()*rstd.Item()))
	// Output: [-1.3416 -0.4472 0.4472 1.3416] mean=2.5 var=1.25
}
