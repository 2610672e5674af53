package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/internal/progress"
	"lgflow/tensor"
)

// TuneOptions configures Tune.
type TuneOptions struct {
	// Val are the graphs the samples are measured against, Train those
	// novelty is counted against (may be empty).
	Val, Train []*graph.Graph
	// Valid is the validity test of V.U.N. (ValidityTest; nil: every graph
	// is valid) and Rule its name, whose constraints (RuleConstraints)
	// Constraints adds to the search.
	Valid       func(*graph.Graph) bool
	Rule        string
	Constraints bool
	// Start is the search's starting point, for example the recipe's
	// default (its decoding constraints stay unless Constraints is set).
	Start flow.Sampler
	// Samples is the number of graphs each point samples (default 256),
	// all with Seed: the points differ by their settings, not their noise.
	Samples int
	Seed    uint64
	// Budget bounds the search's time (0: the whole search, about 20
	// samplings).
	Budget time.Duration
	// MMDWeight is the points of V.U.N. that halving the geometric mean
	// of the MMDs is worth in the score (0: DefaultMMDWeight).
	MMDWeight float64
	// Hooks receive a line per point measured and the sampling progress.
	Hooks progress.Hooks
}

// DefaultMMDWeight is TuneOptions.MMDWeight's default: halving every MMD
// is worth 10 points of V.U.N.
const DefaultMMDWeight = 10

// MMDTolerance is how much any MMD of the point Tune chooses may exceed
// the start's, as a fraction: about the spread of an MMD between two sets
// of 256 samples. On the shipped planar flow (docs/results.md, session 31)
// the chosen point is then within 20% of every MMD of the hand-tuned
// recipe and above its V.U.N. for any tolerance from 0 to 0.2, where the
// highest score (weights 5 to 40) is not.
const MMDTolerance = 0.10

// choose returns the point Tune chooses among ps (ps[0] the start): the
// highest V.U.N., counted in samples of the n each point drew, among the
// points none of whose MMDs exceeds the start's by more than MMDTolerance,
// ties to the higher score, then to the earlier point.
func choose(ps []*TunePoint, n int) *TunePoint {
	start := ps[0].Figures
	within := func(f Figures) bool {
		for name, v := range f.MMD {
			if s, ok := start.MMD[name]; ok && v > (1+MMDTolerance)*s {
				return false
			}
		}
		return true
	}
	count := func(p *TunePoint) int { return int(math.Round(p.Figures.VUN * float64(n))) }
	best := ps[0]
	for _, p := range ps[1:] {
		if !within(p.Figures) {
			continue
		}
		if c, b := count(p), count(best); c > b || c == b && p.Score > best.Score {
			best = p
		}
	}
	return best
}

// TunePoint is a sampler setting and what it measured.
type TunePoint struct {
	Sampler flow.Sampler
	Figures Figures
	// Score is the figure the search maximises (Tune).
	Score float64
}

// TuneResult is what Tune found.
type TuneResult struct {
	// Start is the starting point and Best the point Tune chose (choose):
	// the highest V.U.N. of the points none of whose MMDs exceeds the
	// start's by more than MMDTolerance.
	Start, Best TunePoint
	// Front are the points no other point beats in V.U.N. and every MMD
	// together (the trade-off front), by V.U.N., highest first.
	Front []TunePoint
	// Points counts the points measured, Samplings the samplings they
	// took (a sampling's latents decode into several points).
	Points, Samplings int
	Elapsed           time.Duration
}

