package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lgflow/flow"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/graph/mol"
	"lgflow/internal/cli"
	"lgflow/internal/progress"
	"lgflow/metrics"
	"lgflow/vae"
)

func init() {
	register("train-flow", "train LG-Flow in the latent space of a trained LG-VAE", runTrainFlow)
	register("sample", "sample graphs from trained LG-VAE and LG-Flow models", runSample)
}

// validityScore returns the fraction-of-valid-graphs scorer used to pick the
// best flow checkpoint and reported by recon (for "moses": graphs that
// decode to a valid molecule with molOpts), or nil for datasets without a
// validity notion.
func validityScore(dataset string, molOpts ...mol.DecodeOption) func([]*graph.Graph) float64 {
	var valid func(*graph.Graph) bool
	switch dataset {
	case "planar", "planar-128", "planar-256", "planar-512":
		valid = metrics.IsValidPlanar
	case "tree":
		valid = metrics.IsValidTree
	case "price", "tpu":
		valid = metrics.IsValidDAG
	case "moses":
		valid = func(g *graph.Graph) bool {
			_, err := mol.MOSES.DecodeDatasetGraph(g, molOpts...)
			return err == nil
		}
	default:
		return nil
	}
	return validFraction(valid)
}

// validFraction returns the scorer of the fraction of graphs that valid
// accepts (0 for none).
func validFraction(valid func(*graph.Graph) bool) func([]*graph.Graph) float64 {
	return func(gs []*graph.Graph) float64 {
		n := 0
		for _, g := range gs {
			if valid(g) {
				n++
			}
		}
		return float64(n) / float64(max(len(gs), 1))
	}
}

// flowPreset returns the LG-Flow recipe for a dataset: flow.Preset's for
// the paper's datasets, its recipe for data of one's own for the others
// ("paper" then means the DiT-T recipe).
func flowPreset(dataset, size string, latent int) (flow.Config, error) {
	if c, err := flow.Preset(dataset, size, latent); err == nil {
		return c, nil
	}
	return flow.Preset("", size, latent)
}

// flowRun holds the settings of a train-flow run that -config sets
// besides the flow's configuration.
type flowRun struct {
	// LogEvery is the number of steps between progress lines.
	LogEvery int `json:"log_every"`
}

// flowConfigExcluded are the flow.Config keys -config leaves to flags of
// their own (-cond-drop) and to the conditions (-cond, -cond-prop).
var flowConfigExcluded = []string{"cond_drop", "dit.classes", "dit.cond_dim"}

// trainFlowUsage is the synopsis of lgflow train-flow.
const trainFlowUsage = "lgflow train-flow -vae V -dataset D [-preset cpu|paper|T|S|B] [-train-split S] [-cond FILE | -cond-prop NAMES] [-cond-drop P] [-config KEY=VALUE,...] -out DIR"

func runTrainFlow(ctx context.Context, args []string) (err error) {
	fs := newFlagSet("train-flow", trainFlowUsage)
	vaePath := fs.String("vae", "", "trained LG-VAE (vae.safetensors)")
	data := cli.AddData(fs, true)
	trainSplit := addTrainSplit(fs)
	preset := fs.String("preset", "cpu", "preset: cpu (a small DiT for two cores, sized for the dataset), paper (the reference's DiT, batch and steps for the dataset), or the DiT sizes T, S, B (or tiny)")
	out := fs.String("out", "", "output directory (flow.safetensors: best; last.safetensors: latest EMA; state.safetensors, which a run into the same directory continues)")
	initPath := fs.String("init", "", "start from this flow's denoiser weights and latent scale (same DiT; e.g. the flow an expert is fine-tuned from, or a flow of the LG-VAE -vae was fine-tuned from, found beside it as in a bundle: the scale is then adjusted by the ratio of the two encoders' latent spreads)")
	maxTime := addMaxTime(fs)
	device := cli.AddDevice(fs)
	conds := addCondFlags(fs, false)
	config := cli.AddConfig(fs, "the flow (flow.Config, dit.* its denoiser) and of the run (log_every: steps between progress lines, 50)", flowConfigExcluded, &flow.Config{}, &flowRun{})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *vaePath == "" || data.Dataset == "" || *out == "" {
		return usagef("need -vae, -dataset and -out")
	}
	set := visited(fs)
	condDrop, err := conds.dropout(set["cond-drop"])
	if err != nil {
		return err
	}
	comm, backend, done, err := openTraining(device)
	if err != nil {
		return err
	}
	defer done(&err)
	stderr := rankOut(comm, stderr)
	ae, err := vae.Load(*vaePath)
	if err != nil {
		return err
	}
	run := flowRun{LogEvery: 50}
	config.Apply(nil, &run)
	statePath := filepath.Join(*out, flow.StateFile)
	cfg, err := flowConfig(*preset, set["preset"], data.Dataset, ae, config, condDrop, set["cond-drop"], statePath)
	if err != nil {
		return err
	}
	var init *flow.Model
	if *initPath != "" {
		if init, err = initFlow(*initPath, ae); err != nil {
			return err
		}
	}
	train, err := loadPrepared(ctx, data, *trainSplit, 0, ae.Cfg)
	if err != nil {
		return err
	}
	trainConds, err := flowConditions(conds, train, data.Dataset+" "+*trainSplit, statePath)
	if err != nil {
		return err
	}
	var schema *cond.Schema
	if trainConds != nil {
		schema = trainConds.Schema
	}
	cfg = cfg.ForCondition(schema)
	lat, err := flow.EncodeLatents(ctx, ae, train, 128, progress.Bar(stderr, "encoding latents"))
	if err != nil {
		return err
	}
	lat.Cond = trainConds
	if comm.Size() > 1 {
		fmt.Fprintf(stderr, "data parallel on %d ranks: a global batch of %d graphs\n", comm.Size(), cfg.BatchSize)
	}
	_, err = flow.Train(ctx, cfg, ae, train, lat, flow.TrainOptions{Dir: *out, Resume: true, Init: init, Backend: backend, Comm: comm,
		Score: validityScore(data.Dataset, mol.InferAromaticNH(mol.DefaultInferNH)), LogEvery: run.LogEvery, MaxDuration: *maxTime,
		Progress: func(p flow.Progress) {
			line := fmt.Sprintf("step %6d/%d  loss %.4f  %.2f steps/s  elapsed %s  eta %s", p.Step, p.Steps, p.Loss, p.StepsPerSecond,
				p.Elapsed.Round(time.Second), p.ETA.Round(time.Second))
			if !math.IsNaN(p.Score) {
				line += fmt.Sprintf("  val valid %.3f (best %.3f)", p.Score, p.BestScore)
			}
			fmt.Fprintln(stdout, line+device.Stats())
		}})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "interrupted; run the same command again to continue (state in %s)\n", statePath)
	}
	return err
}

