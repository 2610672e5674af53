package bundle

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"lgflow/flow"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/graph/mol"
	"lgflow/internal/atomicfile"
	"lgflow/internal/progress"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// BundleOptions configures TrainBundle.
type BundleOptions struct {
	// Out is the bundle's directory. Training state lives in Out/train
	// (WorkDir), the bundle's files are written when training ends.
	Out string
	// Size is the models' size (Sizes; default "cpu").
	Size string
	// Budget bounds the whole run, both trainings and the final
	// measurement (0: the presets' steps, however long they take). The
	// LG-VAE gets VAEShare of it, the flow the rest but the final
	// measurement's time. The first run fits each model's steps to its
	// share from a quick rate measurement, then trains it in slices and
	// re-plans the steps from the rate of its training so far (with its
	// validations and checkpoints; the last slice's when slower) at a
	// tenth, three tenths, six tenths and 85% of the share, within the
	// preset's steps; it times the measurement
	// on a few samples at the flow's first re-plan (until then expecting
	// MeasureShare of the budget), so the run ends at about Budget, later
	// only by as much as the measurement takes longer than timed. A run
	// that continues one keeps its plan (plan.json), and stops after its
	// own Budget, keeping MeasureShare (at least 30 s) for the
	// measurement.
	Budget time.Duration
	// VAESteps and FlowSteps, when positive, set the steps instead of the
	// budget (tests, experiments).
	VAESteps, FlowSteps int
	// Validity is the rule V.U.N. counts valid graphs by
	// (ValidityRules; "": the strictest rule every training graph
	// keeps, DetectValidity).
	Validity string
	// Molecules names the molecule encoding of graphs read from SMILES
	// (moses, guacamol; "": not molecules).
	Molecules string
	// Data are the card's facts about the data's origin (file, format,
	// validation file); TrainBundle fills in the counts and node range.
	Data flow.Data
	// Output is the card's output format ("": by the graphs' labels).
	Output string
	// Seed seeds the models' initialisation, batching and the measurement.
	Seed uint64
	// Samples is the number of graphs sampled to measure the bundle
	// (default: as many as there are validation graphs, within [32, 256]).
	Samples int
	// Backend runs the training steps and the denoiser (nil: the CPU).
	Backend tensor.Backend
	// Hooks receive progress.
	Hooks progress.Hooks
	// Cond, when not nil, holds the conditions of the training graphs
	// (one per graph of train, ConditionTable.Conditions): the flow is
	// then conditional (flow.Latents.Cond), its checkpoint stores the
	// schema, and the card says what it conditions on. The LG-VAE and the
	// measurement are those of an unconditional bundle: the recipe's
	// figures are of unconditional samples (the null condition). A run
	// that continues another must give the same conditions.
	Cond *cond.Set
	// CondDrop is the flow's condition dropout (flow.Config.CondDrop; 0:
	// flow.DefaultCondDrop, negative: none). A run that continues another
	// keeps the first run's unless it gives one.
	CondDrop float64
}

// VAEShare is the part of BundleOptions.Budget the LG-VAE's training
// gets; the flow gets the rest, but the final measurement's time, and
// whatever the LG-VAE leaves unused. MeasureShare is the part the final
// measurement is expected to take until the first run has timed it (and
// in a run that continues a plan, at least 30 s).
const (
	VAEShare     = 0.4
	MeasureShare = 0.05
)

// WorkDir is the directory in a bundle's directory where TrainBundle keeps
// its resumable state: plan.json (the models and steps, fixed by the first
// run, which re-plans the steps as it trains), vae/ and flow/ (their
// trainings' checkpoints).
const WorkDir = "train"

// workState is plan.json: what the first run fixed, and how far the runs
// got.
type workState struct {
	// Data is the fingerprint of the training and validation graphs.
	Data string `json:"data"`
	Plan *Plan  `json:"plan"`
	Seed uint64 `json:"seed"`
	// FlowPlanned is set once the flow's steps are fixed.
	FlowPlanned bool `json:"flow_planned"`
	VAEDone     bool `json:"vae_done"`
	FlowDone    bool `json:"flow_done"`
	// Budget is the -budget of the first run.
	Budget string `json:"budget,omitempty"`
	// Condition is the schema of the flow's conditions (nil:
	// unconditional).
	Condition *cond.Schema `json:"condition,omitempty"`
}

// DetectValidity returns the strictest validity rule every graph of gs
// keeps: tree, planar (connected and planar) or connected for undirected
// graphs, dag for directed ones, else none.
func DetectValidity(gs []*graph.Graph) string {
	rules := []string{"tree", "planar", "connected"}
	if len(gs) > 0 && gs[0].Directed() {
		rules = []string{"dag"}
	}
	for _, rule := range rules {
		valid, _ := ValidityTest(rule, nil)
		if !slices.ContainsFunc(gs, func(g *graph.Graph) bool { return !valid(g) }) {
			return rule
		}
	}
	return "none"
}

