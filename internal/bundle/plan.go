package bundle

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/vae"
)

// DataFacts are what the training rule (PlanFor) reads from a set of
// graphs (Inspect).
type DataFacts struct {
	Graphs int
	// Directed is true for directed graphs (all of them: Inspect refuses a
	// mix).
	Directed bool
	// NodeClasses is the number of node labels (largest label + 1; 0 for
	// unlabelled graphs) and EdgeClasses that of edge labels (1 for
	// unlabelled edges).
	NodeClasses, EdgeClasses int
	// MinNodes and MaxNodes bound the graphs' node counts; MeanNodes and
	// MeanEdges are the means.
	MinNodes, MaxNodes   int
	MeanNodes, MeanEdges float64
}

// GraphError is an error in one graph of a set, by its index, so that a
// caller that read the graphs from a file can name the line.
type GraphError struct {
	Index int
	Err   error
}

// Error names the graph by its index.
func (e *GraphError) Error() string { return fmt.Sprintf("graph %d: %v", e.Index, e.Err) }

// Unwrap returns the error in the graph.
func (e *GraphError) Unwrap() error { return e.Err }

// Inspect describes a set of graphs for PlanFor. A set without graphs, a
// graph without nodes, a mix of directed and undirected graphs, or of
// graphs with and without node labels, and negative labels are errors
// (a *GraphError naming the first graph that breaks the rule).
func Inspect(gs []*graph.Graph) (DataFacts, error) {
	if len(gs) == 0 {
		return DataFacts{}, errors.New("no graphs")
	}
	d := DataFacts{Graphs: len(gs), Directed: gs[0].Directed(), EdgeClasses: 1, MinNodes: math.MaxInt}
	labelled := gs[0].NodeLabels != nil
	for i, g := range gs {
		switch {
		case g.N() == 0:
			return d, &GraphError{i, errors.New("the graph has no nodes")}
		case g.Directed() != d.Directed:
			return d, &GraphError{i, fmt.Errorf("the graph is %s, the first is %s: a set of graphs is either directed or undirected", direction(g.Directed()), direction(d.Directed))}
		case (g.NodeLabels != nil) != labelled:
			return d, &GraphError{i, fmt.Errorf("the graph has %s, the first %s: either every graph has node labels or none", labels(g.NodeLabels != nil), labels(labelled))}
		}
		for u, l := range g.NodeLabels {
			if l < 0 {
				return d, &GraphError{i, fmt.Errorf("node %d has the negative label %d", u, l)}
			}
			d.NodeClasses = max(d.NodeClasses, l+1)
		}
		for _, e := range g.Edges() {
			if e.Label < 0 {
				return d, &GraphError{i, fmt.Errorf("edge %d-%d has the negative label %d", e.From, e.To, e.Label)}
			}
			d.EdgeClasses = max(d.EdgeClasses, e.Label+1)
		}
		d.MinNodes, d.MaxNodes = min(d.MinNodes, g.N()), max(d.MaxNodes, g.N())
		d.MeanNodes += float64(g.N()) / float64(len(gs))
		d.MeanEdges += float64(g.M()) / float64(len(gs))
	}
	return d, nil
}

func direction(directed bool) string {
	if directed {
		return "directed"
	}
	return "undirected"
}

func labels(has bool) string {
	if has {
		return "node labels"
	}
	return "none"
}

// Sizes are the model sizes PlanFor scales to: "cpu" (two cores), "paper"
// (the paper's widths, for a GPU) and "tiny" (tests: a few steps).
var Sizes = []string{"cpu", "paper", "tiny"}

// MaxNodes is the largest graph each size trains on: the LG-VAE decoder
// scores every pair of a graph's nodes, so memory and time grow with the
// square of the largest graph of a batch.
var MaxNodes = map[string]int{"cpu": 512, "paper": 2048, "tiny": 128}

// Plan is what TrainBundle trains: the LG-VAE and LG-Flow configurations
// for the data, picked by PlanFor. Steps, learning-rate schedules and the
// intervals of validation and checkpoints are the presets' until a budget
// sets them (TrainBundle).
type Plan struct {
	Size string      `json:"size"`
	VAE  vae.Preset  `json:"vae"`
	Flow flow.Config `json:"flow"`
}

