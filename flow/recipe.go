package flow

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"lgflow/graph"
	"lgflow/graph/planar"
	"lgflow/internal/atomicfile"
	"lgflow/vae"
)

// Recipe is a bundle's sampling recipe, the contents of its sampler.json
// (docs/bundle.md): the sampler settings Sample uses by default, named
// alternatives (WithRecipe), and the facts of the model card.
type Recipe struct {
	// Format is RecipeFormat.
	Format string `json:"format"`
	// Sampler are the settings of Sample without WithRecipe.
	Sampler Sampler `json:"sampler"`
	// Alternatives are other settings by name (for example "constrained"
	// and "complete"), selected with WithRecipe. Each is complete in
	// itself: what it leaves out takes Sample's defaults, not Sampler's.
	Alternatives map[string]Sampler `json:"alternatives,omitempty"`
	// Card describes the model.
	Card Card `json:"card,omitzero"`
}

// Card holds the facts of a model card.
type Card struct {
	// Dataset names the data the model was trained on.
	Dataset string `json:"dataset,omitempty"`
	// Training says briefly how the model was trained.
	Training string `json:"training,omitempty"`
	// Figures are measured figures by name (for example "vun" in %, or
	// "constrained.orbit" as MMD² × 1e3), measured as Measured says.
	Figures map[string]float64 `json:"figures,omitempty"`
	// Measured says how Figures were measured: the command, seeds, machine.
	Measured string `json:"measured,omitempty"`
	// Validity names the rule V.U.N. counts a generated graph valid by:
	// planar (connected and planar), tree, dag,
	// connected, molecule (decodes to a valid molecule of the Molecules
	// encoding) or none (every graph; V.U.N. is then unique and novel).
	// "": not stated. lgflow tune and eval -model read it.
	Validity string `json:"validity,omitempty"`
	// Output is the file format the model's graphs are written in by
	// default (lgflow sample -model): g6 (graph6, digraph6 for directed
	// graphs; no labels), nodelink (node-link JSON Lines with node and
	// edge labels) or smiles. "": g6 for unlabelled graphs, nodelink for
	// labelled ones.
	Output string `json:"output,omitempty"`
	// Molecules names the molecule encoding of a model of molecules, the
	// atom types its node labels stand for: moses or guacamol.
	Molecules string `json:"molecules,omitempty"`
	// Data describes the graphs a model trained by lgflow train learnt
	// from; nil for the shipped models (Dataset names theirs).
	Data *Data `json:"data,omitempty"`
}

// The names a card's rules take.
var (
	// validityRules are the names Card.Validity takes.
	validityRules = []string{"planar", "tree", "dag", "connected", "molecule", "none"}
	// outputs are the names Card.Output takes.
	outputs = []string{"g6", "nodelink", "smiles"}
)

// Data describes the training data of a model trained by lgflow train
// from a file of graphs.
type Data struct {
	// File is the file of graphs as given, Format its format (g6,
	// edgelist, nodelink, smiles).
	File   string `json:"file"`
	Format string `json:"format"`
	// Train and Val count the graphs trained and validated on; ValFile
	// is the file the validation graphs came from ("": held out of File).
	Train   int    `json:"train"`
	Val     int    `json:"val"`
	ValFile string `json:"val_file,omitempty"`
	// Nodes are the least and the most nodes of a training graph.
	Nodes [2]int `json:"nodes"`
	// Directed, NodeClasses and EdgeClasses describe the graphs:
	// direction, the number of node labels (0: none) and edge labels (1:
	// none).
	Directed    bool `json:"directed,omitempty"`
	NodeClasses int  `json:"node_classes,omitempty"`
	EdgeClasses int  `json:"edge_classes,omitempty"`
	// TrainGraphs and ValGraphs are the training and validation graphs,
	// files of the bundle (graph6 or node-link JSON Lines, gzip): what
	// lgflow tune measures against, and novelty is counted against.
	TrainGraphs string `json:"train_graphs,omitempty"`
	ValGraphs   string `json:"val_graphs,omitempty"`
	// Preset and Budget are lgflow train's -preset and -budget.
	Preset string `json:"preset,omitempty"`
	Budget string `json:"budget,omitempty"`
}