// CheckRule reports whether the validity rule applies to graphs that are
// directed or not, and molecules or not: tree and planar are rules for
// undirected graphs, dag for directed ones, molecule for molecules.
func CheckRule(rule string, directed, molecules bool) error {
	switch {
	case directed && (rule == "tree" || rule == "planar"):
		return fmt.Errorf("bundle: the validity rule %s is for undirected graphs (directed ones: dag, connected or none)", rule)
	case !directed && rule == "dag":
		return errors.New("bundle: the validity rule dag is for directed graphs")
	case rule == "molecule" && !molecules:
		return errors.New("bundle: the validity rule molecule is for molecules (SMILES)")
	}
	return nil
}

// TrainBundle trains a model bundle on train, validated on val, into
// o.Out: it picks the models (Inspect, PlanFor), trains the LG-VAE and
// then LG-Flow in its latent space within o.Budget, measures the flow's
// samples against val with the default sampler and with decoding under
// the validity rule's constraints (RuleConstraints), makes the better of
// the two the recipe's default (V.U.N., then the MMDs) and the other an
// alternative ("constrained" or "paper"), and writes the bundle:
// vae.safetensors, flow.safetensors, the training and validation graphs
// and sampler.json with the card, last. It returns the recipe.
//
// Training is resumable: the state lives in o.Out/train, and a second call
// with the same graphs continues where the first stopped, with the plan
// the first fixed (steps fitted to its budget and re-planned from its
// measured rate as it trained, BundleOptions.Budget; each call stops
// after its own budget). When the LG-VAE's share of the budget ends
// before its steps, the flow trains with the LG-VAE as far as it got (a
// flow is bound to its encoder, so the LG-VAE is final from then on);
// when the flow's ends, the bundle gets the flow as far as it got. A directory that is
// neither empty nor a bundle being trained on the same graphs is refused
// before anything is written.
func TrainBundle(ctx context.Context, train, val []*graph.Graph, o BundleOptions) (*flow.Recipe, error) {
	r, err := newBundleRun(train, val, o)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// run trains and writes the bundle of r (TrainBundle).
func (r *bundleRun) run(ctx context.Context) (*flow.Recipe, error) {
	o, train, val := r.o, r.train, r.val
	var err error
	if err := r.openWork(); err != nil {
		return nil, err
	}
	if r.trainSet, err = vae.Prepare(ctx, train, r.plan.VAE.Model, o.Hooks.Stage("eigenpairs (train)")); err != nil {
		return nil, err
	}
	if r.valSet, err = vae.Prepare(ctx, val, r.plan.VAE.Model, o.Hooks.Stage("eigenpairs (val)")); err != nil {
		return nil, err
	}
	vaePath, err := r.trainVAE(ctx)
	if err != nil {
		return nil, err
	}
	ae, err := vae.Load(vaePath)
	if err != nil {
		return nil, err
	}
	acc, err := vae.Reconstruct(ctx, ae, r.valSet, r.plan.VAE.Train.BatchSize)
	if err != nil {
		return nil, err
	}
	o.Hooks.Say(fmt.Sprintf("LG-VAE reconstruction of the validation graphs: edge %.4f, node %.4f, whole graphs %.3f", acc.Edge(), acc.Node(), acc.Sample()))
	flowPath, err := r.trainFlow(ctx, ae)
	if err != nil {
		return nil, err
	}
	fm, err := flow.Load(flowPath, ae)
	if err != nil {
		return nil, err
	}
	measuring := time.Now()
	rec, n, err := r.recipe(ctx, fm)
	if err != nil {
		return nil, err
	}
	measured := time.Since(measuring)
	if err := r.card(rec, n); err != nil {
		return nil, err
	}
	if err := r.write(rec, vaePath, flowPath); err != nil {
		return nil, err
	}
	o.Hooks.Say(fmt.Sprintf("wrote the bundle %s in %s (the final measurement: %s)", o.Out, time.Since(r.start).Round(time.Second), measured.Round(100*time.Millisecond)))
	return rec, nil
}

// bundleRun is one call of TrainBundle: the graphs and what was read
// from them, the plan, and the resumable state in the bundle's work
// directory.
type bundleRun struct {
	o          BundleOptions
	start      time.Time
	size       string
	train, val []*graph.Graph
	facts      DataFacts
	rule       string
	valid      func(*graph.Graph) bool
	plan       *Plan
	schema     *cond.Schema // the conditions' schema; nil: unconditional

	work, statePath  string
	st               *workState
	trainSet, valSet *vae.Dataset
	// measureEst is the time the final measurement is expected to take,
	// in a first run that re-plans the flow (measureEstimate).
	measureEst time.Duration
}

// newBundleRun checks the graphs and options and picks the plan: the
// data's facts, the validity rule and its test, and the models.
func newBundleRun(train, val []*graph.Graph, o BundleOptions) (*bundleRun, error) {
	r := &bundleRun{o: o, start: time.Now(), size: cmp.Or(o.Size, "cpu"), train: train, val: val}
	var err error
	if r.facts, err = Inspect(train); err != nil {
		return nil, fmt.Errorf("training graphs: %w", err)
	}
	if len(val) == 0 {
		return nil, errors.New("bundle: no validation graphs")
	}
	if err := checkVal(val, r.facts); err != nil {
		return nil, err
	}
	if r.rule, r.valid, err = bundleRule(train, o, r.facts); err != nil {
		return nil, err
	}
	if r.plan, err = PlanFor(r.facts, r.size, len(train)); err != nil {
		return nil, err
	}
	if o.Cond != nil {
		if o.Cond.Len() != len(train) {
			return nil, fmt.Errorf("bundle: conditions of %d graphs for %d training graphs", o.Cond.Len(), len(train))
		}
		r.schema = o.Cond.Schema
		if err := r.schema.Validate(); err != nil {
			return nil, err
		}
		r.plan.Flow = r.plan.Flow.ForCondition(r.schema)
		r.plan.Flow.CondDrop = o.CondDrop
	}
	return r, nil
}

// bundleRule returns the validity rule of a bundle (o.Validity, else the
// strictest the training graphs keep, molecule for molecules) and its
// test (nil: every graph is valid).
func bundleRule(train []*graph.Graph, o BundleOptions, facts DataFacts) (string, func(*graph.Graph) bool, error) {
	rule := o.Validity
	if rule == "" {
		rule = DetectValidity(train)
		if o.Molecules != "" {
			rule = "molecule"
		}
	}
	if err := CheckRule(rule, facts.Directed, o.Molecules != ""); err != nil {
		return "", nil, err
	}
	var enc *mol.Encoding
	if o.Molecules != "" {
		var err error
		if enc, err = molEncoding(o.Molecules); err != nil {
			return "", nil, err
		}
	}
	valid, err := ValidityTest(rule, enc)
	if err != nil {
		return "", nil, err
	}
	if valid != nil {
		if bad := countInvalid(train, valid); bad > 0 {
			o.Hooks.Say(fmt.Sprintf("note: %d of %d training graphs break the validity rule %s", bad, len(train), rule))
		}
	}
	return rule, valid, nil
}

// openWork reads the work directory's state (plan.json): a new run
// starts one in an empty directory; a run that continues one on the same
// graphs and conditions takes its plan.
func (r *bundleRun) openWork() error {
	o := r.o
	r.work = filepath.Join(o.Out, WorkDir)
	r.statePath = filepath.Join(r.work, "plan.json")
	fp := fingerprint(r.train, r.val)
	st, err := readWorkState(r.statePath)
	switch {
	case err != nil:
		return err
	case st == nil:
		if err := checkEmptyOut(o.Out); err != nil {
			return err
		}
		st = &workState{Data: fp, Plan: r.plan, Seed: o.Seed, Condition: r.schema}
		if o.Budget > 0 {
			st.Budget = o.Budget.String()
		}
	case st.Data != fp:
		return fmt.Errorf("bundle: %s holds the training of a bundle on other graphs; give another directory, or delete %s to start afresh", o.Out, r.work)
	case !st.Condition.Equal(r.schema):
		return fmt.Errorf("bundle: %s holds the training of a bundle %s; this run's flow is %s: give the same conditions, or another directory",
			o.Out, conditionText(st.Condition), conditionText(r.schema))
	default:
		r.plan = st.Plan
		o.Hooks.Say(fmt.Sprintf("continuing the training in %s (planned by its first run)", r.work))
	}
	r.st = st
	if err := os.MkdirAll(r.work, 0o755); err != nil {
		return err
	}
	plan := r.plan
	plan.VAE.Train.Seed, plan.Flow.Seed = st.Seed, st.Seed
	if o.CondDrop != 0 {
		plan.Flow.CondDrop = o.CondDrop // a continuation may change it; else the first run's
	}
	facts := r.facts
	o.Hooks.Say(fmt.Sprintf("%d training and %d validation graphs, %d-%d nodes (mean %.1f), mean %.1f edges, %s, %d node and %d edge classes; validity rule %s",
		len(r.train), len(r.val), facts.MinNodes, facts.MaxNodes, facts.MeanNodes, facts.MeanEdges, direction(facts.Directed), facts.NodeClasses, facts.EdgeClasses, r.rule))
	return nil
}

// save writes the work directory's state.
func (r *bundleRun) save() error { return atomicfile.WriteJSON(r.statePath, r.st) }

// measureTime is the part of the budget a run that continues a plan
// keeps for the final measurement (0 without a budget); a first run
// starts from MeasureShare and then times the measurement on a few
// samples (measureEstimate).
func (r *bundleRun) measureTime() time.Duration {
	if r.o.Budget <= 0 {
		return 0
	}
	return max(30*time.Second, time.Duration(MeasureShare*float64(r.o.Budget)))
}

// trainVAE trains the LG-VAE, unless an earlier run finished it, within
// its share of the budget, and returns the path of the model to use. The
// first run of a budget fits the steps to the share from a quick rate
// measurement and re-plans them from the rate of its training as it goes
// (at a tenth, three tenths, six tenths and 85% of the share:
// trainSliced); a run that continues keeps the plan.
func (r *bundleRun) trainVAE(ctx context.Context) (string, error) {
	o, plan := r.o, r.plan
	vaeDir := filepath.Join(r.work, "vae")
	path := filepath.Join(vaeDir, vae.ModelFile)
	statePath := filepath.Join(vaeDir, vae.StateFile)
	if r.st.VAEDone {
		return path, nil
	}
	vaeBudget := time.Duration(0)
	if o.Budget > 0 {
		vaeBudget = time.Duration(VAEShare * float64(o.Budget))
	}
	sliced, limit := false, plan.VAE.Train.Steps
	if _, err := os.Stat(statePath); err != nil {
		switch {
		case o.VAESteps > 0:
			plan.SetVAESteps(o.VAESteps)
		case o.Budget > 0:
			rate, err := vaeRate(ctx, plan, r.trainSet, o.Backend)
			if err != nil {
				return "", err
			}
			plan.SetVAESteps(min(stepsFor(rate, vaeBudget), limit))
			o.Hooks.Say(fmt.Sprintf("LG-VAE: %.1f steps/s, %d steps fit in %s", rate, plan.VAE.Train.Steps, vaeBudget.Round(time.Second)))
			sliced = true
		}
		if err := r.save(); err != nil {
			return "", err
		}
	}
	cfgJSON, _ := json.Marshal(plan.VAE.Model)
	o.Hooks.Say(fmt.Sprintf("training the LG-VAE (%s preset for these graphs, %d steps of batch %d; state in %s): %s", r.size, plan.VAE.Train.Steps, plan.VAE.Train.BatchSize, vaeDir, cfgJSON))
	var m *vae.Model
	train := func(ctx context.Context, d time.Duration) error {
		var err error
		m, err = vae.Train(ctx, plan.VAE.Model, plan.VAE.Train, r.trainSet, r.valSet, vae.TrainOptions{Dir: vaeDir, Resume: true, MaxDuration: d,
			LogEvery: 10, Backend: o.Backend, Progress: o.Hooks.VAE})
		return err
	}
	var err error
	if sliced {
		start := time.Now()
		end := start.Add(vaeBudget)
		err = r.trainSliced(ctx, stage{name: "LG-VAE", start: start, end: func() time.Time { return end }, limit: limit, grace: true,
			steps: func() int { return plan.VAE.Train.Steps }, replan: func(n, _ int) { plan.ReplanVAESteps(n) }, train: train,
			done: func() int { return checkpointStep(statePath, "lgflow.vae") }})
	} else {
		err = train(ctx, vaeBudget)
	}
	if err != nil {
		return "", err
	}
	last := checkpointStep(statePath, "lgflow.vae")
	if last < plan.VAE.Train.Steps {
		// The share ended first (a continued run's steps were fitted to
		// its first run's rate, a first run's last slice ran slower than
		// the others): the flow trains in the latent space of the LG-VAE
		// as far as it got.
		o.Hooks.Say(fmt.Sprintf("the budget ran out at LG-VAE step %d of %d: the flow trains with the LG-VAE so far", last, plan.VAE.Train.Steps))
	}
	if _, err := os.Stat(path); err != nil { // no validation yet
		if err := m.Save(path, map[string]string{"note": "the last model; no validation"}); err != nil {
			return "", err
		}
	}
	r.st.VAEDone = true
	return path, r.save()
}

// trainFlow trains the flow in ae's latent space, unless an earlier run
// finished it, within the budget left but the measurement's, and returns
// the path of the flow to use: as far as it got when the budget runs out.
// The first run of a budget fits the steps to the time left from a quick
// rate measurement and re-plans them as trainVAE, after timing the final
// measurement on a few samples at the first re-plan; a run that continues
// keeps the plan.
func (r *bundleRun) trainFlow(ctx context.Context, ae *vae.Model) (string, error) {
	o, plan := r.o, r.plan
	lat, err := flow.EncodeLatents(ctx, ae, r.trainSet, 128, o.Hooks.Stage("encoding latents"))
	if err != nil {
		return "", err
	}
	lat.Cond = o.Cond
	flowDir := filepath.Join(r.work, "flow")
	statePath := filepath.Join(flowDir, flow.StateFile)
	runEnd := r.start.Add(o.Budget)
	flowBudget := time.Duration(0)
	if o.Budget > 0 {
		if flowBudget = time.Until(runEnd) - r.measureTime(); flowBudget <= 0 {
			flowBudget = time.Second
		}
	}
	sliced, limit := false, plan.Flow.Steps
	if !r.st.FlowPlanned {
		switch {
		case o.FlowSteps > 0:
			plan.SetFlowSteps(o.FlowSteps)
		case o.Budget > 0:
			rate, err := flowRate(ctx, plan, ae, r.trainSet, lat, o.Backend)
			if err != nil {
				return "", err
			}
			// Until the measurement is timed (the first re-plan), it is
			// expected to take its share.
			r.measureEst = time.Duration(MeasureShare * float64(o.Budget))
			flowBudget = max(time.Until(runEnd)-r.measureEst, time.Second)
			plan.SetFlowSteps(min(stepsFor(rate, flowBudget), limit))
			o.Hooks.Say(fmt.Sprintf("LG-Flow: %.1f steps/s, %d steps fit in %s", rate, plan.Flow.Steps, flowBudget.Round(time.Second)))
			sliced = true
		}
		r.st.FlowPlanned = true
		if err := r.save(); err != nil {
			return "", err
		}
	}
	path := filepath.Join(flowDir, flow.ModelFile)
	if r.st.FlowDone {
		return path, nil
	}
	o.Hooks.Say(fmt.Sprintf("training LG-Flow (DiT %d × %d, %d steps of batch %d%s; state in %s)", plan.Flow.DiT.Depth, plan.Flow.DiT.Width, plan.Flow.Steps, plan.Flow.BatchSize,
		condTraining(r.schema, plan.Flow), flowDir))
	var score func([]*graph.Graph) float64
	if valid := r.valid; valid != nil {
		score = func(gs []*graph.Graph) float64 { return 1 - float64(countInvalid(gs, valid))/float64(max(len(gs), 1)) }
	}
	var fm *flow.Model
	train := func(ctx context.Context, d time.Duration) error {
		var err error
		fm, err = flow.Train(ctx, plan.Flow, ae, r.trainSet, lat, flow.TrainOptions{Dir: flowDir, Resume: true, MaxDuration: d, LogEvery: 10,
			Backend: o.Backend, Score: score, Progress: o.Hooks.Flow})
		return err
	}
	if sliced {
		err = r.trainSliced(ctx, stage{name: "LG-Flow", start: time.Now(), end: func() time.Time { return runEnd.Add(-r.measureEst) }, limit: limit,
			steps: func() int { return plan.Flow.Steps }, replan: plan.ReplanFlowSteps, train: train,
			done: func() int { return checkpointStep(statePath, "lgflow.flow.state") },
			afterSlice: func(ctx context.Context, i int) error {
				if i > 0 || fm == nil {
					return nil
				}
				return r.probeMeasure(ctx, fm)
			}})
	} else {
		err = train(ctx, flowBudget)
	}
	if err != nil {
		return "", err
	}
	if last := checkpointStep(statePath, "lgflow.flow.state"); last < plan.Flow.Steps {
		o.Hooks.Say(fmt.Sprintf("the budget ran out at LG-Flow step %d of %d: the bundle gets the flow so far; run again to continue", last, plan.Flow.Steps))
		return path, nil
	}
	r.st.FlowDone = true
	return path, r.save()
}

// probeMeasure times the final measurement on a few samples of fm (the
// flow so far) and sets r.measureEst from it (measureEstimate).
func (r *bundleRun) probeMeasure(ctx context.Context, fm *flow.Model) error {
	n, k := r.samples(), probeSamples(r.samples())
	start := time.Now()
	if _, _, _, err := r.measureSamples(ctx, fm, k, nil); err != nil {
		return err
	}
	took := time.Since(start)
	r.measureEst = measureEstimate(took, k, n)
	r.o.Hooks.Say(fmt.Sprintf("the final measurement of %d samples should take about %s (%d took %s)", n, r.measureEst.Round(100*time.Millisecond), k, took.Round(10*time.Millisecond)))
	return nil
}

// samples is the number of graphs sampled to measure the bundle.
func (r *bundleRun) samples() int {
	if r.o.Samples > 0 {
		return r.o.Samples
	}
	return min(max(len(r.val), 32), 256)
}

// measureSamples samples n latents of fm and measures them, decoded
// plainly and under the validity rule's constraints cons (none: cfigs is
// the zero Figures), against the validation graphs.
func (r *bundleRun) measureSamples(ctx context.Context, fm *flow.Model, n int, progress func(done, total int)) (figs, cfigs Figures, cons []string, err error) {
	if r.o.Backend != nil {
		if err := fm.ToBackend(r.o.Backend); err != nil {
			return figs, cfigs, nil, err
		}
	}
	zs, err := fm.SampleLatents(ctx, n, flow.WithSeed(r.st.Seed), flow.WithProgress(progress))
	if err != nil {
		return figs, cfigs, nil, err
	}
	measure := func(s flow.Sampler) (Figures, error) {
		gs, err := DecodeLatents(ctx, fm.VAE, zs, s)
		if err != nil {
			return Figures{}, err
		}
		return Measure(ctx, gs, r.val, r.train, r.valid)
	}
	if figs, err = measure(flow.Sampler{}); err != nil {
		return figs, cfigs, nil, err
	}
	if cons = RuleConstraints(r.rule); cons != nil {
		if cfigs, err = measure(flow.Sampler{Constraints: cons}); err != nil {
			return figs, cfigs, nil, err
		}
	}
	return figs, cfigs, cons, nil
}

// recipe measures fm's samples against the validation graphs with the
// default sampler and with decoding under the validity rule's
// constraints, and returns the recipe whose default is the better of the
// two (the other an alternative), with their figures in its card, and
// the number of graphs sampled.
func (r *bundleRun) recipe(ctx context.Context, fm *flow.Model) (*flow.Recipe, int, error) {
	o, n := r.o, r.samples()
	figs, cfigs, cons, err := r.measureSamples(ctx, fm, n, o.Hooks.Stage("sampling"))
	if err != nil {
		return nil, 0, err
	}
	rec := &flow.Recipe{Format: flow.RecipeFormat, Alternatives: map[string]flow.Sampler{}}
	plain := flow.Sampler{}
	o.Hooks.Say("the flow's samples against the validation graphs: " + figs.String())
	rec.Sampler = plain
	card := map[string]float64{}
	if cons == nil {
		figs.Card("", card)
		rec.Card.Figures = card
		return rec, n, nil
	}
	con := flow.Sampler{Constraints: cons}
	o.Hooks.Say("decoded under the constraints " + strings.Join(cons, ", ") + ": " + cfigs.String())
	if Better(cfigs, figs) {
		rec.Sampler, rec.Alternatives["constrained"], rec.Alternatives["paper"] = con, con, plain
		cfigs.Card("", card)
		figs.Card("paper.", card)
	} else {
		rec.Alternatives["constrained"] = con
		figs.Card("", card)
		cfigs.Card("constrained.", card)
	}
	rec.Card.Figures = card
	return rec, n, nil
}

// card fills in rec's card: the data's facts, how the models were
// trained and how n samples measured them.
func (r *bundleRun) card(rec *flow.Recipe, n int) error {
	o, plan, facts := r.o, r.plan, r.facts
	d := o.Data
	d.Train, d.Val, d.Nodes = len(r.train), len(r.val), [2]int{facts.MinNodes, facts.MaxNodes}
	d.Directed, d.NodeClasses, d.EdgeClasses = facts.Directed, facts.NodeClasses, facts.EdgeClasses
	d.Preset, d.Budget = r.size, r.st.Budget
	ext := ".g6.gz"
	if facts.NodeClasses > 0 || facts.EdgeClasses > 1 {
		ext = ".jsonl.gz"
	}
	d.TrainGraphs, d.ValGraphs = "train"+ext, "val"+ext
	output := o.Output
	if output == "" {
		output = "g6"
		switch {
		case o.Molecules != "":
			output = "smiles"
		case facts.NodeClasses > 0 || facts.EdgeClasses > 1:
			output = "nodelink"
		}
	}
	trained := fmt.Sprintf("LG-VAE %d steps × %d (k %d, latent %d, %d × %d, GraphNorm); LG-Flow DiT %d × %d, %d steps × %d",
		plan.VAE.Train.Steps, plan.VAE.Train.BatchSize, plan.VAE.Model.K, plan.VAE.Model.Latent, plan.VAE.Model.Layers, plan.VAE.Model.Width,
		plan.Flow.DiT.Depth, plan.Flow.DiT.Width, plan.Flow.Steps, plan.Flow.BatchSize)
	trained += condTraining(r.schema, plan.Flow)
	if !r.st.FlowDone {
		trained += " (unfinished: run lgflow train again to continue)"
	}
	rec.Card = flow.Card{Dataset: fmt.Sprintf("%s (%d graphs)", cmp.Or(d.File, "graphs"), len(r.train)+len(r.val)),
		Training: "lgflow train -preset " + r.size + budgetText(r.st.Budget) + ": " + trained, Figures: rec.Card.Figures,
		Measured: fmt.Sprintf("%d samples against the %d validation graphs, seed %d; V.U.N. (validity: %s) and valid in %%, MMD² × 1e3", n, len(r.val), r.st.Seed, r.rule) + condMeasured(r.schema),
		Validity: r.rule, Output: output, Molecules: o.Molecules, Data: &d}
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("bundle: the recipe: %w", err)
	}
	return nil
}

