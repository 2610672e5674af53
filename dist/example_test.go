package dist_test

import (
	"fmt"

	"lgflow/dist"
)

// Data parallelism on the single-process communicator: the same code runs
// under mpirun, where Open returns the MPI engine and every rank holds the
// sum of every rank's gradients after AllReduceSum.
func Example() {
	c, err := dist.Open(dist.Options{}) // dist.Local() outside mpirun
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// Every rank starts from rank 0's weights.
	weights := []float32{0.5, -1, 2}
	if err := dist.Broadcast(c, weights, 0); err != nil {
		fmt.Println(err)
		return
	}
	// This rank's gradient, summed over its samples.
	grads := []float64{0.25, 1, -0.5, 3}
	if err := dist.AllReduceSum(c, grads); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("rank", c.Rank(), "of", c.Size(), weights, grads)
	// Output: rank 0 of 1 [0.5 -1 2] [0.25 1 -0.5 3]
}
