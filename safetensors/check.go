package safetensors

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"lgflow/tensor"
)

// ErrMismatch is wrapped by the error of CheckAgainst.
var ErrMismatch = errors.New("tensors do not match")

// CheckAgainst compares the names, shapes and dtypes (not the values) of
// got with those of expected, for example a loaded checkpoint against a
// freshly built model. It returns nil if they agree, and otherwise one
// error wrapping ErrMismatch that lists every missing name, every extra
// name and every shape or dtype mismatch, one per line, in sorted order.
func CheckAgainst(expected, got map[string]*tensor.Tensor) error {
	var missing, extra, diff []string
	for name, e := range expected {
		g, ok := got[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		switch {
		case e == nil || g == nil:
			if e != g {
				diff = append(diff, fmt.Sprintf("%s: one of the tensors is nil", quote(name)))
			}
		case !slices.Equal(e.Shape(), g.Shape()):
			diff = append(diff, fmt.Sprintf("%s: shape %v, expected %v", quote(name), g.Shape(), e.Shape()))
		case e.DType() != g.DType():
			diff = append(diff, fmt.Sprintf("%s: dtype %v, expected %v", quote(name), g.DType(), e.DType()))
		}
	}
	for name := range got {
		if _, ok := expected[name]; !ok {
			extra = append(extra, name)
		}
	}
	if len(missing)+len(extra)+len(diff) == 0 {
		return nil
	}
	slices.Sort(missing)
	slices.Sort(extra)
	slices.Sort(diff)
	var b strings.Builder
	fmt.Fprintf(&b, "%d missing, %d unexpected, %d mismatched", len(missing), len(extra), len(diff))
	for _, n := range missing {
		fmt.Fprintf(&b, "\n  missing %s", quote(n))
	}
	for _, n := range extra {
		fmt.Fprintf(&b, "\n  unexpected %s", quote(n))
	}
	for _, d := range diff {
		fmt.Fprintf(&b, "\n  %s", d)
	}
	return &Error{Kind: ErrMismatch, Detail: b.String()}
}