// write writes the bundle: the models, the training and validation
// graphs, and sampler.json last.
func (r *bundleRun) write(rec *flow.Recipe, vaePath, flowPath string) error {
	out := r.o.Out
	if err := copyFile(vaePath, filepath.Join(out, vae.ModelFile)); err != nil {
		return err
	}
	if err := copyFile(flowPath, filepath.Join(out, flow.ModelFile)); err != nil {
		return err
	}
	d := rec.Card.Data
	for _, f := range []struct {
		name string
		gs   []*graph.Graph
	}{{d.TrainGraphs, r.train}, {d.ValGraphs, r.val}} {
		path := filepath.Join(out, f.name)
		var err error
		if strings.Contains(f.name, ".jsonl") {
			err = graph.WriteNodeLinkFile(path, f.gs)
		} else {
			err = graph.WriteFile(path, f.gs)
		}
		if err != nil {
			return err
		}
	}
	return rec.Save(filepath.Join(out, flow.RecipeFile))
}

// conditionText describes a bundle's conditions for messages.
func conditionText(s *cond.Schema) string {
	if s == nil {
		return "without conditions"
	}
	return "conditioned on " + s.Describe()
}

// condTraining describes a conditional flow's training for the card: the
// schema and the condition dropout ("" for an unconditional one).
func condTraining(s *cond.Schema, c flow.Config) string {
	if s == nil {
		return ""
	}
	drop := flow.DefaultCondDrop
	switch {
	case c.CondDrop < 0:
		drop = 0
	case c.CondDrop > 0:
		drop = c.CondDrop
	}
	return fmt.Sprintf(", conditioned on %s, condition dropout %g", s.Describe(), drop)
}