// initFlow loads the flow at path that a train-flow run starts from: in
// ae's latent space, or, when it was trained with another encoder, in
// that of the LG-VAE beside it (vae.safetensors of its bundle).
func initFlow(path string, ae *vae.Model) (*flow.Model, error) {
	m, err := flow.Load(path, ae)
	if err == nil {
		return m, nil
	}
	own, oerr := vae.Load(filepath.Join(filepath.Dir(path), vae.ModelFile))
	if oerr != nil {
		return nil, fmt.Errorf("-init: %w", err)
	}
	if m, oerr = flow.Load(path, own); oerr != nil {
		return nil, fmt.Errorf("-init: %w", err)
	}
	return m, nil
}

// flowConfig returns the configuration a train-flow run trains with: the
// preset for the dataset with -config's settings and -cond-drop
// (condDropSet: given), or, continuing the state at statePath, the
// state's with those given; an explicit -preset (presetSet) of another
// denoiser than the state's is refused.
func flowConfig(preset string, presetSet bool, dataset string, ae *vae.Model, config *cli.Settings, condDrop float64, condDropSet bool, statePath string) (flow.Config, error) {
	cfg, err := flowPreset(dataset, preset, ae.Cfg.Latent)
	if err != nil {
		return cfg, usagef("%v", err)
	}
	// A setting applies when given, whatever its value: val_every=0
	// turns validation off.
	override := func(c *flow.Config) {
		config.Apply(c)
		if condDropSet {
			c.CondDrop = condDrop
		}
	}
	override(&cfg)
	// A resumed run continues with its checkpoint's configuration; only
	// the settings given override it.
	cfg, err = resumeConfig(cfg, statePath, checkpointFlowConfig, func(saved flow.Config) error {
		// The conditions' part of the denoiser is compared with the
		// conditions (flowConditions).
		a, b := saved.DiT, cfg.DiT
		a.Classes, a.CondDim, b.Classes, b.CondDim = 0, 0, 0, 0
		if presetSet && a != b {
			return usagef("-preset %s is another denoiser than the one %s was trained with: %s", preset, statePath,
				strings.Join(configDiff(a, b), ", "))
		}
		return nil
	}, override)
	if err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usagef("%v", err)
	}
	return cfg, nil
}

// checkpointFlowConfig returns the configuration of the flow training
// state at path (flow.CheckpointConfig without the condition schema,
// which flowConditions checks).
func checkpointFlowConfig(path string) (flow.Config, error) {
	c, _, err := flow.CheckpointConfig(path)
	return c, err
}

