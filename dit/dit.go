// Package dit implements the Diffusion Transformer used as LG-Flow's
// denoiser: a permutation-equivariant set transformer over tokens of
// dimension d, conditioned on a scalar time through adaptive layer norm
// (adaLN).
//
// The network knows nothing of graphs. It maps a padded batch of token sets
// x (B, N, d), a time per set t (B), a token mask (B, N) with 1 for real
// tokens, and an optional self-conditioning input (B, N, d) to an output of
// shape (B, N, d) that is zero on padded tokens. There is no positional
// encoding: permuting the real tokens of a set permutes the output the same
// way, and padding tokens never influence real ones. (The reference lets
// token i attend to j iff mask_i == mask_j; lgflow masks padded keys, which
// gives real tokens exactly the same outputs and is faster, since padded
// rows only ever reach the masked-out output.)
//
// The architecture follows the LG-Flow reference code (docs/design.md,
// "The denoiser: DiT"):
// input Linear(2d -> E) on [x, x_sc]; a 256-dimensional sinusoidal time
// embedding (cos first) into Linear(256 -> E) -> SiLU -> Linear(E -> E);
// blocks with shift/scale/gate adaLN modulation of an attention branch and an
// MLP branch (LayerNorms with affine parameters, eps 1e-5); a final affine
// LayerNorm and Linear(E -> d). Every Linear weight is initialised
// N(0, 0.02²) and every bias 0.
//
// Optionally the network is conditioned on a class per set
// (Config.Classes) and/or a real vector per set (Config.CondDim): their
// embeddings are added to the time embedding that every block's adaLN
// modulates with, as DiT does with class labels. Each has a learned null
// embedding for sets without a condition (classifier-free guidance trains
// with conditions dropped and samples with both). The condition paths start
// at zero, so a conditional network starts out computing exactly what the
// unconditional one with the same seed does; without them (Classes and
// CondDim 0) the network, its parameters and its outputs are those of the
// unconditional DiT.
package dit

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/tensor"
)

// Config describes a DiT. The zero value is not usable; start from a preset.
type Config struct {
	// Dim is the token (latent) dimension d.
	Dim int `json:"dim"`
	// Width is the hidden width E; it must be divisible by Heads.
	Width int `json:"width"`
	// Depth is the number of transformer blocks.
	Depth int `json:"depth"`
	// Heads is the number of attention heads.
	Heads int `json:"heads"`
	// MLPRatio sets the MLP hidden width to MLPRatio*Width (4 in DiT).
	MLPRatio float64 `json:"mlp_ratio"`
	// SelfCond adds the self-conditioning input: the input projection takes
	// [x, x_sc] of width 2d instead of d.
	SelfCond bool `json:"self_cond"`
	// TimeFreqDim is the size of the sinusoidal time embedding (256).
	TimeFreqDim int `json:"time_freq_dim"`
	// InitStd is the standard deviation of the Linear weights (0.02).
	InitStd float64 `json:"init_std"`
	// Classes, when positive, conditions the network on a class per set in
	// [0, Classes): a table of Classes+1 learned embeddings of width E (the
	// last for the null class of a set without one), added to the time
	// embedding. 0: no classes.
	Classes int `json:"classes,omitempty"`
	// CondDim, when positive, conditions the network on a real vector of
	// CondDim values per set: an MLP CondDim -> E -> E (SiLU between) whose
	// output is added to the time embedding, with a learned null embedding
	// in its place for a set whose vector is dropped. 0: no vector.
	CondDim int `json:"cond_dim,omitempty"`
}

// Conditional reports whether c conditions the network on a class or a
// vector per set.
func (c Config) Conditional() bool { return c.Classes > 0 || c.CondDim > 0 }

