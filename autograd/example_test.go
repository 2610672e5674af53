package autograd_test

import (
	"fmt"

	"lgflow/autograd"
	"lgflow/tensor"
)

// Fit y = 2x + 1 with a hand-rolled SGD loop: one tape per step, released
// after the update so that every buffer is reused.
func Example() {
	x := autograd.NewConst(tensor.FromFloat64([]float64{0, 1, 2, 3}, 4, 1))
	y := autograd.NewConst(tensor.FromFloat64([]float64{1, 3, 5, 7}, 4, 1))
	w := autograd.NewParam(tensor.FromFloat64([]float64{0}, 1, 1))
	b := autograd.NewParam(tensor.FromFloat64([]float64{0}, 1))
	tp := autograd.NewTape()
	for step := 0; step < 500; step++ {
		loss := tp.MSE(tp.Linear(x, w, b), y, nil)
		tp.Backward(loss)
		for _, p := range []*autograd.Var{w, b} {
			tensor.AddScaled(p.Value, p.Value, p.Grad, -0.1)
			p.ZeroGrad()
		}
		tp.Release()
	}
	fmt.Printf("w = %.3f, b = %.3f\n", w.Value.Item(), b.Value.Item())
	// Output: w = 2.000, b = 1.000
}

// Gradients of a scalar function: d/dx Σ x² = 2x.
func ExampleTape_Backward() {
	x := autograd.NewParam(tensor.FromFloat64([]float64{1, -2, 3}, 3))
	tp := autograd.NewTape()
	defer tp.Release()
	tp.Backward(tp.SumAll(tp.Square(x)))
	fmt.Println(x.Grad.Float64s())
	// Output: [2 -4 6]
}

// A no-grad tape computes values without recording (sampling,
// self-conditioning); copy results out before Release.
func ExampleNoGrad() {
	w := autograd.NewParam(tensor.FromFloat64([]float64{1, 2, 3, 4}, 2, 2))
	tp := autograd.NoGrad()
	y := tp.MatMul(w, w, false, false)
	out := y.Value.Clone()
	fmt.Println(tp.Len(), y.RequiresGrad(), out.Float64s())
	tp.Release()
	// Output: 0 false [7 10 15 22]
}

// GINEAggregate sums ReLU(h_j + e_k) over the incoming edges of each node;
// with a class table the edge term is looked up, not computed.
func ExampleTape_GINEAggregate() {
	h := autograd.NewConst(tensor.FromFloat64([]float64{1, -1, 2, 3, 0, 1}, 3, 2))
	table := autograd.NewConst(tensor.FromFloat64([]float64{0, 0, 1, 1}, 2, 2))
	src, dst, cls := []int32{0, 2, 1}, []int32{1, 1, 0}, []int32{0, 1, 1}
	tp := autograd.NoGrad()
	defer tp.Release()
	fmt.Println(tp.GINEAggregate(h, table, src, dst, cls).Value.Float64s())
	// Output: [3 4 2 2 0 0]
}

// CheckGrad compares a backward pass with central finite differences.
func ExampleCheckGrad() {
	a := autograd.NewParam(tensor.FromFloat64([]float64{0.5, -1, 2}, 3))
	err := autograd.CheckGrad(func(tp *autograd.Tape) *autograd.Var {
		return tp.Mul(tp.Tanh(a), tp.Exp(a))
	}, []*autograd.Var{a}, 1e-6, 1e-6)
	fmt.Println(err)
	// Output: <nil>
}