// Tune searches m's sampler settings on validation graphs. Every point is
// measured by Measure on o.Samples graphs of seed o.Seed against o.Val and
// scored
//
//	score = V.U.N. in % − w · log2(geometric mean of its MMDs / the start's),
//
// with w = o.MMDWeight (10: halving every MMD is worth 10 points of
// V.U.N.). The score guides the search; the point Tune chooses among all it
// measured is the one of highest V.U.N. whose every MMD is at most
// MMDTolerance above the start's (ties, V.U.N. within one sample, to the
// higher score), so that tuning never trades a statistic of the graphs
// for validity. The search
// starts at o.Start and goes coordinate by coordinate, keeping a value
// only when it scores higher: first the decoding of the start's latents
// (edge rule or, and, mean × edge margin: the LG-VAE's own, 0, 0.5, 1,
// 1.25, 1.5, 2; with Constraints also decoding under the rule's
// constraints), which costs no sampling, since flow.SampleLatents' latents
// are decoded again; then the integration, one sampling a point (after
// each stage that moves the incumbent, margins 0.25 and 0.5 either side
// of its own on its latents): the
// expert denoisers of m's recipes (or none), the grid (50, 70 or 100
// steps, each with the time shift that makes its last step 0.01 long, as
// 100 uniform steps'), the temperature (1, 0.9, 0.8), the time offsets
// (the step's 0 to 0.05 from t = 0.5, the final jump's 0 to -0.035) and the
// final jump (0.95, 0.9, none); the decoding again; and last a refinement
// of the offsets and margin halfway to their neighbours. It stops when
// o.Budget is spent, before a sampling that would not fit.
func Tune(ctx context.Context, m *flow.Model, o TuneOptions) (*TuneResult, error) {
	start := time.Now()
	if err := checkTune(&o); err != nil {
		return nil, err
	}
	t := &tuner{ctx: ctx, m: m, o: o, latents: map[string][]*tensor.Tensor{}, seen: map[string]*TunePoint{}, began: start}
	res := &TuneResult{}
	sp, err := t.eval(o.Start)
	if err != nil {
		return nil, err
	}
	res.Start, t.best = *sp, sp
	for _, stage := range t.stages() {
		if err := stage(); err != nil {
			if errors.Is(err, errBudget) {
				break
			}
			return nil, err
		}
	}
	res.Best = *choose(t.points, t.o.Samples)
	res.Front = front(t.points)
	res.Points, res.Samplings, res.Elapsed = len(t.points), len(t.latents), time.Since(start)
	return res, nil
}

// checkTune checks o and fills in its defaults.
func checkTune(o *TuneOptions) error {
	if len(o.Val) == 0 {
		return errors.New("bundle: tuning needs validation graphs")
	}
	if o.Samples <= 0 {
		o.Samples = 256
	}
	if o.MMDWeight == 0 {
		o.MMDWeight = DefaultMMDWeight
	}
	if !(o.MMDWeight > 0) || math.IsInf(o.MMDWeight, 0) {
		return fmt.Errorf("bundle: the MMDs' weight %g is not a positive number", o.MMDWeight)
	}
	if err := o.Start.Validate(); err != nil {
		return fmt.Errorf("bundle: the starting point: %w", err)
	}
	return nil
}

// stages are the search's stages in order (Tune).
func (t *tuner) stages() []func() error {
	return []func() error{
		t.decodeStage,
		func() error { // the expert denoisers
			return t.integStage(func(s flow.Sampler) []flow.Sampler {
				var out []flow.Sampler
				for _, es := range expertSets(t.m) {
					c := s
					c.Experts = es
					out = append(out, c)
				}
				return out
			})
		},
		func() error { // the grid
			return t.integStage(func(s flow.Sampler) []flow.Sampler {
				var out []flow.Sampler
				for _, steps := range []int{50, 70, 100} {
					c := s
					c.Grid, c.Steps, c.TimeShift = "", steps, shiftFor(steps)
					out = append(out, c)
				}
				return out
			})
		},
		func() error { // the temperature
			return t.integStage(func(s flow.Sampler) []flow.Sampler {
				return vary(s, []float64{0, 0.9, 0.8}, func(c *flow.Sampler, v float64) { c.Temperature = v })
			})
		},
		func() error { // the step offset
			return t.integStage(func(s flow.Sampler) []flow.Sampler {
				return vary(s, []float64{0, 0.01, 0.025, 0.05}, func(c *flow.Sampler, v float64) { setStepOffset(c, v) })
			})
		},
		func() error { // the final jump's offset
			return t.integStage(func(s flow.Sampler) []flow.Sampler {
				return vary(s, []float64{0, -0.02, -0.035}, func(c *flow.Sampler, v float64) { setJumpOffset(c, v) })
			})
		},
		func() error { // the final jump
			return t.integStage(func(s flow.Sampler) []flow.Sampler {
				return vary(s, []float64{0, 0.9, 1}, func(c *flow.Sampler, v float64) { c.FinalJump = v })
			})
		},
		t.decodeStage,
		func() error { return t.integStage(refineOffsets) },
		t.refineMargin,
	}
}

// decodeStage tries the decodings of the incumbent's latents: edge rule
// (undirected graphs) × edge margin, and, with TuneOptions.Constraints,
// decoding under the rule's constraints (with fills for planarity).
func (t *tuner) decodeStage() error {
	base := t.best.Sampler
	var cands []flow.Sampler
	margins := []*float64{nil, ptrTo(0), ptrTo(0.5), ptrTo(1), ptrTo(1.25), ptrTo(1.5), ptrTo(2)}
	rules := []string{"", "and", "mean"}
	if t.o.Val[0].Directed() {
		rules = []string{base.EdgeRule}
	}
	for _, rule := range rules {
		for _, mg := range margins {
			s := base
			s.EdgeRule, s.EdgeMargin = rule, mg
			cands = append(cands, s)
		}
	}
	if cons := RuleConstraints(t.o.Rule); t.o.Constraints && cons != nil {
		fills := []*float64{nil}
		if slices.Contains(cons, "planar") {
			fills = append(fills, ptrTo(-4), ptrTo(-8))
		}
		for _, f := range fills {
			s := base
			s.EdgeRule, s.EdgeMargin, s.Complete, s.Constraints, s.Fill = "", nil, nil, cons, f
			cands = append(cands, s)
		}
	}
	return t.try(cands)
}