// Preset returns the named configuration for latent dimension dim:
// "T" (DiT-T: 6 blocks, 6 heads, width 384), "S" (12, 6, 384),
// "B" (12, 12, 768), and the CPU presets "small" (4 blocks, 4 heads, 128)
// and "tiny" (2 blocks, 2 heads, 32).
func Preset(name string, dim int) (Config, error) {
	c := Config{Dim: dim, MLPRatio: 4, SelfCond: true, TimeFreqDim: 256, InitStd: 0.02}
	switch name {
	case "T":
		c.Depth, c.Heads, c.Width = 6, 6, 384
	case "S":
		c.Depth, c.Heads, c.Width = 12, 6, 384
	case "B":
		c.Depth, c.Heads, c.Width = 12, 12, 768
	case "small":
		c.Depth, c.Heads, c.Width = 4, 4, 128
	case "tiny":
		c.Depth, c.Heads, c.Width = 2, 2, 32
	default:
		return Config{}, fmt.Errorf("dit: unknown preset %q (want T, S, B, small or tiny)", name)
	}
	return c, c.Validate()
}

// Validate reports whether c describes a buildable network.
func (c Config) Validate() error {
	switch {
	case c.Dim <= 0:
		return fmt.Errorf("dit: Dim must be positive, got %d", c.Dim)
	case c.Width <= 0 || c.Depth <= 0 || c.Heads <= 0:
		return fmt.Errorf("dit: Width, Depth and Heads must be positive, got %d, %d, %d", c.Width, c.Depth, c.Heads)
	case c.Width%c.Heads != 0:
		return fmt.Errorf("dit: Width %d is not divisible by Heads %d", c.Width, c.Heads)
	case c.MLPRatio <= 0:
		return fmt.Errorf("dit: MLPRatio must be positive, got %g", c.MLPRatio)
	case c.TimeFreqDim <= 0 || c.TimeFreqDim%2 != 0:
		return fmt.Errorf("dit: TimeFreqDim must be positive and even, got %d", c.TimeFreqDim)
	case c.Classes < 0 || c.CondDim < 0:
		return fmt.Errorf("dit: Classes and CondDim must not be negative, got %d and %d", c.Classes, c.CondDim)
	}
	return nil
}

// block is one adaLN transformer block.
type block struct {
	ada  *nn.Linear // E -> 6E: shift1, scale1, gate1, shift2, scale2, gate2
	ln1  *nn.LayerNorm
	attn *nn.MultiHeadSelfAttention
	ln2  *nn.LayerNorm
	mlp  *nn.MLP
}

func (b *block) Params() []nn.Param {
	var ps []nn.Param
	ps = append(ps, nn.ParamsOf("adaLN", b.ada)...)
	ps = append(ps, nn.ParamsOf("norm1", b.ln1)...)
	ps = append(ps, nn.ParamsOf("attn", b.attn)...)
	ps = append(ps, nn.ParamsOf("norm2", b.ln2)...)
	ps = append(ps, nn.ParamsOf("mlp", b.mlp)...)
	return ps
}

// Model is a DiT. It is safe to run Forward from several goroutines at
// once with separate tapes, as long as nobody updates the parameters.
type Model struct {
	Cfg    Config
	in     *nn.Linear
	time1  *nn.Linear
	time2  *nn.Linear
	blocks []*block
	norm   *nn.LayerNorm
	out    *nn.Linear
	freqs  []float64

	// The condition paths (nil without them): classEmb is the table of
	// class embeddings (Classes+1 rows, the last the null class); cond1
	// and cond2 are the vector's MLP, and condNull (one row) the
	// embedding of a dropped vector.
	classEmb     *nn.Embedding
	cond1, cond2 *nn.Linear
	condNull     *nn.Embedding
}

