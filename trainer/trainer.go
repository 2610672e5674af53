// Package trainer holds the pieces every lgflow training loop shares:
// bridging nn modules to optim, resumable checkpoints that hold a model's
// weights together with the optimiser state, and progress timing.
package trainer

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/optim"
	"lgflow/safetensors"
	"lgflow/tensor"
)

// OptimParams returns the parameters of m as the optimiser sees them. Every
// parameter gets a zeroed gradient buffer (so the optimiser and the tape
// share it from the first step on), and weight decay follows
// optim.DefaultDecay.
func OptimParams(m nn.Module) []optim.Param {
	ps := m.Params()
	out := make([]optim.Param, len(ps))
	for i, p := range ps {
		if p.V.Grad == nil {
			p.V.Grad = p.V.Value.NewLike()
		}
		out[i] = optim.Param{Name: p.Name, Value: p.V.Value, Grad: p.V.Grad, Decay: optim.DefaultDecay(p.Name, p.V.Value.Shape())}
	}
	return out
}

// ZeroGrad zeroes the gradient buffers of ps in place.
func ZeroGrad(ps []optim.Param) {
	for _, p := range ps {
		if p.Grad != nil {
			p.Grad.Zero()
		}
	}
}

// Metadata keys written by SaveState.
const (
	MetaStep   = "step"
	MetaConfig = "config"
	MetaKind   = "kind"
)

// SaveState writes a resumable checkpoint: the model's state dict under
// "model.", the optimiser state under "optim.", extra tensors (such as EMA
// weights) under "extra.", the step and the metadata. The write is atomic.
func SaveState(path string, m nn.Module, opt *optim.AdamW, step int, meta map[string]string, extra map[string]*tensor.Tensor) error {
	ts := make(map[string]*tensor.Tensor)
	for k, v := range extra {
		ts["extra."+k] = v
	}
	for k, v := range nn.StateDict(m) {
		ts["model."+k] = v
	}
	if opt != nil {
		for k, v := range opt.StateDict() {
			ts["optim."+k] = v
		}
	}
	md := maps.Clone(meta)
	if md == nil {
		md = map[string]string{}
	}
	md[MetaStep] = strconv.Itoa(step)
	return safetensors.Save(path, ts, md)
}

// State is what LoadState returns besides restoring the model.
type State struct {
	Step  int
	Meta  map[string]string
	Extra map[string]*tensor.Tensor
}

// LoadState restores a checkpoint written by SaveState into m (and opt,
// when not nil) and returns its step, metadata and extra tensors. Names,
// shapes and dtypes are checked; any mismatch is an error naming the tensors.
func LoadState(path string, m nn.Module, opt *optim.AdamW) (*State, error) {
	f, err := safetensors.Load(path)
	if err != nil {
		return nil, err
	}
	model := make(map[string]*tensor.Tensor)
	optState := make(map[string]*tensor.Tensor)
	st := &State{Meta: f.Metadata, Extra: make(map[string]*tensor.Tensor)}
	for k, v := range f.Tensors {
		switch {
		case strings.HasPrefix(k, "extra."):
			st.Extra[strings.TrimPrefix(k, "extra.")] = v
		case strings.HasPrefix(k, "model."):
			model[strings.TrimPrefix(k, "model.")] = v
		case strings.HasPrefix(k, "optim."):
			optState[strings.TrimPrefix(k, "optim.")] = v
		default:
			return nil, fmt.Errorf("%s: unexpected tensor %q (not a training checkpoint?)", path, k)
		}
	}
	if err := nn.LoadStateDict(m, model); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if opt != nil {
		if err := opt.LoadStateDict(optState); err != nil {
			return nil, fmt.Errorf("%s: optimiser state: %w", path, err)
		}
	}
	st.Step, err = strconv.Atoi(f.Metadata[MetaStep])
	if err != nil {
		return nil, fmt.Errorf("%s: bad or missing %q metadata: %v", path, MetaStep, err)
	}
	return st, nil
}

// MarshalMeta JSON-encodes v for a metadata value.
func MarshalMeta(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("trainer: metadata not marshalable: %v", err))
	}
	return string(b)
}

// UnmarshalMeta decodes the JSON metadata value under key into v.
func UnmarshalMeta(meta map[string]string, key string, v any) error {
	s, ok := meta[key]
	if !ok {
		return fmt.Errorf("missing %q metadata", key)
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("bad %q metadata: %w", key, err)
	}
	return nil
}

// Clock estimates the remaining time of a loop from its recent pace.
type Clock struct {
	start     time.Time
	startStep int
}

// NewClock starts a clock at the given step (non-zero when resuming).
func NewClock(step int) *Clock { return &Clock{start: time.Now(), startStep: step} }

// Elapsed returns the time since the clock started.
func (c *Clock) Elapsed() time.Duration { return time.Since(c.start) }

// Rate returns the steps per second since the clock started.
func (c *Clock) Rate(step int) float64 {
	el := time.Since(c.start).Seconds()
	if el <= 0 {
		return 0
	}
	return float64(step-c.startStep) / el
}

// ETA returns the estimated time to reach total steps from step.
func (c *Clock) ETA(step, total int) time.Duration {
	done := step - c.startStep
	if done <= 0 {
		return 0
	}
	per := time.Since(c.start) / time.Duration(done)
	return per * time.Duration(total-step)
}

// Step finishes one optimisation step on a recorded tape: it checks that
// the loss is finite, zeroes the gradients, back-propagates, releases the
// tape, checks every gradient for NaN or Inf (naming the parameter), clips
// the global gradient norm when clip > 0, and applies the optimiser. It
// returns the loss value. The tape is released on every path.
func Step(tp *autograd.Tape, loss *autograd.Var, params []optim.Param, opt *optim.AdamW, clip float64) (float64, error) {
	v := loss.Value.Item()
	if math.IsNaN(v) || math.IsInf(v, 0) {
		tp.Release()
		return v, fmt.Errorf("loss is %v", v)
	}
	ZeroGrad(params)
	tp.Backward(loss)
	tp.Release()
	if err := optim.CheckFinite(params); err != nil {
		return v, err
	}
	if clip > 0 {
		optim.ClipGradNorm(params, clip)
	}
	opt.Step()
	return v, nil
}