// Sampler are the settings of one sampling recipe. The zero value is
// Sample's defaults, the paper's sampler with the final jump at
// DefaultFinalJump; each field's zero value means "Sample's default". The
// paper's reference sampler is Grid "random" with FinalJump 1.
type Sampler struct {
	// Steps is the number of integration steps (0: DefaultSteps).
	Steps int `json:"steps,omitempty"`
	// Grid is "uniform" (the default, from 0.01 to 1) or "random", the
	// reference implementation's grid: sorted logit-normal draws clamped
	// to [0.02, 1] between 0.01 and 1 (clamped to the jump's time with a
	// final jump).
	Grid string `json:"grid,omitempty"`
	// TimeShift warps the uniform grid by t = s·u/(1 + (s-1)·u), u the
	// uniform fraction of the integrated interval (0 or 1: none). s > 1
	// makes the steps near the noise longer and those near the data
	// shorter (by s at either end), where a flow's latents get their
	// final precision.
	TimeShift float64 `json:"time_shift,omitempty"`
	// FinalJump integrates the ODE from 0.01 only to this time with
	// Steps-1 Euler steps and then outputs the denoiser's data estimate
	// there, a single final step to 1 (0: DefaultFinalJump; 1: none, the
	// reference). A small flow's velocity is least accurate near the data
	// end, which training visits rarely, and its one-step estimate there
	// beats many small biased steps (docs/results.md, session 4).
	FinalJump float64 `json:"final_jump,omitempty"`
	// Offsets are the denoiser's time offsets (zero: none).
	Offsets TimeOffsets `json:"time_offsets,omitzero"`
	// Temperature scales the initial noise (0: 1, the reference). Below 1
	// the samples start closer to the mode of the prior: more often valid,
	// less diverse.
	Temperature float64 `json:"temperature,omitempty"`
	// BatchSize is the number of graphs integrated together (0:
	// DefaultBatchSize; WithBatchSize replaces it). With a seed, it is
	// part of what decides the graphs.
	BatchSize int `json:"batch_size,omitempty"`
	// Experts are expert denoisers and their time bands (none: the flow's
	// own denoiser throughout).
	Experts []Expert `json:"experts,omitempty"`
	// EdgeRule is the decoder's rule for undirected edges, "or", "and" or
	// "mean" (vae.ParseEdgeRule; "": or, the reference's).
	EdgeRule string `json:"edge_rule,omitempty"`
	// EdgeMargin replaces the LG-VAE's edge margin (vae.WithEdgeMargin;
	// nil: the LG-VAE's Config.EdgeMargin): a larger margin decodes fewer
	// spurious edges and more missing ones.
	EdgeMargin *float64 `json:"edge_margin,omitempty"`
	// Constraints decode under constraints, valid by construction there:
	// "planar", "forest" and "dag" keep each decoded graph so
	// (vae.WithEdgeConstraint), "tree" decodes spanning trees
	// (vae.WithSpanningTree), "connected" joins components
	// (vae.WithConnected).
	Constraints []string `json:"constraints,omitempty"`
	// Complete completes the decoded graphs that have all these properties
	// ("planar", "connected", "forest", "dag"): missing pairs of confidence
	// at least Fill are added while the properties hold
	// (vae.WithEdgeCompletion). It excludes Constraints.
	Complete []string `json:"complete,omitempty"`
	// Fill is the confidence bound (logit over no-edge) of Complete, or of
	// the edge fill under a "planar", "forest" or "dag" constraint
	// (vae.WithEdgeFill); nil: no fill.
	Fill *float64 `json:"fill,omitempty"`
	// GuidanceScale is the classifier-free guidance scale of sampling
	// under a condition (WithGuidanceScale replaces it), for a conditional
	// model (Model.Cond); nil: Sample's default, 1. 0 is a setting of its
	// own, unconditional sampling, hence the pointer. At most
	// MaxGuidanceScale.
	GuidanceScale *float64 `json:"guidance_scale,omitempty"`
	// Decode are further LG-VAE decode options, applied after the ones
	// above (for example vae.WithEdgeConstraint with a property of one's
	// own). sampler.json cannot hold them: Recipe.Save refuses them.
	Decode []vae.DecodeOption `json:"-"`
}