// New builds a DiT with weights drawn from r.
func New(cfg Config, r *tensor.RNG, opts ...nn.Option) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	E := cfg.Width
	lin := append([]nn.Option{nn.WithNormalInit(cfg.InitStd)}, opts...)
	in := cfg.Dim
	if cfg.SelfCond {
		in = 2 * cfg.Dim
	}
	m := &Model{Cfg: cfg}
	m.in = nn.NewLinear(r, in, E, lin...)
	m.time1 = nn.NewLinear(r, cfg.TimeFreqDim, E, lin...)
	m.time2 = nn.NewLinear(r, E, E, lin...)
	hidden := int(math.Round(cfg.MLPRatio * float64(E)))
	for range cfg.Depth {
		b := &block{
			ada:  nn.NewLinear(r, E, 6*E, lin...),
			ln1:  nn.NewLayerNorm(E, 1e-5, opts...),
			attn: nn.NewMultiHeadSelfAttention(r, E, cfg.Heads, lin...),
			ln2:  nn.NewLayerNorm(E, 1e-5, opts...),
			mlp:  nn.NewMLP(r, []int{E, hidden, E}, append(lin, nn.WithActivation(nn.GELU))...),
		}
		m.blocks = append(m.blocks, b)
	}
	m.norm = nn.NewLayerNorm(E, 1e-5, opts...)
	m.out = nn.NewLinear(r, E, cfg.Dim, lin...)
	// The condition paths draw from r after everything else, so the
	// shared parameters are those of the unconditional network with the
	// same seed, and start at zero (the vector MLP's last layer, the
	// class table, the null embedding), so the condition adds nothing
	// until training teaches it to.
	if cfg.Classes > 0 {
		m.classEmb = nn.NewEmbedding(r, cfg.Classes+1, E, lin...)
		m.classEmb.W.Value.Zero()
	}
	if cfg.CondDim > 0 {
		m.cond1 = nn.NewLinear(r, cfg.CondDim, E, lin...)
		m.cond2 = nn.NewLinear(r, E, E, lin...)
		m.cond2.W.Value.Zero()
		m.condNull = nn.NewEmbedding(r, 1, E, lin...)
		m.condNull.W.Value.Zero()
	}
	half := cfg.TimeFreqDim / 2
	m.freqs = make([]float64, half)
	for k := range half {
		m.freqs[k] = math.Exp(-math.Log(1e4) * float64(k) / float64(half))
	}
	return m, nil
}

// Params lists the trainable parameters with dotted names. A conditional
// network's come after t_embed: y_embed.weight (the class table,
// Classes+1 rows, the null class last), cond_embed.0 and cond_embed.2
// (the vector's MLP) and cond_null.weight (the dropped vector's
// embedding, one row).
func (m *Model) Params() []nn.Param {
	var ps []nn.Param
	ps = append(ps, nn.ParamsOf("x_embed", m.in)...)
	ps = append(ps, nn.ParamsOf("t_embed.0", m.time1)...)
	ps = append(ps, nn.ParamsOf("t_embed.2", m.time2)...)
	if m.classEmb != nil {
		ps = append(ps, nn.ParamsOf("y_embed", m.classEmb)...)
	}
	if m.cond1 != nil {
		ps = append(ps, nn.ParamsOf("cond_embed.0", m.cond1)...)
		ps = append(ps, nn.ParamsOf("cond_embed.2", m.cond2)...)
		ps = append(ps, nn.ParamsOf("cond_null", m.condNull)...)
	}
	for i, b := range m.blocks {
		ps = append(ps, nn.ParamsOf(fmt.Sprintf("blocks.%d", i), b)...)
	}
	ps = append(ps, nn.ParamsOf("final_norm", m.norm)...)
	ps = append(ps, nn.ParamsOf("final", m.out)...)
	return ps
}

// Backend returns the backend the parameters live on (nn.ToBackend moves
// them).
func (m *Model) Backend() tensor.Backend { return m.in.W.Value.Backend() }

// TimeEmbedding returns the sinusoidal embedding of t (length B) as a
// (B, TimeFreqDim) tensor of the given dtype: [cos(t f_k), sin(t f_k)] with
// f_k = exp(-ln(1e4) k / (TimeFreqDim/2)).
func (m *Model) TimeEmbedding(dt tensor.DType, t []float64) *tensor.Tensor {
	half := len(m.freqs)
	e := tensor.New(dt, len(t), 2*half)
	for b, tb := range t {
		for k, f := range m.freqs {
			e.Set(math.Cos(tb*f), b, k)
			e.Set(math.Sin(tb*f), b, half+k)
		}
	}
	return e
}