// condMeasured says, for a conditional flow, under which condition the
// card's figures were measured.
func condMeasured(s *cond.Schema) string {
	if s == nil {
		return ""
	}
	return "; samples without a condition (the null condition: all the training graphs' distribution); lgflow sample -cond samples under one"
}

// Better reports whether a measures better than b: a higher V.U.N. by
// more than half a point, else (V.U.N. within half a point) a smaller
// geometric mean of the MMDs.
func Better(a, b Figures) bool {
	if math.Abs(a.VUN-b.VUN) > 0.005 {
		return a.VUN > b.VUN
	}
	return MMDRatio(a, b) < 1
}

// MMDRatio is the geometric mean over the statistics of a's MMD over b's
// (each floored at 1e-6 × 1e-3, below any that matters).
func MMDRatio(a, b Figures) float64 {
	s, n := 0.0, 0
	for name, v := range a.MMD {
		w, ok := b.MMD[name]
		if !ok {
			continue
		}
		s += math.Log(max(v, 1e-9) / max(w, 1e-9))
		n++
	}
	if n == 0 {
		return 1
	}
	return math.Exp(s / float64(n))
}

// DecodeLatents decodes sampled latents (flow.SampleLatents) with the
// decoding settings of s: its edge rule and margin, constraints,
// completion and fill (its integration settings do not apply).
func DecodeLatents(ctx context.Context, ae *vae.Model, zs []*tensor.Tensor, s flow.Sampler) ([]*graph.Graph, error) {
	opts, err := s.DecodeOptions()
	if err != nil {
		return nil, err
	}
	return ae.DecodeGraphs(ctx, zs, opts...)
}