// Expert is an expert denoiser and the times it is used at: from From on
// until Until (0: to the end), where the flow's own denoiser takes over
// again. An expert is a second denoiser trained for part of the path, for
// example the data end (fine-tuned from the flow with training times
// concentrated there, lgflow train-flow -time-mean 3), as in ensembles of
// expert denoisers (eDiff-I, Balaji et al. 2022); a step costs what it
// costs without one. A step uses the expert whose band holds the step's
// start time, the final jump's estimate included. An expert must share
// the model's latent space and scaling and its denoiser shape; its
// self-conditioning input is the previous step's prediction, whichever
// denoiser made it.
type Expert struct {
	// File is the expert's checkpoint, a file name in the model's bundle
	// (Open loads the experts its recipe names).
	File  string  `json:"file"`
	From  float64 `json:"from"`
	Until float64 `json:"until,omitempty"`
	// Model, when not nil, is the expert itself, a flow the caller loaded
	// (Load) instead of a file of the bundle; File then only names it in
	// descriptions. sampler.json cannot hold it: Recipe.Save refuses it.
	Model *Model `json:"-"`
}

// clone returns a copy of s that shares no slice or pointer with it.
func (s Sampler) clone() Sampler {
	c := s
	c.Experts = slices.Clone(s.Experts)
	c.Constraints = slices.Clone(s.Constraints)
	c.Complete = slices.Clone(s.Complete)
	c.Decode = slices.Clone(s.Decode)
	for _, p := range []**float64{&c.EdgeMargin, &c.Fill, &c.GuidanceScale} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
	return c
}

// edgeProperties are the graph properties that constraints keep and
// completions test, by name.
var edgeProperties = map[string]func(*graph.Graph) bool{
	"planar": planar.IsPlanar, "forest": graph.IsForest, "dag": graph.IsDAG,
}

// Validate reports whether r can be used, with the key of the first
// setting that cannot.
func (r *Recipe) Validate() error {
	if r.Format != RecipeFormat {
		return fmt.Errorf("format: %q is not %q", r.Format, RecipeFormat)
	}
	for _, k := range sortedKeys(r.Card.Figures) {
		if v := r.Card.Figures[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("card.figures.%s: %g is not a finite number", k, v)
		}
	}
	if err := r.Card.validate(); err != nil {
		return fmt.Errorf("card.%w", err)
	}
	if err := r.Sampler.storable(); err != nil {
		return fmt.Errorf("sampler.%w", err)
	}
	for _, name := range sortedKeys(r.Alternatives) {
		if !validName(name) || name == NoRecipe {
			return fmt.Errorf("alternatives: %q is no name for an alternative (lower-case letters, digits, - and _; not %q)", name, NoRecipe)
		}
		if err := r.Alternatives[name].storable(); err != nil {
			return fmt.Errorf("alternatives.%s.%w", name, err)
		}
	}
	return nil
}

// storable is validate for the settings of a recipe, which sampler.json
// holds: experts that are files of the bundle and no decode options.
func (s Sampler) storable() error {
	if err := s.validate(); err != nil {
		return err
	}
	for i, e := range s.Experts {
		if e.Model != nil {
			return fmt.Errorf("experts[%d]: an expert given as a model (Expert.Model), not a file of the bundle", i)
		}
	}
	if len(s.Decode) > 0 {
		return errors.New("decode: decode options of one's own (Sampler.Decode) cannot be written to a recipe")
	}
	return nil
}