// flowConditions returns the training conditions of train's graphs that
// the condition flags give (nil: none), checked against those of the
// state at statePath that the run continues.
func flowConditions(conds *condFlags, train *vae.Dataset, what, statePath string) (*cond.Set, error) {
	table, err := conds.table(train.Graphs, what, inG6)
	if err != nil {
		return nil, err
	}
	var set *cond.Set
	var schema *cond.Schema
	if table != nil {
		if set, err = table.Conditions(); err != nil {
			return nil, fmt.Errorf("conditions: %w", err)
		}
		schema = set.Schema
		fmt.Fprintf(stderr, "conditioned on %s\n", schema.Describe())
	}
	if _, err := os.Stat(statePath); err == nil {
		_, saved, err := flow.CheckpointConfig(statePath)
		if err != nil {
			return nil, err
		}
		if err := conditionMismatch(statePath, saved, schema); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// sampleUsage is the synopsis of lgflow sample.
const sampleUsage = "lgflow sample (-model DIR [-recipe NAME] | -vae V -flow F) -n N [-sampler KEY=VALUE,...] [-cond label=NAME|prop=V|NAME=V,...] [-seed S] [-format g6|nodelink|smiles] -o OUT"

func runSample(ctx context.Context, args []string) error {
	fs := newFlagSet("sample", sampleUsage)
	modelDir := fs.String("model", "", "model bundle: a directory holding vae.safetensors, flow.safetensors, its experts and sampler.json, the sampling recipe, which -sampler's settings replace one by one (flow.Open; e.g. pretrained/planar)")
	vaePath := fs.String("vae", "", "trained LG-VAE (vae.safetensors); with -model: instead of the bundle's (a decoder fine-tuned since)")
	flowPath := fs.String("flow", "", "trained LG-Flow (flow.safetensors), without a recipe")
	n := fs.Int("n", 256, "number of graphs")
	seed := fs.Uint64("seed", 0, "seed")
	output := addOutputFlags(fs, "output file, written atomically (\"-\": standard output; a .gz name is compressed)", "-")
	sampler := cli.AddSampler(fs, true)
	device := cli.AddDevice(fs)
	condText := fs.String("cond", "", "conditional models (trained with -cond): sample every graph under this condition, label=NAME, prop=VALUE (a model of one property), NAME=VALUE, or comma-separated pairs for a model of several (label=planar,edges=170); null: none (default: none, the training graphs' whole distribution); -sampler guidance_scale=W follows it more strongly")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := visited(fs)
	switch {
	case *modelDir != "" && *flowPath != "":
		return usagef("-model and -flow exclude each other (a bundle holds its flow)")
	case *modelDir == "" && (*vaePath == "" || *flowPath == ""):
		return usagef("need -model, or -vae and -flow")
	case *modelDir == "" && sampler.Recipe != "":
		return usagef("-recipe needs -model")
	}
	if err := output.check(); err != nil {
		return err
	}
	backend, err := device.Backend(stderr, false)
	if err != nil {
		return err
	}
	m, err := openModel(*modelDir, *vaePath, *flowPath)
	if err != nil {
		return err
	}
	enc, err := output.resolve(m)
	if err != nil {
		return err
	}
	opts := append([]flow.SampleOption{flow.WithSeed(*seed), flow.WithProgress(progress.Bar(stderr, "sampling"))}, sampler.Options()...)
	condOpts, err := conditionOptions(m, sampler, *condText, set["cond"])
	if err != nil {
		return err
	}
	opts = append(opts, condOpts...)
	if err := m.ToBackend(backend); err != nil {
		return err
	}
	if err := sampler.LoadExperts(m, backend); err != nil {
		return err
	}
	gs, err := flow.Sample(ctx, m, *n, opts...)
	if err != nil {
		return err
	}
	return output.write(gs, enc)
}

// openModel opens the model of sample: the bundle in dir (with the LG-VAE
// at vaePath instead of its own, when given), or the flow at flowPath in
// the latent space of the LG-VAE at vaePath.
func openModel(dir, vaePath, flowPath string) (*flow.Model, error) {
	var ae *vae.Model
	if vaePath != "" {
		var err error
		if ae, err = vae.Load(vaePath); err != nil {
			return nil, err
		}
	}
	if dir != "" {
		return flow.Load(dir, ae)
	}
	return flow.Load(flowPath, ae)
}

// modelFormat returns the output format that fits m's graphs: its
// bundle card's (flow.Card.Output), else nodelink for an LG-VAE of
// labelled graphs and g6 (graph6, digraph6 for directed graphs) for
// others.
func modelFormat(m *flow.Model) string {
	if m.Recipe != nil && m.Recipe.Card.Output != "" {
		return m.Recipe.Card.Output
	}
	if m.VAE.Cfg.NodeClasses > 0 || m.VAE.Cfg.EdgeClasses > 1 {
		return formatNodeLink
	}
	return formatG6
}

// cardMolEncoding returns the molecule encoding a bundle's card names,
// checking that the LG-VAE's node and edge classes are among its atom and
// bond types (a model trained by lgflow train on SMILES has the classes
// its molecules have).
func cardMolEncoding(name string, cfg vae.Config) (*mol.Encoding, error) {
	var enc *mol.Encoding
	switch name {
	case "moses":
		enc = mol.MOSES
	case "guacamol":
		enc = mol.GuacaMol
	default:
		return nil, fmt.Errorf("the card's molecule encoding %q is neither moses nor guacamol", name)
	}
	if cfg.Directed || cfg.NodeClasses == 0 || cfg.NodeClasses > enc.NumAtomTypes() || cfg.EdgeClasses > enc.NumBondTypes()-1 {
		return nil, fmt.Errorf("the LG-VAE decodes %d node and %d edge classes (directed %v), not atom and bond types of the %s encoding", cfg.NodeClasses, cfg.EdgeClasses, cfg.Directed, enc.Name)
	}
	return enc, nil
}
