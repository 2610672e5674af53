package nn

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"

	"lgflow/autograd"
	"lgflow/tensor"
)

// Param is a named parameter (or buffer) of a module. Names are dotted paths
// such as "rho.3.mlp.0.weight": composite modules prefix their children's
// names with the child's field name or index.
type Param struct {
	Name string
	V    *autograd.Var
}

// Module is anything with trainable parameters. Params returns them in a
// stable order with unique names.
type Module interface {
	Params() []Param
}

// BufferModule is implemented by modules with non-trainable state that
// belongs in a state dict (BatchNorm running statistics). Buffers are Vars
// that never require a gradient; optimisers must not see them.
type BufferModule interface {
	Buffers() []Param
}

// TrainModule is implemented by modules whose forward pass differs between
// training and evaluation (BatchNorm, Dropout, and composites holding them).
type TrainModule interface {
	Train(on bool)
}

// Prefixed returns ps with every name changed to prefix + "." + name (the
// slice is modified in place and returned). An empty prefix leaves names as
// they are.
func Prefixed(prefix string, ps []Param) []Param {
	if prefix == "" {
		return ps
	}
	for i := range ps {
		ps[i].Name = prefix + "." + ps[i].Name
	}
	return ps
}

// ParamsOf returns m's parameters with names prefixed by prefix; a nil
// interface gives nil.
func ParamsOf(prefix string, m Module) []Param {
	if m == nil {
		return nil
	}
	return Prefixed(prefix, m.Params())
}

// BuffersOf returns m's buffers with names prefixed by prefix, or nil if m
// has none (does not implement BufferModule).
func BuffersOf(prefix string, m Module) []Param {
	if m == nil {
		return nil
	}
	if b, ok := m.(BufferModule); ok {
		return Prefixed(prefix, b.Buffers())
	}
	return nil
}

// SetTrain switches m to training (on) or evaluation mode if it implements
// TrainModule; otherwise it does nothing.
func SetTrain(m any, on bool) {
	if t, ok := m.(TrainModule); ok {
		t.Train(on)
	}
}

// ZeroGrad zeroes the gradient of every parameter of m (keeping buffers).
func ZeroGrad(m Module) {
	for _, p := range m.Params() {
		p.V.ZeroGrad()
	}
}

// NumParams returns the number of scalar parameters of m.
func NumParams(m Module) int {
	n := 0
	for _, p := range m.Params() {
		n += p.V.Size()
	}
	return n
}

// StateDict returns m's parameters and buffers by name. The tensors are
// shared with the module, not copied: Clone them to keep a snapshot.
func StateDict(m Module) map[string]*tensor.Tensor {
	sd := make(map[string]*tensor.Tensor)
	for _, p := range m.Params() {
		sd[p.Name] = p.V.Value
	}
	for _, p := range BuffersOf("", m) {
		sd[p.Name] = p.V.Value
	}
	return sd
}

// LoadStateDict copies the tensors of sd into m's parameters and buffers of
// the same names. It checks everything before copying anything and returns
// one error listing every missing name, unexpected name, shape mismatch and
// dtype mismatch; m is unchanged when an error is returned.
func LoadStateDict(m Module, sd map[string]*tensor.Tensor) error {
	own := append(m.Params(), BuffersOf("", m)...)
	seen := make(map[string]bool, len(own))
	var errs []error
	for _, p := range own {
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("module has two parameters named %q", p.Name))
			continue
		}
		seen[p.Name] = true
		t, ok := sd[p.Name]
		switch {
		case !ok || t == nil:
			errs = append(errs, fmt.Errorf("missing %q (shape %v)", p.Name, p.V.Shape()))
		case t.DType() != p.V.DType():
			errs = append(errs, fmt.Errorf("%q: dtype %v, module has %v", p.Name, t.DType(), p.V.DType()))
		case !equalInts(t.Shape(), p.V.Shape()):
			errs = append(errs, fmt.Errorf("%q: shape %v, module has %v", p.Name, t.Shape(), p.V.Shape()))
		}
	}
	var extra []string
	for name := range sd {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		errs = append(errs, fmt.Errorf("unexpected %q", name))
	}
	if len(errs) > 0 {
		return fmt.Errorf("nn.LoadStateDict: %w", errors.Join(errs...))
	}
	for _, p := range own {
		tensor.Copy(p.V.Value, sd[p.Name])
	}
	return nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Fingerprint returns a hex SHA-256 digest of m's state (the names, dtypes,
// shapes and values of its parameters and buffers, in name order). Two
// modules have the same fingerprint exactly when they hold the same
// weights, which lets a checkpoint that depends on another model (a flow
// trained in an autoencoder's latent space) detect that it is being paired
// with different weights.
func Fingerprint(m Module) string {
	sd := StateDict(m)
	names := make([]string, 0, len(sd))
	for name := range sd {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	buf := make([]byte, 0, 1<<14)
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	for _, name := range names {
		t := sd[name]
		fmt.Fprintf(h, "%s|%v|%v|", name, t.DType(), t.Shape())
		c := t.ToBackend(tensor.CPU)
		if c.DType() == tensor.Float32 {
			for _, v := range c.Data32() {
				if len(buf)+4 > cap(buf) {
					flush()
				}
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			}
		} else {
			for _, v := range c.Data64() {
				if len(buf)+8 > cap(buf) {
					flush()
				}
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
			}
		}
		flush()
	}
	return hex.EncodeToString(h.Sum(nil))
}