// EvalTokens is the number of tokens (sets times padded set size) in each
// group that Forward evaluates at once when its tape records nothing and x
// is on the CPU; EvalGroups groups run concurrently. A no-grad tape keeps
// every intermediate until it is released: sampling 256 planar graphs
// (16,384 tokens) in one pass would keep about 800 MB alive. Groups of
// 2,048 tokens, each block on a tape released after the next block
// (forward), bound that to about 230 MB peak with the planar models. Two
// groups at a time keep two cores busy where one group leaves them idle a
// fifth of the time (its serial stretches and the ends of its kernels):
// sampling 256 planar graphs on the two-core Zen 5 took 10.7-11.4 s
// against 13.0-14.5 s with one group of 4,096 at a time. Two groups of
// 4,096 (375 MB) were 0.2-0.3 s faster once and no faster, with 3,072 too,
// after later kernel changes. Sets never interact and the kernels' results
// do not depend on the number of threads, so the result is the same bit
// for bit.
const EvalTokens = 2048

// EvalGroups is the number of token groups that a no-grad forward pass on
// the CPU evaluates concurrently (at most GOMAXPROCS); see EvalTokens.
const EvalGroups = 2

// Forward computes the network output for x (B, N, d) at times t (len B)
// with token mask (B, N) (1 = real token; nil = all real) and the
// self-conditioning input xsc (B, N, d), which may be nil (treated as
// zeros). The result has shape (B, N, d) and is zero on padded tokens. It
// is computed on x's backend, where the parameters must be (nn.ToBackend);
// mask may be on the CPU.
//
// When tp records nothing (autograd.NoGrad) and x is on the CPU, Forward
// evaluates the sets in groups of about EvalTokens tokens, EvalGroups at a
// time, each on a tape of its own that it releases at once, and returns a
// constant holding the result: memory stays bounded whatever B is, and the
// result is the same. A panic in a group (a failing device, a bad shape)
// reaches the caller as the panic of Forward itself.
func (m *Model) Forward(tp *autograd.Tape, x *autograd.Var, t []float64, mask *tensor.Tensor, xsc *autograd.Var) *autograd.Var {
	return m.ForwardCond(tp, x, t, mask, xsc, nil)
}

// Cond is the condition of each set of a batch of B sets (ForwardCond).
// A nil *Cond gives every set the null condition: the null class and a
// dropped vector.
type Cond struct {
	// Class is each set's class in [0, Config.Classes), or -1 for none
	// (the null class): length B, or nil for -1 throughout. Only for a
	// network with Classes > 0.
	Class []int
	// Vec holds each set's vector, B rows of Config.CondDim values
	// (row-major); nil drops every set's vector. Only for a network with
	// CondDim > 0.
	Vec []float64
	// Drop marks the sets whose vector is dropped, replaced by the null
	// embedding (their rows of Vec are not read): length B, or nil for
	// none.
	Drop []bool
}

// slice returns the condition of the sets lo..hi-1 (views of c's slices).
func (c *Cond) slice(lo, hi, dim int) *Cond {
	if c == nil {
		return nil
	}
	s := &Cond{}
	if c.Class != nil {
		s.Class = c.Class[lo:hi]
	}
	if c.Vec != nil {
		s.Vec = c.Vec[lo*dim : hi*dim]
	}
	if c.Drop != nil {
		s.Drop = c.Drop[lo:hi]
	}
	return s
}