func budgetText(b string) string {
	if b == "" {
		return ""
	}
	return " -budget " + b
}

// checkVal checks that the validation graphs fit the training graphs'
// models: the same direction, labels the training graphs have, and node
// labels on all or none.
func checkVal(val []*graph.Graph, d DataFacts) error {
	vf, err := Inspect(val)
	if err != nil {
		return fmt.Errorf("validation graphs: %w", err)
	}
	switch {
	case vf.Directed != d.Directed:
		return fmt.Errorf("bundle: the validation graphs are %s, the training graphs %s", direction(vf.Directed), direction(d.Directed))
	case (vf.NodeClasses > 0) != (d.NodeClasses > 0) && vf.NodeClasses > 0:
		return errors.New("bundle: the validation graphs have node labels, the training graphs none")
	case vf.NodeClasses > d.NodeClasses || vf.EdgeClasses > d.EdgeClasses:
		return fmt.Errorf("bundle: the validation graphs have labels the training graphs do not (%d node and %d edge classes against %d and %d)", vf.NodeClasses, vf.EdgeClasses, d.NodeClasses, d.EdgeClasses)
	}
	return nil
}

func countInvalid(gs []*graph.Graph, valid func(*graph.Graph) bool) int {
	n := 0
	for _, g := range gs {
		if !valid(g) {
			n++
		}
	}
	return n
}

