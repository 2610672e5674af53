package spectral_test

import (
	"context"
	"fmt"

	"lgflow/graph"
	"lgflow/spectral"
)

func ExampleEigen() {
	// The 6-cycle: L = D - A has eigenvalues 2 - 2cos(2πj/6).
	g := graph.New(6)
	for i := 0; i < 6; i++ {
		g.MustAddEdge(i, (i+1)%6)
	}
	e, err := spectral.Eigen(g, 8, spectral.Options{})
	if err != nil {
		panic(err)
	}
	for j := 0; j < e.K; j++ {
		fmt.Printf("slot %d: λ = %.3f  present %v\n", j, e.Values[j], e.Mask[j])
	}
	// Output:
	// slot 0: λ = 0.000  present true
	// slot 1: λ = 1.000  present true
	// slot 2: λ = 1.000  present true
	// slot 3: λ = 3.000  present true
	// slot 4: λ = 3.000  present true
	// slot 5: λ = 4.000  present true
	// slot 6: λ = 0.000  present false
	// slot 7: λ = 0.000  present false
}

func ExampleEigen_magnetic() {
	// A directed 4-cycle with potential q = 0.1: the eigenvalues of L_q
	// are 2 - 2cos(2π(j/4 + q)), j = 0..3.
	g := graph.NewDirected(4)
	for i := 0; i < 4; i++ {
		g.MustAddEdge(i, (i+1)%4)
	}
	e, err := spectral.Eigen(g, 4, spectral.Options{Laplacian: spectral.Magnetic, Q: 0.1, FixedQ: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", e.Values)
	// The first eigenvector is the constant Fourier mode; its phase is
	// fixed so that the first entry of largest modulus is real positive.
	fmt.Printf("%.4f %.4f\n", e.Vectors[0], e.Imag[0])
	// Output:
	// [0.3820 0.8244 3.1756 3.6180]
	// 0.5000 0.0000
}

func ExamplePreprocess() {
	gs := []*graph.Graph{graph.New(3), graph.New(5)}
	gs[0].MustAddEdge(0, 1)
	gs[0].MustAddEdge(1, 2)
	for i := 1; i < 5; i++ {
		gs[1].MustAddEdge(0, i)
	}
	fs, err := spectral.Preprocess(context.Background(), gs, spectral.PreprocessOptions{K: 4}, nil)
	if err != nil {
		panic(err)
	}
	for _, f := range fs {
		fmt.Printf("%d %.3f %v %v\n", f.N, f.Values, f.Mask, f.Orbits)
	}
	// Output:
	// 3 [0.000 1.000 3.000 0.000] [true true true false] [1 0 1]
	// 5 [0.000 1.000 1.000 1.000] [true true true true] [0 1 1 1 1]
}