// check panics unless c fits a batch of B sets of a network configured as
// cfg.
func (c *Cond) check(cfg Config, B int) {
	if c == nil {
		return
	}
	switch {
	case !cfg.Conditional():
		panic("dit.ForwardCond: a condition given to an unconditional network")
	case c.Class != nil && cfg.Classes == 0:
		panic("dit.ForwardCond: classes given to a network without Classes")
	case c.Class != nil && len(c.Class) != B:
		panic(fmt.Sprintf("dit.ForwardCond: %d classes for a batch of %d", len(c.Class), B))
	case (c.Vec != nil || c.Drop != nil) && cfg.CondDim == 0:
		panic("dit.ForwardCond: a vector given to a network without CondDim")
	case c.Vec != nil && len(c.Vec) != B*cfg.CondDim:
		panic(fmt.Sprintf("dit.ForwardCond: %d vector values for a batch of %d sets of %d", len(c.Vec), B, cfg.CondDim))
	case c.Drop != nil && len(c.Drop) != B:
		panic(fmt.Sprintf("dit.ForwardCond: %d drop flags for a batch of %d", len(c.Drop), B))
	}
	for b, k := range c.Class {
		if k < -1 || k >= cfg.Classes {
			panic(fmt.Sprintf("dit.ForwardCond: set %d has class %d, outside [-1, %d)", b, k, cfg.Classes))
		}
	}
}

// ForwardCond is Forward for a conditional network (Config.Classes,
// Config.CondDim): cond gives each set's class and vector, which join the
// time embedding of every block's adaLN; nil gives every set the null
// condition. For a network without conditions cond must be nil, and
// ForwardCond is Forward. It panics when cond does not fit the batch or
// the network (a class outside [-1, Classes), a vector of another length).
// cond's slices are read, not kept.
func (m *Model) ForwardCond(tp *autograd.Tape, x *autograd.Var, t []float64, mask *tensor.Tensor, xsc *autograd.Var, cond *Cond) *autograd.Var {
	shape := x.Shape()
	if len(shape) != 3 || shape[2] != m.Cfg.Dim {
		panic(fmt.Sprintf("dit.Forward: x has shape %v, want (B, N, %d)", shape, m.Cfg.Dim))
	}
	B, N := shape[0], shape[1]
	if len(t) != B {
		panic(fmt.Sprintf("dit.Forward: %d times for batch of %d", len(t), B))
	}
	cond.check(m.Cfg, B)
	group := max(1, EvalTokens/max(N, 1))
	if tp.Recording() || x.Value.Backend() != tensor.CPU || B <= group {
		return m.forward(tp, x, t, mask, xsc, cond)
	}
	out := tensor.New(x.DType(), B, N, m.Cfg.Dim)
	ngroups := (B + group - 1) / group
	run := func(g int) {
		lo, hi := g*group, min((g+1)*group, B)
		var mk *tensor.Tensor
		if mask != nil {
			mk = mask.Slice(0, lo, hi)
		}
		var sc *autograd.Var
		if xsc != nil {
			sc = autograd.NewConst(xsc.Value.Slice(0, lo, hi))
		}
		sub := autograd.NoGrad()
		defer sub.Release()
		y := m.forward(sub, autograd.NewConst(x.Value.Slice(0, lo, hi)), t[lo:hi], mk, sc, cond.slice(lo, hi, m.Cfg.CondDim))
		tensor.Copy(out.Slice(0, lo, hi), y.Value)
	}
	// Groups run concurrently on EvalGroups goroutines (at most one per
	// thread): each kernel still splits over the threads, and a thread
	// that one group leaves idle (its serial stretches, the ends of its
	// kernels) works on another. The kernels' results do not depend on the number of
	// threads, so neither does the output.
	workers := min(ngroups, runtime.GOMAXPROCS(0), EvalGroups)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failure any
	var once sync.Once
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					once.Do(func() { failure = p })
					next.Store(int64(ngroups)) // stop the other workers early
				}
			}()
			for {
				g := int(next.Add(1) - 1)
				if g >= ngroups {
					return
				}
				run(g)
			}
		}()
	}
	wg.Wait()
	if failure != nil {
		panic(failure)
	}
	return autograd.NewConst(out)
}

// sameTimes reports whether every time of t equals the first.
func sameTimes(t []float64) bool {
	for _, v := range t[1:] {
		if v != t[0] {
			return false
		}
	}
	return true
}