func molEncoding(name string) (*mol.Encoding, error) {
	switch name {
	case "moses":
		return mol.MOSES, nil
	case "guacamol":
		return mol.GuacaMol, nil
	}
	return nil, fmt.Errorf("bundle: unknown molecule encoding %q (want moses or guacamol)", name)
}

// MolEncoding returns the molecule encoding named by a card (moses,
// guacamol; nil for "").
func MolEncoding(name string) (*mol.Encoding, error) {
	if name == "" {
		return nil, nil
	}
	return molEncoding(name)
}

// fingerprint identifies a training and validation set: the SHA-256 of
// their node-link JSON.
func fingerprint(train, val []*graph.Graph) string {
	h := sha256.New()
	graph.WriteNodeLinks(h, train)
	io.WriteString(h, "\nval\n")
	graph.WriteNodeLinks(h, val)
	return hex.EncodeToString(h.Sum(nil))
}

func readWorkState(path string) (*workState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st workState
	if err := json.Unmarshal(b, &st); err != nil || st.Plan == nil {
		return nil, fmt.Errorf("bundle: %s is not the state of lgflow train (%v); delete it to start afresh", path, err)
	}
	return &st, nil
}

// checkEmptyOut refuses an output directory that holds anything: a
// bundle is written into a directory of its own.
func checkEmptyOut(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("bundle: %s is not empty (it holds %s); a bundle is trained into a directory of its own", dir, entries[0].Name())
	}
	return nil
}

