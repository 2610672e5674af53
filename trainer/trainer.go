// Package trainer holds the pieces every lgflow training loop shares:
// bridging nn modules to optim, resumable checkpoints that hold a model's
// weights together with the optimiser state, and progress timing.
package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lgflow/autograd"
	"lgflow/dist"
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

// Flatten packs m's parameters into flat tensors (nn.Flatten), matrices
// (the parameters optim.DefaultDecay decays) first, so that OptimParams and
// the optimisers built on it update them with a few kernel launches per
// step instead of a few per parameter. Call it after moving m to its
// backend and before OptimParams; it changes no value and no result.
func Flatten(m nn.Module) error {
	return nn.Flatten(m, func(name string, shape []int) int {
		if optim.DefaultDecay(name, shape) {
			return 0
		}
		return 1
	})
}

// ZeroGrad zeroes the gradient buffers of ps in place (optim.ZeroGrad:
// one fill per run of adjacent buffers).
func ZeroGrad(ps []optim.Param) { optim.ZeroGrad(ps) }

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

// OpenDir prepares dir for a training run: it creates it and, when resume
// is set and dir holds the training state stateFile, loads that state into
// m and opt (LoadState) and returns it; nil for a new run. A state that is
// there but does not load is an error ("resume: ...").
func OpenDir(dir, stateFile string, resume bool, m nn.Module, opt *optim.AdamW) (*State, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, stateFile)
	if !resume {
		return nil, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	st, err := LoadState(path, m, opt)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return st, nil
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

// ReadStateMeta returns the metadata of the training state at path, reading
// only its header, and checks that its MetaKind is kind (for example the
// configuration a run was written with, read before anything is built to
// load it into).
func ReadStateMeta(path, kind string) (map[string]string, error) {
	h, err := safetensors.LoadHeader(path)
	if err != nil {
		return nil, err
	}
	if got := h.Metadata[MetaKind]; got != kind {
		return nil, fmt.Errorf("%s is not a %s checkpoint (kind %q)", path, kind, got)
	}
	return h.Metadata, nil
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
// the global gradient norm when clip > 0, applies the optimiser and checks
// that the updated weights are finite (a learning rate far too large can
// overflow them from finite gradients). It returns the loss value. The
// tape is released on every path. After an error the weights may be
// spoilt: the caller must not save them.
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
	return v, checkWeights(params, opt)
}

// checkWeights returns an error naming the first parameter of ps whose
// value holds a NaN or an infinity after an update by opt, or nil.
func checkWeights(ps []optim.Param, opt *optim.AdamW) error {
	values := make([]optim.Param, len(ps))
	for i, p := range ps {
		values[i] = optim.Param{Name: p.Name, Value: p.Value, Grad: p.Value}
	}
	var nf *optim.NonFiniteError
	if err := optim.CheckFinite(values); !errors.As(err, &nf) {
		return err
	}
	return fmt.Errorf("the optimiser step made weight %q (shape %v) %v at flat index %d (learning rate %g too large?)",
		nf.Param, nf.Shape, nf.Value, nf.Index, opt.LR())
}

// Stepper finishes the optimisation steps of a training loop like Step,
// without making the loop wait for a GPU at every step. With the loss on
// the CPU it is Step. On another backend the checks are queued on the
// device instead: the loss and every gradient are flagged when not finite
// (optim.NonFiniteCheck), and the weights too when the flag is read: every
// CheckEvery steps, by Check, and by the loop before it saves anything.
// The loss is copied on the device and read only when Loss is called (at
// logging steps). So a step with a NaN is reported up to CheckEvery steps
// late, with the weights already spoilt: the loop must stop without saving
// them, which checking before every save guarantees. Gradient clipping,
// when on, still reads the gradient norm at every step.
type Stepper struct {
	params []optim.Param
	opt    *optim.AdamW
	clip   float64

	// CheckEvery is the number of device steps between reads of the
	// finiteness flag (0: DefaultCheckEvery).
	CheckEvery int

	// Comm, when it has more than one rank, makes every step data
	// parallel: each rank back-propagates the loss of its share of the
	// batch (scaled so that the ranks' losses sum to the batch's loss),
	// and the losses and gradients are summed over the ranks after
	// Backward, before the finiteness checks, clipping and the update, so
	// every rank takes the same decision and the same step (see
	// distStep). Nil or one rank: single-process steps.
	Comm dist.Comm

	check   optim.NonFiniteCheck
	pending int            // device steps since the flag was last read
	loss    *tensor.Tensor // device copy of the latest loss
	host    float64        // the latest loss of a CPU step
}

// DefaultCheckEvery is Stepper's default interval between flag reads.
const DefaultCheckEvery = 25

// NewStepper returns a Stepper for params (from OptimParams) updated by
// opt, clipping the global gradient norm to clip when clip > 0.
func NewStepper(params []optim.Param, opt *optim.AdamW, clip float64) *Stepper {
	return &Stepper{params: params, opt: opt, clip: clip}
}

// Step zeroes the gradients, back-propagates loss (a one-element Var
// recorded on tp), releases the tape, clips and applies the optimiser. On
// the CPU it checks the loss and the gradients at once, as Step does; on
// another backend it queues the checks and returns the error of a flag
// read when one is due. The tape is released on every path.
func (s *Stepper) Step(tp *autograd.Tape, loss *autograd.Var) error {
	return s.StepWith(tp, loss, nil)
}

// StepWith is Step that, in data-parallel training (Comm), also sums
// extra (the loss terms a loop logs, each this rank's share) over the
// ranks in place, with the loss. Without Comm extra is left as it is.
func (s *Stepper) StepWith(tp *autograd.Tape, loss *autograd.Var, extra []float64) error {
	if Distributed(s.Comm) {
		return s.distStep(tp, loss, extra)
	}
	if loss.Value.Backend() == tensor.CPU {
		v, err := Step(tp, loss, s.params, s.opt, s.clip)
		s.host, s.loss = v, nil
		return err
	}
	if loss.Size() != 1 {
		tp.Release()
		return fmt.Errorf("trainer: loss has shape %v, want one element", loss.Shape())
	}
	lv := loss.Value.Reshape(1)
	if s.loss == nil || s.loss.Backend() != lv.Backend() || s.loss.DType() != lv.DType() {
		s.loss = tensor.NewOn(lv.Backend(), lv.DType(), 1)
	}
	tensor.Copy(s.loss, lv)
	s.check.Add(s.loss)
	ZeroGrad(s.params)
	tp.Backward(loss)
	tp.Release()
	s.check.AddGrads(s.params)
	if s.clip > 0 {
		optim.ClipGradNorm(s.params, s.clip)
	}
	s.opt.Step()
	s.pending++
	every := s.CheckEvery
	if every <= 0 {
		every = DefaultCheckEvery
	}
	if s.pending >= every {
		return s.Check()
	}
	return nil
}

// distStep is Step with Comm's ranks: the loss (and extra) are summed
// over the ranks first, so that a non-finite loss on any rank stops every
// rank; then the gradients, after Backward and before the finiteness
// check, clipping and the update. It waits for the device at every step.
func (s *Stepper) distStep(tp *autograd.Tape, loss *autograd.Var, extra []float64) error {
	if loss.Size() != 1 {
		tp.Release()
		return fmt.Errorf("trainer: loss has shape %v, want one element", loss.Shape())
	}
	buf := append([]float64{loss.Value.Item()}, extra...)
	if err := s.Comm.AllReduceSum64(buf); err != nil {
		tp.Release()
		return fmt.Errorf("trainer: summing the loss over %d ranks: %w", s.Comm.Size(), err)
	}
	copy(extra, buf[1:])
	v := buf[0]
	s.host, s.loss = v, nil
	if math.IsNaN(v) || math.IsInf(v, 0) {
		tp.Release()
		return fmt.Errorf("loss (summed over %d ranks) is %v", s.Comm.Size(), v)
	}
	ZeroGrad(s.params)
	tp.Backward(loss)
	tp.Release()
	if err := AllReduceGrads(s.Comm, s.params); err != nil {
		return err
	}
	if err := optim.CheckFinite(s.params); err != nil {
		return err
	}
	if s.clip > 0 {
		optim.ClipGradNorm(s.params, s.clip)
	}
	s.opt.Step()
	return checkWeights(s.params, s.opt)
}

// Check flags the weights, reads the device-side finiteness flag (waiting
// for the device) and returns an error if a loss or gradient of a step
// since the last read, or a weight now, is NaN or infinite; the model's
// weights are then not usable. Call it before saving weights. It returns
// nil at once when nothing is pending (always on the CPU, where Step
// checks at once).
func (s *Stepper) Check() error {
	if s.pending == 0 {
		return nil
	}
	n := s.pending
	s.pending = 0
	for _, p := range s.params {
		s.check.Add(p.Value)
	}
	if !s.check.Read() {
		return nil
	}
	what := fmt.Sprintf("loss %v", s.loss.Item())
	if err := optim.CheckFinite(s.params); err != nil {
		what = err.Error()
	} else if l := s.loss.Item(); !math.IsNaN(l) && !math.IsInf(l, 0) {
		if err := checkWeights(s.params, s.opt); err != nil {
			what = err.Error()
		}
	}
	return fmt.Errorf("a non-finite loss, gradient or weight in the last %d steps (latest step: %s)", n, what)
}

// Loss returns the loss of the latest step (waiting for the device on a
// GPU), or 0 before the first step.
func (s *Stepper) Loss() float64 {
	if s.loss == nil {
		return s.host
	}
	return s.loss.Item()
}