// forward is ForwardCond on one tape, for the whole batch at once.
func (m *Model) forward(tp *autograd.Tape, x *autograd.Var, t []float64, mask *tensor.Tensor, xsc *autograd.Var, cond *Cond) *autograd.Var {
	shape := x.Shape()
	B, N := shape[0], shape[1]
	dt, be := x.DType(), x.Value.Backend()
	if mask == nil {
		mask = tensor.Full(dt, 1, B, N)
	}
	mask = mask.On(be)
	mask3 := autograd.NewConst(mask.Reshape(B, N, 1))
	h := x
	if m.Cfg.SelfCond {
		if xsc == nil {
			xsc = autograd.NewConst(tensor.NewOn(be, dt, shape...))
		}
		h = tp.Concat(2, x, xsc)
	}
	h = tp.Mul(m.in.Forward(tp, h), mask3)

	// The conditioning depends on each set's time only. A sampler moves
	// every set of a batch at the same time, so a pass that records
	// nothing with one time for all computes it once, as a batch of one,
	// and the blocks broadcast its modulation (a view, no copies): the
	// same values, since each row of a product is computed the same way
	// whatever the number of rows.
	// A conditional network's conditioning differs between sets anyway.
	tc := t
	if !tp.Recording() && B > 1 && sameTimes(t) && !m.Cfg.Conditional() {
		tc = t[:1]
	}
	c := autograd.NewConst(m.TimeEmbedding(dt, tc).On(be))
	c = m.time2.Forward(tp, tp.SiLU(m.time1.Forward(tp, c)))
	if m.Cfg.Conditional() {
		c = tp.Add(c, m.condEmbedding(tp, cond, B, dt, be))
	}
	sc := tp.Unsqueeze(tp.SiLU(c), 1) // (B, 1, E), or (1, 1, E) for one time

	// A pass that records nothing on the CPU runs each block on a tape of
	// its own, released once the next block has read its output, so at
	// most two blocks' intermediates are alive at a time.
	var held *autograd.Tape
	for _, b := range m.blocks {
		bt := tp
		if !tp.Recording() && be == tensor.CPU {
			bt = autograd.NoGrad()
		}
		h = b.forward(bt, h, sc, mask, m.Cfg.Width)
		if held != nil {
			held.Release()
		}
		if bt != tp {
			held = bt
		}
	}
	out := tp.Mul(m.out.Forward(tp, m.norm.Forward(tp, h)), mask3)
	if held != nil {
		held.Release()
	}
	return out
}

// condEmbedding returns the embedding (B, E) of the condition of B sets
// (nil: the null condition for every set): the class's row of the class
// table plus, for the vector, MLP(vec) or, where it is dropped, the null
// embedding.
//
// Every row is computed the same way whatever B is, as the rows of the
// time embedding are: the class and null embeddings are copied (a lookup,
// and a product with 0 or 1), and the MLP's first layer, whose product
// (B·CondDim·E multiply-adds) would go through a GEMM's small-product path
// for small batches and its blocked path for large ones, with other
// roundings, is an elementwise product summed per row. So a set's output
// does not depend on how many sets share its pass (the grouped no-grad
// pass, classifier-free guidance's doubled batch).
func (m *Model) condEmbedding(tp *autograd.Tape, cond *Cond, B int, dt tensor.DType, be tensor.Backend) *autograd.Var {
	own := func(t *tensor.Tensor) *autograd.Var { return autograd.NewConst(tp.Own(t.On(be))) }
	var e *autograd.Var
	if m.classEmb != nil {
		idx := make([]int32, B)
		for b := range B {
			idx[b] = int32(m.Cfg.Classes) // the null class
			if cond != nil && cond.Class != nil && cond.Class[b] >= 0 {
				idx[b] = int32(cond.Class[b])
			}
		}
		e = m.classEmb.Forward(tp, idx)
	}
	if m.cond1 != nil {
		D := m.Cfg.CondDim
		v, keep, drop := tensor.New(dt, B, 1, D), tensor.New(dt, B, 1), tensor.New(dt, B, 1)
		for b := range B {
			if cond == nil || cond.Vec == nil || cond.Drop != nil && cond.Drop[b] {
				drop.Set(1, b, 0) // its row of v stays zero
				continue
			}
			keep.Set(1, b, 0)
			for k := range D {
				v.Set(cond.Vec[b*D+k], b, 0, k)
			}
		}
		// v·W1ᵀ + b1 as (B, 1, D) ⊙ (E, D) summed over D.
		h := tp.Add(tp.Sum(tp.Mul(own(v), m.cond1.W), 2, false), m.cond1.B)
		ve := m.cond2.Forward(tp, tp.SiLU(h))
		// keep·MLP(v) + drop·null.
		ve = tp.Add(tp.Mul(ve, own(keep)), tp.Mul(own(drop), m.condNull.W))
		if e == nil {
			e = ve
		} else {
			e = tp.Add(e, ve)
		}
	}
	return e
}