// localDecode tries margins near the incumbent's after an integration
// stage moved it: other latents often want another margin.
func (t *tuner) localDecode() error {
	base := t.best.Sampler
	if len(base.Constraints) > 0 {
		return nil
	}
	m0 := t.m.VAE.Cfg.EdgeMargin
	if base.EdgeMargin != nil {
		m0 = *base.EdgeMargin
	}
	var cands []flow.Sampler
	for _, d := range []float64{-0.5, -0.25, 0.25, 0.5} {
		if v := m0 + d; v >= 0 {
			c := base
			c.EdgeMargin = ptrTo(v)
			cands = append(cands, c)
		}
	}
	return t.try(cands)
}

// integStage tries the integration settings vary gives for the
// incumbent's, then margins near the new incumbent's, if it moved.
func (t *tuner) integStage(vary func(s flow.Sampler) []flow.Sampler) error {
	before := t.best
	if err := t.try(vary(t.best.Sampler)); err != nil {
		return err
	}
	if t.best != before {
		return t.localDecode()
	}
	return nil
}

// refineOffsets returns s with its offsets halfway to the neighbours the
// offset stages tried.
func refineOffsets(s flow.Sampler) []flow.Sampler {
	var out []flow.Sampler
	for _, d := range []float64{-0.0075, 0.0075} {
		if v := s.Offsets.Step + d; v > -0.2 && v < 0.2 {
			c := s
			setStepOffset(&c, round4(v))
			out = append(out, c)
		}
	}
	for _, d := range []float64{-0.01, 0.01} {
		if v := s.Offsets.Jump + d; v > -0.2 && v <= 0 {
			c := s
			setJumpOffset(&c, round4(v))
			out = append(out, c)
		}
	}
	return out
}

// refineMargin tries the incumbent's margin ± 0.125.
func (t *tuner) refineMargin() error {
	s := t.best.Sampler
	if s.EdgeMargin == nil {
		return nil
	}
	var out []flow.Sampler
	for _, d := range []float64{-0.125, 0.125} {
		c := s
		c.EdgeMargin = ptrTo(*s.EdgeMargin + d)
		out = append(out, c)
	}
	return t.try(out)
}

// errBudget stops the search when the budget is spent.
var errBudget = errors.New("budget spent")

// tuner holds a search's state.
type tuner struct {
	ctx     context.Context
	m       *flow.Model
	o       TuneOptions
	began   time.Time
	latents map[string][]*tensor.Tensor // by integration settings
	seen    map[string]*TunePoint       // by sampler settings
	points  []*TunePoint
	best    *TunePoint
	// perStep is the time of a sampling per integration step.
	perStep time.Duration
}

// try measures the candidates and makes the best one the incumbent when
// it scores higher.
func (t *tuner) try(cands []flow.Sampler) error {
	for _, s := range cands {
		p, err := t.eval(s)
		if err != nil {
			return err
		}
		if p != nil && p.Score > t.best.Score {
			t.best = p
		}
	}
	return nil
}

