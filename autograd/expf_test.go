package autograd

import (
	"math"
	"testing"
)

func TestExpfAccuracy(t *testing.T) {
	worst := 0.0
	for i := 0; i <= 200000; i++ {
		x := float32(-87 + 175*float64(i)/200000)
		got, want := float64(expf(x)), math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 3e-7 {
		t.Fatalf("expf worst relative error %g", worst)
	}
	if expf(-100) != 0 || expf(0) != 1 {
		t.Fatalf("expf(-100) = %v, expf(0) = %v", expf(-100), expf(0))
	}
}