// PlanFor picks the models for data described by d, at a size of Sizes.
// The rule starts from the cpu presets of the paper's datasets
// (vae.PresetFor("planar", "cpu"), flow.PresetFor: a 6 × 128 LG-VAE and a
// 4 × 128 DiT) and sets from the data, with n the largest node count:
//
//   - k, the eigenpairs: n/4 rounded up to a power of two, within [16, 64]
//     (the presets: 16 for 64 nodes, 64 for Ego's 400);
//   - the latent size: 16 (paper: 24 for labelled graphs or n > 64, as the
//     paper's Ego, Price, TPU and MOSES models);
//   - widths: the LG-VAE 128 wide and 6 deep, the DiT 4 × 128 (paper: 256
//     wide and 16 deep, DiT-T);
//   - node and edge classes from the labels; directed graphs get the
//     magnetic Laplacian with a q per graph; the 1-WL orbit perturbation
//     is 0.005 (0.05 for labelled graphs);
//   - batches of 32·64/n graphs for the LG-VAE and 64·64/n for the flow,
//     down to a power of two within [4, 64] and [8, 64] (paper: 256·64/n
//     within [16, 512] and [32, 1024]), and at most the number of training
//     graphs; graphs of very different sizes (largest above twice the
//     smallest) are batched by size;
//   - GraphNorm in the LG-VAE (vae.GraphNorm), which learns far faster
//     than the LayerNorm of the shipped presets;
//   - a preconditioned denoiser (flow.Config.Precondition): a flow
//     trained within a budget predicts its first steps from noise far
//     better with it (community graphs: orbit MMD 300 → 128 at equal
//     steps, docs/results.md).
//
// A larger graph than MaxNodes[size] is an error.
func PlanFor(d DataFacts, size string, ntrain int) (*Plan, error) {
	limit, ok := MaxNodes[size]
	if !ok {
		return nil, fmt.Errorf("bundle: unknown preset %q (want cpu, paper or tiny)", size)
	}
	if d.MaxNodes > limit {
		return nil, fmt.Errorf("bundle: the largest graph has %d nodes; the %s preset trains on graphs of at most %d", d.MaxNodes, size, limit)
	}
	n := max(d.MaxNodes, 1)
	labelled := d.NodeClasses > 0 || d.EdgeClasses > 1
	bucket := d.MaxNodes > 2*d.MinNodes && d.MaxNodes > 32
	m := vae.Config{K: clampPow2(ceilDiv(n, 4), 16, 64), Latent: 16, PhiWidth: 128, Layers: 6, Width: 128, DeepSet: 16, Eta: 0.005,
		NodeClasses: d.NodeClasses, EdgeClasses: d.EdgeClasses, Directed: d.Directed, QPerGraph: d.Directed,
		Norm: vae.GraphNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true}
	if labelled {
		m.Eta = 0.05
	}
	t := vae.TrainConfig{Steps: 20000, BatchSize: clampPow2Floor(32*64/n, 4, 64), LR: 1e-3, MinLR: 1e-4, Warmup: 200, WeightDecay: 1e-4,
		Beta1: 0.9, Beta2: 0.95, ValEvery: 500, CheckpointEvery: 250, ClipNorm: 1, BucketBySize: bucket}
	flowSize, flowBatch := "cpu", clampPow2Floor(64*64/n, 8, 64)
	switch size {
	case "paper":
		if labelled || n > 64 {
			m.Latent = 24
		}
		m.PhiWidth, m.Width, m.Layers, m.DeepSet = 256, 256, 16, 24
		m.LogVarInit, m.ScaleEigvecs, m.PhiGate, m.SignFlips = 0, false, false, true
		t = vae.TrainConfig{Steps: 50000, BatchSize: clampPow2Floor(256*64/n, 16, 512), LR: 2e-4, MinLR: 1e-4, Warmup: 100, WeightDecay: 1e-4,
			Beta1: 0.9, Beta2: 0.95, ValEvery: 1000, CheckpointEvery: 500, BucketBySize: bucket}
		flowSize, flowBatch = "T", clampPow2Floor(256*64/n, 32, 1024)
	case "tiny":
		m.K, m.Latent, m.PhiWidth, m.Width, m.Layers, m.DeepSet = 8, 8, 16, 16, 2, 8
		t.BatchSize = 8
		flowSize, flowBatch = "tiny", 8
	}
	t.BatchSize = min(t.BatchSize, max(1, ntrain))
	if err := m.Validate(); err != nil {
		return nil, err
	}
	fc, err := flow.Preset("", flowSize, m.Latent)
	if err != nil {
		return nil, err
	}
	fc.BatchSize, fc.BucketBySize, fc.Precondition = min(flowBatch, max(1, ntrain)), bucket, true
	if size == "cpu" {
		fc.TimeMean = 1 // as flow.PresetFor's cpu presets
	}
	if err := fc.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{Size: size, VAE: vae.Preset{Model: m, Train: t}, Flow: fc}
	if size == "tiny" {
		p.SetVAESteps(tinySteps)
		p.SetFlowSteps(tinySteps)
	}
	return p, nil
}