// eval measures s (once; again it returns the first measurement).
func (t *tuner) eval(s flow.Sampler) (*TunePoint, error) {
	if err := s.Validate(); err != nil {
		return nil, nil // a combination the sampler does not take
	}
	key := settingsKey(s)
	if p, ok := t.seen[key]; ok {
		return p, nil // nil: refused before
	}
	integ := integration(s)
	ikey := settingsKey(integ)
	zs, ok := t.latents[ikey]
	if !ok {
		steps := s.Steps
		if steps == 0 {
			steps = flow.DefaultSteps
		}
		if t.o.Budget > 0 && t.perStep > 0 && time.Since(t.began)+time.Duration(steps)*t.perStep > t.o.Budget {
			return nil, errBudget
		}
		began := time.Now()
		var err error
		zs, err = t.m.SampleLatents(t.ctx, t.o.Samples, flow.WithSettings(func(s *flow.Sampler) { *s = integ }), flow.WithSeed(t.o.Seed), flow.WithProgress(t.o.Hooks.Stage("sampling")))
		switch {
		case err != nil && (t.ctx.Err() != nil || errors.Is(err, tensor.ErrDevice) || t.best == nil):
			return nil, err
		case err != nil: // a combination the sampler refuses
			t.o.Hooks.Say(fmt.Sprintf("     skipped [%s]: %v", describe(s), err))
			t.seen[key] = nil
			return nil, nil
		}
		t.perStep = time.Since(began) / time.Duration(steps)
		t.latents[ikey] = zs
	}
	gs, err := DecodeLatents(t.ctx, t.m.VAE, zs, s)
	if err != nil {
		return nil, err
	}
	f, err := Measure(t.ctx, gs, t.o.Val, t.o.Train, t.o.Valid)
	if err != nil {
		return nil, err
	}
	p := &TunePoint{Sampler: s, Figures: f}
	if t.best == nil {
		p.Score = 100 * f.VUN
	} else {
		p.Score = 100*f.VUN - t.o.MMDWeight*math.Log2(MMDRatio(f, t.points[0].Figures))
	}
	t.seen[key], t.points = p, append(t.points, p)
	t.o.Hooks.Say(fmt.Sprintf("%3d  score %6.1f  %s  [%s]  %s", len(t.points), p.Score, f, describe(s), time.Since(t.began).Round(time.Second)))
	return p, nil
}

// integration returns s without its decoding settings: what its latents
// depend on.
func integration(s flow.Sampler) flow.Sampler {
	s.EdgeRule, s.EdgeMargin, s.Constraints, s.Complete, s.Fill = "", nil, nil, nil, nil
	return s
}

// settingsKey identifies sampler settings.
func settingsKey(s flow.Sampler) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// expertSets returns the expert denoisers of m's recipe, as the settings
// of its default and alternatives use them, and none.
func expertSets(m *flow.Model) [][]flow.Expert {
	out := [][]flow.Expert{nil}
	if m.Recipe == nil {
		return out
	}
	seen := map[string]bool{"null": true}
	for _, s := range append([]flow.Sampler{m.Recipe.Sampler}, alternatives(m.Recipe)...) {
		b, _ := json.Marshal(s.Experts)
		if len(s.Experts) > 0 && !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, s.Experts)
		}
	}
	return out
}

func alternatives(r *flow.Recipe) []flow.Sampler {
	var out []flow.Sampler
	for _, name := range r.Names() {
		out = append(out, r.Alternatives[name])
	}
	return out
}

// shiftFor returns the time shift that makes the last of steps steps on
// the warped grid 0.01 long, as the last of 100 uniform steps (1 for 100
// or more steps).
func shiftFor(steps int) float64 {
	if steps >= 100 {
		return 0
	}
	return math.Round(100/float64(steps)*100) / 100
}

// vary returns s with set applied to each value.
func vary(s flow.Sampler, values []float64, set func(*flow.Sampler, float64)) []flow.Sampler {
	out := make([]flow.Sampler, 0, len(values))
	for _, v := range values {
		c := s
		set(&c, v)
		out = append(out, c)
	}
	return out
}

// setStepOffset sets the step offset from t = 0.5 (the start's own From
// when it has one).
func setStepOffset(s *flow.Sampler, v float64) {
	s.Offsets.Step = v
	if s.Offsets.From == 0 && v != 0 {
		s.Offsets.From = 0.5
	}
}

func setJumpOffset(s *flow.Sampler, v float64) {
	s.Offsets.Jump = v
	if s.Offsets.From == 0 && v != 0 {
		s.Offsets.From = 0.5
	}
}

// front returns the points no other point beats in V.U.N. and every MMD
// (at least as good in all, better in one), by V.U.N., highest first.
func front(ps []*TunePoint) []TunePoint {
	dominates := func(a, b *TunePoint) bool {
		better := a.Figures.VUN > b.Figures.VUN
		if a.Figures.VUN < b.Figures.VUN {
			return false
		}
		for name, v := range b.Figures.MMD {
			w := a.Figures.MMD[name]
			if w > v {
				return false
			}
			better = better || w < v
		}
		return better
	}
	var out []TunePoint
	for _, p := range ps {
		if !slices.ContainsFunc(ps, func(q *TunePoint) bool { return dominates(q, p) }) {
			out = append(out, *p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Figures.VUN > out[j].Figures.VUN })
	return out
}

// describe lists s's settings, or says it is flow.Sample's defaults.
func describe(s flow.Sampler) string {
	d := s.Describe()
	if len(d) == 0 {
		return "flow.Sample's defaults"
	}
	return strings.Join(d, ", ")
}

func ptrTo(v float64) *float64 { return &v }

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