// validate is the card's part of Recipe.Validate, with errors that begin
// with the key.
func (c Card) validate() error {
	switch {
	case c.Validity != "" && !slices.Contains(validityRules, c.Validity):
		return fmt.Errorf("validity: %q is not one of %s", c.Validity, strings.Join(validityRules, ", "))
	case c.Output != "" && !slices.Contains(outputs, c.Output):
		return fmt.Errorf("output: %q is not one of %s", c.Output, strings.Join(outputs, ", "))
	case c.Molecules != "" && c.Molecules != "moses" && c.Molecules != "guacamol":
		return fmt.Errorf("molecules: %q is neither moses nor guacamol", c.Molecules)
	case (c.Output == "smiles" || c.Validity == "molecule") && c.Molecules == "":
		return errors.New("molecules: a model of molecules (output smiles or validity molecule) needs its encoding, moses or guacamol")
	}
	if d := c.Data; d != nil {
		for _, f := range []struct{ key, name string }{{"train_graphs", d.TrainGraphs}, {"val_graphs", d.ValGraphs}} {
			if f.name != "" && !fileName(f.name) {
				return fmt.Errorf("data.%s: %q is not a file name in the bundle", f.key, f.name)
			}
		}
		switch {
		case d.Train < 0 || d.Val < 0:
			return fmt.Errorf("data: negative counts of graphs (train %d, val %d)", d.Train, d.Val)
		case d.Nodes[0] < 0 || d.Nodes[1] < d.Nodes[0]:
			return fmt.Errorf("data.nodes: %v is not a range of node counts", d.Nodes)
		case d.NodeClasses < 0 || d.EdgeClasses < 0:
			return fmt.Errorf("data: negative numbers of classes (node %d, edge %d)", d.NodeClasses, d.EdgeClasses)
		}
	}
	return nil
}

// fileName reports whether name is a plain file name, as a bundle's files
// are named (no directory, not . or ..).
func fileName(name string) bool {
	return name != "" && name == filepath.Base(name) && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}

// Lookup returns the settings of an alternative, or Sampler for "".
func (r *Recipe) Lookup(name string) (Sampler, bool) {
	if name == "" {
		return r.Sampler, true
	}
	s, ok := r.Alternatives[name]
	return s, ok
}

// Names lists the recipe's alternatives, sorted.
func (r *Recipe) Names() []string { return sortedKeys(r.Alternatives) }

// Validate reports whether s can be used, naming the key of the first
// setting that cannot.
func (s Sampler) Validate() error { return s.validate() }

// validate is Validate with errors that begin with the key.
func (s Sampler) validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case s.Steps < 0 || s.Steps > 100000:
		return fmt.Errorf("steps: %d is outside [1, 100000] (0: %d)", s.Steps, DefaultSteps)
	case s.Grid != "" && s.Grid != "uniform" && s.Grid != "random":
		return fmt.Errorf("grid: %q is neither uniform nor random", s.Grid)
	case !(s.TimeShift >= 0 && s.TimeShift <= 100):
		return fmt.Errorf("time_shift: %g is outside (0, 100] (0: none)", s.TimeShift)
	case s.TimeShift != 0 && s.TimeShift != 1 && s.Grid == "random":
		return errors.New("time_shift: a time shift warps the uniform grid, not the random one")
	case s.FinalJump != 0 && !(s.FinalJump > 0.01 && s.FinalJump <= 1):
		return fmt.Errorf("final_jump: %g is outside (0.01, 1] (0: %g)", s.FinalJump, DefaultFinalJump)
	case !(s.Offsets.Step > -1 && s.Offsets.Step < 1):
		return fmt.Errorf("time_offsets.step: %g is outside (-1, 1)", s.Offsets.Step)
	case !(s.Offsets.Jump > -1 && s.Offsets.Jump < 1):
		return fmt.Errorf("time_offsets.jump: %g is outside (-1, 1)", s.Offsets.Jump)
	case !(s.Offsets.From >= 0 && s.Offsets.From < 1):
		return fmt.Errorf("time_offsets.from: %g is outside [0, 1)", s.Offsets.From)
	case !(s.Temperature >= 0 && s.Temperature <= 10):
		return fmt.Errorf("temperature: %g is outside (0, 10] (0: 1)", s.Temperature)
	case s.BatchSize < 0 || s.BatchSize > 1<<20:
		return fmt.Errorf("batch_size: %d is outside [1, %d] (0: %d)", s.BatchSize, 1<<20, DefaultBatchSize)
	case s.EdgeMargin != nil && !finite(*s.EdgeMargin):
		return fmt.Errorf("edge_margin: %g is not a finite number", *s.EdgeMargin)
	case s.Fill != nil && math.IsNaN(*s.Fill):
		return errors.New("fill: NaN is not a number")
	case s.GuidanceScale != nil && !(*s.GuidanceScale >= 0 && *s.GuidanceScale <= MaxGuidanceScale):
		return fmt.Errorf("guidance_scale: %g is outside [0, %d] (1: plain conditional sampling, 0: unconditional)", *s.GuidanceScale, MaxGuidanceScale)
	}
	if s.EdgeRule != "" {
		if _, err := vae.ParseEdgeRule(s.EdgeRule); err != nil {
			return fmt.Errorf("edge_rule: %q is not or, and or mean", s.EdgeRule)
		}
	}
	if err := validateExperts(s.Experts); err != nil {
		return err
	}
	edgeConstraint := false
	for i, c := range s.Constraints {
		_, keep := edgeProperties[c]
		switch {
		case !keep && c != "tree" && c != "connected":
			return fmt.Errorf("constraints[%d]: %q is not planar, forest, dag, tree or connected", i, c)
		case slices.Index(s.Constraints, c) != i:
			return fmt.Errorf("constraints[%d]: %q is given twice", i, c)
		}
		edgeConstraint = edgeConstraint || keep
	}
	for i, c := range s.Complete {
		_, ok := edgeProperties[c]
		switch {
		case !ok && c != "connected":
			return fmt.Errorf("complete[%d]: %q is not planar, connected, forest or dag", i, c)
		case slices.Index(s.Complete, c) != i:
			return fmt.Errorf("complete[%d]: %q is given twice", i, c)
		}
	}
	switch {
	case len(s.Complete) > 0 && len(s.Constraints) > 0:
		return errors.New("complete: completion and constraints exclude each other (a constraint completes every graph with fill)")
	case len(s.Complete) > 0 && s.Fill == nil:
		return errors.New("complete: a completion needs its confidence bound, fill")
	case s.Fill != nil && len(s.Complete) == 0 && !edgeConstraint:
		return errors.New("fill: an edge fill needs a planar, forest or dag constraint, or complete")
	}
	return nil
}