// tinySteps are the steps of each model of the tiny size: a run of
// seconds, for tests.
const tinySteps = 6

// SetVAESteps sets the LG-VAE's steps and what follows from them: a
// warmup of a tenth of them (at most the preset's), about ten validations
// and twenty checkpoints.
func (p *Plan) SetVAESteps(steps int) {
	t := &p.VAE.Train
	t.Steps = max(steps, 1)
	t.Warmup = min(t.Warmup, t.Steps/10)
	t.ValEvery = max(t.Steps/10, 1)
	t.CheckpointEvery = max(t.Steps/20, 1)
}

// SetFlowSteps sets the flow's steps and what follows from them: five
// validations, twenty checkpoints, an EMA of decay 1 - 10/steps (within
// [0.9, 0.999]) from a tenth of the run on, and a linear cooldown of the
// learning rate over the last fifth.
func (p *Plan) SetFlowSteps(steps int) {
	c := &p.Flow
	c.Steps = max(steps, 1)
	c.ValEvery = max(c.Steps/5, 1)
	c.CheckpointEvery = max(c.Steps/20, 1)
	c.EMABeta = min(max(1-10/float64(c.Steps), 0.9), 0.999)
	c.EMAAfter = c.Steps / 10
	c.Cooldown = c.Steps / 5
}

// ReplanVAESteps sets the LG-VAE's steps in the middle of its training
// (re-planned from the measured rate): as SetVAESteps, but the warmup
// stays as first planned, since the steps taken followed it.
func (p *Plan) ReplanVAESteps(steps int) {
	warmup := p.VAE.Train.Warmup
	p.SetVAESteps(steps)
	p.VAE.Train.Warmup = warmup
}

// ReplanFlowSteps sets the flow's steps in the middle of its training,
// done steps in (re-planned from the measured rate): as SetFlowSteps, but
// the EMA's decay and start stay as first planned, since the EMA so far
// followed them (flow.Train resumes only a checkpoint of the same EMA),
// and a cooldown that has begun keeps its start (it then ends at the new
// steps).
func (p *Plan) ReplanFlowSteps(steps, done int) {
	c := &p.Flow
	beta, after, cooldownAt := c.EMABeta, c.EMAAfter, c.Steps-c.Cooldown
	p.SetFlowSteps(steps)
	c.EMABeta, c.EMAAfter = beta, after
	if done > cooldownAt && cooldownAt < c.Steps {
		c.Cooldown = c.Steps - cooldownAt
	}
}

// stepsFor returns the steps that fit in d at rate steps per second, with
// a sixth of d left for validations and checkpoints, at least 20.
func stepsFor(rate float64, d time.Duration) int {
	return max(20, int(rate*d.Seconds()*5/6))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// clampPow2 rounds v up to a power of two within [lo, hi].
func clampPow2(v, lo, hi int) int {
	p := 1
	if v > 1 {
		p = 1 << bits.Len(uint(v-1))
	}
	return min(max(p, lo), hi)
}

// clampPow2Floor rounds v down to a power of two within [lo, hi].
func clampPow2Floor(v, lo, hi int) int {
	p := 1
	if v > 1 {
		p = 1 << (bits.Len(uint(v)) - 1)
	}
	return min(max(p, lo), hi)
}