// forward applies the block to the tokens h (B, N, E) under the
// conditioning sc (B, 1, E), or (1, 1, E) shared by every set:
// adaLN-modulated attention and MLP, each on a gated residual.
func (b *block) forward(tp *autograd.Tape, h, sc *autograd.Var, mask *tensor.Tensor, E int) *autograd.Var {
	ada := b.ada.Forward(tp, sc)
	if B := h.Shape()[0]; sc.Shape()[0] == 1 && B > 1 {
		ada = tp.Expand(ada, B, 1, 6*E) // one conditioning for every set
	}
	mod := tp.Split(ada, 2, E, E, E, E, E, E)
	shift1, scale1, gate1, shift2, scale2, gate2 := mod[0], mod[1], mod[2], mod[3], mod[4], mod[5]
	if !useFused {
		a := modulate(tp, b.ln1.Forward(tp, h), shift1, scale1)
		h = tp.Add(h, tp.Mul(gate1, b.attn.Forward(tp, a, mask)))
		f := modulate(tp, b.ln2.Forward(tp, h), shift2, scale2)
		return tp.Add(h, tp.Mul(gate2, b.mlp.Forward(tp, f)))
	}
	a := tp.LayerNormModulate(h, b.ln1.Gamma, b.ln1.Beta, shift1, scale1, b.ln1.Eps)
	h = tp.GateResidual(h, gate1, b.attn.Forward(tp, a, mask))
	f := tp.LayerNormModulate(h, b.ln2.Gamma, b.ln2.Beta, shift2, scale2, b.ln2.Eps)
	return tp.GateResidual(h, gate2, mlpForward(tp, b.mlp, f))
}

// useFused makes forward use the fused ops of a block (adaLN-modulated
// LayerNorm, gated residual, bias + GELU); the tests compare it with the
// unfused ops.
var useFused = true

// modulate returns x*(1+scale) + shift (the unfused form of
// autograd.Tape.LayerNormModulate).
func modulate(tp *autograd.Tape, x, shift, scale *autograd.Var) *autograd.Var {
	return tp.Add(tp.Add(x, tp.Mul(x, scale)), shift)
}

// mlpForward is m.Forward with each hidden layer's bias and GELU fused
// (linearGELU).
func mlpForward(tp *autograd.Tape, m *nn.MLP, x *autograd.Var) *autograd.Var {
	if m.Act != nn.GELU {
		return m.Forward(tp, x)
	}
	for i, l := range m.Layers {
		if i+1 < len(m.Layers) {
			x = linearGELU(tp, l, x)
		} else {
			x = l.Forward(tp, x)
		}
	}
	return x
}

// linearGELU returns GELU(l(x)). Off the CPU the GEMM runs without the bias
// and tensor.BiasGELU adds it in the activation's pass (one launch and one
// pass over the hidden activations fewer, each way). On the CPU the GEMM
// accumulates onto the bias as Linear does, which keeps the results
// identical bit for bit: the bias added after a GEMM whose inner dimension
// spans several cache blocks would round differently.
func linearGELU(tp *autograd.Tape, l *nn.Linear, x *autograd.Var) *autograd.Var {
	if l.B == nil || x.Value.Backend() == tensor.CPU {
		return tp.GELU(l.Forward(tp, x))
	}
	return tp.BiasGELU(tp.Linear(x, l.W, nil), l.B)
}