// validateExperts checks the experts' files and bands: bands in (0, 1]
// that do not overlap, and only the last without an end.
func validateExperts(es []Expert) error {
	order := make([]int, len(es))
	for i, e := range es {
		order[i] = i
		switch {
		case e.Model == nil && !fileName(e.File):
			return fmt.Errorf("experts[%d].file: %q is not a file name in the bundle", i, e.File)
		case !(e.From > 0 && e.From <= 1):
			return fmt.Errorf("experts[%d].from: %g is outside (0, 1]", i, e.From)
		case e.Until != 0 && !(e.Until > e.From && e.Until <= 1):
			return fmt.Errorf("experts[%d].until: %g is outside (from = %g, 1] (0: to the end)", i, e.Until, e.From)
		}
	}
	sort.Slice(order, func(a, b int) bool { return es[order[a]].From < es[order[b]].From })
	for k := 1; k < len(order); k++ {
		prev, e := es[order[k-1]], es[order[k]]
		if prev.Until == 0 || prev.Until > e.From {
			return fmt.Errorf("experts[%d].from: %g is inside the band of experts[%d] (from %g until %g; 0: the end)", order[k], e.From, order[k-1], prev.From, prev.Until)
		}
	}
	return nil
}

// validName reports whether name is a name for an alternative.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// LoadRecipe reads and validates a sampler.json. Unknown keys, values out
// of range and formats other than RecipeFormat are errors that name the
// file and the key.
func LoadRecipe(path string) (*Recipe, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := parseRecipe(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// parseRecipe decodes and validates the JSON of a sampler.json
// (LoadRecipe).
func parseRecipe(b []byte) (*Recipe, error) {
	// The format first: a newer file's keys are not unknown, they are
	// another version's.
	var head struct {
		Format *string `json:"format"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("not a sampling recipe: %w", err)
	}
	switch {
	case head.Format == nil:
		return nil, fmt.Errorf("format: missing (want %q)", RecipeFormat)
	case *head.Format != RecipeFormat:
		return nil, fmt.Errorf("format: %q is not %q, the format this version of lgflow reads", *head.Format, RecipeFormat)
	}
	b, err := dropRemovedKeys(b)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Recipe
	if err := dec.Decode(&r); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("unknown key %s (docs/bundle.md lists the keys of %s)", field, RecipeFormat)
		}
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// removedKeys are the sampler keys of earlier versions and the values
// they took by default: a recipe may still hold them at those values,
// which change nothing, and any other value is an error that names what
// replaced it. The settings were removed when their measurements showed
// no gain (issue #46; docs/results.md has the evidence).
var removedKeys = map[string]struct {
	ok  func(json.RawMessage) bool
	why string
}{
	"method": {func(v json.RawMessage) bool { return string(v) == `"euler"` || string(v) == `""` },
		`the Heun integrator was removed; samplers integrate with Euler steps (docs/results.md, "Sampler: Heun (dropped)")`},
	"stochasticity": {func(v json.RawMessage) bool { var f float64; return json.Unmarshal(v, &f) == nil && f == 0 },
		`stochastic steps were removed; samplers integrate the ODE (docs/results.md, "Sampler: stochastic steps (dropped)" and "Stochastic steps under time offsets")`},
}

// dropRemovedKeys returns the JSON of a recipe without the removed keys
// at their default values (removedKeys) in its sampler and alternatives,
// or an error naming one at another value. JSON it cannot read as a
// recipe's objects is returned as it is, for the decoder to report.
func dropRemovedKeys(b []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return b, nil
	}
	dropped := false
	clean := func(path string, raw json.RawMessage) (json.RawMessage, error) {
		var s map[string]json.RawMessage
		if json.Unmarshal(raw, &s) != nil {
			return raw, nil
		}
		found := false
		for _, k := range sortedKeys(s) {
			rk, ok := removedKeys[k]
			if !ok {
				continue
			}
			if !rk.ok(s[k]) {
				return nil, fmt.Errorf("%s.%s: %s is no longer a setting: %s", path, k, s[k], rk.why)
			}
			delete(s, k)
			found = true
		}
		if !found {
			return raw, nil
		}
		dropped = true
		return json.Marshal(s)
	}
	var err error
	if raw, ok := top["sampler"]; ok {
		if top["sampler"], err = clean("sampler", raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["alternatives"]; ok {
		var alts map[string]json.RawMessage
		if json.Unmarshal(raw, &alts) == nil {
			for _, name := range sortedKeys(alts) {
				if alts[name], err = clean("alternatives."+name, alts[name]); err != nil {
					return nil, err
				}
			}
			if dropped {
				if top["alternatives"], err = json.Marshal(alts); err != nil {
					return nil, err
				}
			}
		}
	}
	if !dropped {
		return b, nil
	}
	return json.Marshal(top)
}

// Save validates r and writes it to path as indented JSON, atomically.
func (r *Recipe) Save(path string) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("flow: recipe for %s: %w", path, err)
	}
	return atomicfile.WriteJSON(path, r)
}

// apply sets o to s's settings over Sample's defaults, with the experts
// of m's bundle for those s names by file.
func (s Sampler) apply(o *settings, m *Model) error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("flow: sampler settings: %w", err)
	}
	if s.Steps > 0 {
		o.steps = s.Steps
	}
	o.randomGrid = s.Grid == "random"
	if s.TimeShift > 0 {
		o.shift = s.TimeShift
	}
	if s.FinalJump > 0 {
		o.jumpAt = s.FinalJump
	}
	o.offsets = s.Offsets
	if s.Temperature > 0 {
		o.temp = s.Temperature
	}
	if s.BatchSize > 0 {
		o.batch = s.BatchSize
	}
	if s.EdgeRule != "" {
		o.edgeRule, _ = vae.ParseEdgeRule(s.EdgeRule)
	}
	if s.EdgeMargin != nil {
		v := *s.EdgeMargin
		o.edgeMargin = &v
	}
	if s.GuidanceScale != nil {
		o.cfgW = *s.GuidanceScale
	}
	o.decode = append(s.decodeOptions(), s.Decode...)
	o.experts = nil
	handBack := map[float64]bool{}
	for _, e := range s.Experts {
		em := e.Model
		if em == nil && m != nil {
			em = m.experts[e.File]
		}
		if em == nil {
			return fmt.Errorf("flow: the recipe's expert %s is not part of the model (open its bundle with flow.Open, or give Expert.Model)", e.File)
		}
		o.experts = append(o.experts, expert{em, e.From})
		if e.Until > 0 && e.Until < 1 {
			handBack[e.Until] = true
		}
	}
	for _, e := range s.Experts {
		delete(handBack, e.From) // the next band starts where this one ends
	}
	for _, t := range sortedFloats(handBack) {
		o.experts = append(o.experts, expert{m, t})
	}
	return nil
}

func sortedFloats(set map[float64]bool) []float64 {
	out := make([]float64, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// DecodeOptions returns the LG-VAE decode options of s's decoding
// settings, those Sample decodes with: the edge rule (default "or"), the
// edge margin where s sets one, the constraints, the completion, the fill
// and Decode. vae.Model.DecodeGraphs with them decodes the latents of
// Model.SampleLatents into the graphs Sample with s would give.
func (s Sampler) DecodeOptions() ([]vae.DecodeOption, error) {
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("flow: sampler settings: %w", err)
	}
	rule := vae.EitherDirection
	if s.EdgeRule != "" {
		rule, _ = vae.ParseEdgeRule(s.EdgeRule)
	}
	opts := []vae.DecodeOption{vae.WithEdgeRule(rule)}
	if s.EdgeMargin != nil {
		opts = append(opts, vae.WithEdgeMargin(*s.EdgeMargin))
	}
	opts = append(opts, s.decodeOptions()...)
	return append(opts, s.Decode...), nil
}

// decodeOptions returns the LG-VAE decode options of s's constraints,
// completion and fill (s valid).
func (s Sampler) decodeOptions() []vae.DecodeOption {
	var opts []vae.DecodeOption
	var keeps []func(*graph.Graph) bool
	for _, c := range s.Constraints {
		switch c {
		case "tree":
			opts = append(opts, vae.WithSpanningTree())
		case "connected":
			opts = append(opts, vae.WithConnected())
		default:
			keeps = append(keeps, edgeProperties[c])
		}
	}
	if len(keeps) > 0 {
		opts = append(opts, vae.WithEdgeConstraint(all(keeps)))
		if s.Fill != nil {
			opts = append(opts, vae.WithEdgeFill(*s.Fill))
		}
	}
	if len(s.Complete) > 0 {
		var tests []func(*graph.Graph) bool
		for _, c := range s.Complete {
			if c == "connected" {
				tests = append(tests, graph.IsConnected)
			} else {
				tests = append(tests, edgeProperties[c])
			}
		}
		opts = append(opts, vae.WithEdgeCompletion(all(tests), *s.Fill))
	}
	return opts
}

// all returns the conjunction of tests (the test itself for one).
func all(tests []func(*graph.Graph) bool) func(*graph.Graph) bool {
	if len(tests) == 1 {
		return tests[0]
	}
	return func(g *graph.Graph) bool {
		for _, t := range tests {
			if !t(g) {
				return false
			}
		}
		return true
	}
}

// Describe lists s's settings for logs and reports ("70 steps", "time
// shift 1.43", ...): the ones that differ from Sample's defaults.
func (s Sampler) Describe() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if s.Steps > 0 {
		add("%d steps", s.Steps)
	}
	if s.Grid == "random" {
		add("random grid")
	}
	if s.TimeShift > 0 && s.TimeShift != 1 {
		add("time shift %g", s.TimeShift)
	}
	if s.FinalJump > 0 {
		add("final jump at %g", s.FinalJump)
	}
	if !s.Offsets.Zero() {
		add("time offsets %+v", s.Offsets)
	}
	if s.Temperature > 0 {
		add("temperature %g", s.Temperature)
	}
	if s.BatchSize > 0 {
		add("batch %d", s.BatchSize)
	}
	for _, e := range s.Experts {
		name := cmp.Or(e.File, "(a model)")
		if e.Until > 0 {
			add("expert %s from %g until %g", name, e.From, e.Until)
		} else {
			add("expert %s from %g", name, e.From)
		}
	}
	if s.EdgeRule != "" {
		add("edge rule %s", s.EdgeRule)
	}
	if s.EdgeMargin != nil {
		add("edge margin %g", *s.EdgeMargin)
	}
	if len(s.Constraints) > 0 {
		add("constraints %s", strings.Join(s.Constraints, ","))
	}
	if len(s.Complete) > 0 {
		add("completion of %s graphs", strings.Join(s.Complete, ","))
	}
	if s.Fill != nil {
		add("fill from confidence %g", *s.Fill)
	}
	if s.GuidanceScale != nil {
		add("guidance scale %g", *s.GuidanceScale)
	}
	if len(s.Decode) > 0 {
		add("%d decode options of one's own", len(s.Decode))
	}
	return out
}