// copyFile copies src to dst atomically.
func copyFile(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return atomicfile.Write(dst, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}

// checkpointStep returns the step of the training state at path (of
// trainer.MetaKind kind), 0 when there is none.
func checkpointStep(path, kind string) int {
	meta, err := trainer.ReadStateMeta(path, kind)
	if err != nil {
		return 0
	}
	step, _ := strconv.Atoi(meta[trainer.MetaStep])
	return step
}

// Rate measurements run up to rateSteps training steps, stopping early
// once rateTime has passed (and at least rateMinSteps are timed), and
// count only the second half of the steps: the first steps of a fresh
// process are several times slower than the rest (their memory is new to
// the process, and batches of new sizes keep growing the scratch buffers),
// and a plan fitted to them gave 812 LG-VAE steps where 8,500 fitted, and
// an EMA a fifth as long as planned (docs/results.md, session 33).
const (
	rateSteps    = 40
	rateMinSteps = 16
)

// rateTime is the time after which a rate measurement stops (a variable
// for tests).
var rateTime = 20 * time.Second

// vaeRate measures the LG-VAE's training steps per second on train, with
// the plan's model (measureRate).
func vaeRate(ctx context.Context, p *Plan, train *vae.Dataset, be tensor.Backend) (float64, error) {
	tc := p.VAE.Train
	tc.Steps, tc.ValEvery, tc.CheckpointEvery = rateSteps, 0, 0
	return measureRate(ctx, func(ctx context.Context, tick func()) error {
		_, err := vae.Train(ctx, p.VAE.Model, tc, train, nil, vae.TrainOptions{LogEvery: 1, Backend: be,
			Progress: func(vae.Progress) { tick() }})
		return err
	})
}

// flowRate measures the flow's training steps per second as vaeRate.
func flowRate(ctx context.Context, p *Plan, ae *vae.Model, train *vae.Dataset, lat *flow.Latents, be tensor.Backend) (float64, error) {
	c := p.Flow
	c.Steps, c.ValEvery, c.CheckpointEvery, c.Cooldown, c.EMAAfter = rateSteps, 0, 0, 0, 0
	return measureRate(ctx, func(ctx context.Context, tick func()) error {
		_, err := flow.Train(ctx, c, ae, train, lat, flow.TrainOptions{LogEvery: 1, Backend: be,
			Progress: func(flow.Progress) { tick() }})
		return err
	})
}

// measureRate runs train, which calls tick after each step, until it
// returns or rateTime has passed after at least rateMinSteps steps, and
// returns the steps per second of the second half of the steps (rate).
func measureRate(ctx context.Context, train func(ctx context.Context, tick func()) error) (float64, error) {
	run, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	var times []time.Time
	err := train(run, func() {
		now := time.Now()
		times = append(times, now)
		if len(times) >= rateMinSteps && now.Sub(start) >= rateTime {
			stop()
		}
	})
	if err != nil && (ctx.Err() != nil || run.Err() == nil) {
		return 0, err
	}
	return rate(times[len(times)/2:]), nil
}

// rate returns the steps per second between the first and the last of
// the progress times of consecutive steps.
func rate(times []time.Time) float64 {
	if len(times) < 2 {
		return 1
	}
	d := times[len(times)-1].Sub(times[0]).Seconds()
	if d <= 0 {
		return 1000
	}
	return float64(len(times)-1) / d
}
