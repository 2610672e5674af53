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
}

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
	half := cfg.TimeFreqDim / 2
	m.freqs = make([]float64, half)
	for k := range half {
		m.freqs[k] = math.Exp(-math.Log(1e4) * float64(k) / float64(half))
	}
	return m, nil
}

// Params lists the trainable parameters with dotted names.
func (m *Model) Params() []nn.Param {
	var ps []nn.Param
	ps = append(ps, nn.ParamsOf("x_embed", m.in)...)
	ps = append(ps, nn.ParamsOf("t_embed.0", m.time1)...)
	ps = append(ps, nn.ParamsOf("t_embed.2", m.time2)...)
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
	shape := x.Shape()
	if len(shape) != 3 || shape[2] != m.Cfg.Dim {
		panic(fmt.Sprintf("dit.Forward: x has shape %v, want (B, N, %d)", shape, m.Cfg.Dim))
	}
	B, N := shape[0], shape[1]
	if len(t) != B {
		panic(fmt.Sprintf("dit.Forward: %d times for batch of %d", len(t), B))
	}
	group := max(1, EvalTokens/max(N, 1))
	if tp.Recording() || x.Value.Backend() != tensor.CPU || B <= group {
		return m.forward(tp, x, t, mask, xsc)
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
		y := m.forward(sub, autograd.NewConst(x.Value.Slice(0, lo, hi)), t[lo:hi], mk, sc)
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

// forward is Forward on one tape, for the whole batch at once.
func (m *Model) forward(tp *autograd.Tape, x *autograd.Var, t []float64, mask *tensor.Tensor, xsc *autograd.Var) *autograd.Var {
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
	tc := t
	if !tp.Recording() && B > 1 && sameTimes(t) {
		tc = t[:1]
	}
	c := autograd.NewConst(m.TimeEmbedding(dt, tc).On(be))
	c = m.time2.Forward(tp, tp.SiLU(m.time1.Forward(tp, c)))
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
