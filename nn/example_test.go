package nn_test

import (
	"fmt"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/tensor"
)

// A GINE layer on a directed triangle with categorical edges, followed by a
// state-dict round trip.
func Example() {
	rng := tensor.NewRNG(1)
	conv := nn.NewGINEConv(rng, 4, 8, nn.EdgeSpec{Classes: 2})
	edges := nn.Edges{Src: []int32{0, 1, 2}, Dst: []int32{1, 2, 0}}
	h := autograd.NewConst(tensor.RandN(rng, tensor.Float32, 3, 4))

	tp := autograd.NewTape()
	out := conv.Forward(tp, h, edges, nn.EdgeFeatures{Classes: []int32{0, 1, 1}})
	tp.Backward(tp.MeanAll(tp.Square(out)))
	tp.Release()

	for _, p := range conv.Params() {
		fmt.Println(p.Name, p.V.Shape())
	}
	fmt.Println("parameters:", nn.NumParams(conv))
	copyOf := nn.NewGINEConv(tensor.NewRNG(2), 4, 8, nn.EdgeSpec{Classes: 2})
	fmt.Println("load:", nn.LoadStateDict(copyOf, nn.StateDict(conv)))
	// Output:
	// mlp.0.weight [8 4]
	// mlp.0.bias [8]
	// mlp.1.weight [8 8]
	// mlp.1.bias [8]
	// edge.weight [2 4]
	// parameters: 120
	// load: <nil>
}

// DiT-style attention: real tokens attend only to real tokens and padding
// only to padding.
func ExampleMultiHeadSelfAttention() {
	rng := tensor.NewRNG(1)
	attn := nn.NewMultiHeadSelfAttention(rng, 8, 2, nn.WithNormalInit(0.02), nn.WithMaskMode(autograd.SameGroup))
	x := autograd.NewConst(tensor.RandN(rng, tensor.Float32, 2, 5, 8)) // (B, N, E)
	mask := tensor.FromFloat32([]float32{1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, 2, 5)
	tp := autograd.NoGrad()
	defer tp.Release()
	fmt.Println(attn.Forward(tp, x, mask).Shape())
	// Output: [2 5 8]
}
