package backendtest

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"lgflow/tensor"
)

// TestCPU runs the suite on the CPU backend, where every comparison is
// exact: it checks that the suite itself runs and is consistent.
func TestCPU(t *testing.T) { Run(t, tensor.CPU) }

// TestMethodsCoverInterface fails when tensor.Backend gains a method the
// suite has no subtest for.
func TestMethodsCoverInterface(t *testing.T) {
	covered := Methods()
	it := reflect.TypeFor[tensor.Backend]()
	for i := range it.NumMethod() {
		if m := it.Method(i).Name; !slices.Contains(covered, m) {
			t.Errorf("Backend method %s has no conformance subtest", m)
		}
	}
	for _, m := range covered {
		if _, ok := it.MethodByName(m); !ok {
			t.Errorf("subtest %s names no Backend method", m)
		}
	}
}

func TestNear(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		got, want float64
		tl        tol
		ok        bool
	}{
		{1, 1, tol{}, true},
		{1, 1.0000001, tol{}, false},
		{1, 1.0000001, tol{1e-6, 0}, true},
		{1e-9, 0, tol{0, 1e-8}, true},
		{1e-7, 0, tol{1e-3, 1e-8}, false},
		{nan, nan, tol{}, true},
		{nan, 1, tol{1, 1}, false},
		{inf, inf, tol{}, true},
		{inf, -inf, tol{1, 1}, false},
		{1e300, inf, tol{1, 1}, false},
	}
	for _, c := range cases {
		if got := near(c.got, c.want, c.tl); got != c.ok {
			t.Errorf("near(%v, %v, %+v) = %v", c.got, c.want, c.tl, got)
		}
	}
}

// recorder counts reported errors.
type recorder struct{ errors int }

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }

// The checks must reject wrong values, shapes and backends.
func TestChecksCatchErrors(t *testing.T) {
	s := &suite{b: tensor.CPU}
	x := tensor.FromFloat64([]float64{1, 2, 3})
	cases := []struct {
		name      string
		got, want *tensor.Tensor
		tl        tol
		fails     bool
	}{
		{"equal", x.Clone(), x, tolFor(tensor.Float64, kExact), false},
		{"perturbed", tensor.FromFloat64([]float64{1, 2, 3.001}), x, tolFor(tensor.Float64, kReduce), true},
		{"within float32 tolerance", tensor.FromFloat64([]float64{1, 2, 3 + 1e-6}), x, tolFor(tensor.Float32, kReduce), false},
		{"shape", x.Reshape(3, 1), x, tolFor(tensor.Float64, kExact), true},
		{"dtype", x.To(tensor.Float32), x, tol{1, 1}, true},
		{"NaN", tensor.FromFloat64([]float64{1, math.NaN(), 3}), x, tol{1, 1}, true},
	}
	for _, c := range cases {
		r := &recorder{}
		s.check(r, c.name, c.got, c.want, c.tl)
		if (r.errors > 0) != c.fails {
			t.Errorf("%s: %d errors reported, want failure %v", c.name, r.errors, c.fails)
		}
	}
	r := &recorder{}
	(&suite{b: otherBackend{tensor.CPU}}).check(r, "backend", x.Clone(), x, tol{1, 1})
	if r.errors == 0 {
		t.Error("check accepted a result on the wrong backend")
	}
}

// otherBackend is a distinct Backend value.
type otherBackend struct{ tensor.Backend }
