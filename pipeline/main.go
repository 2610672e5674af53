package pipeline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"lgflow/cuda"
	"lgflow/flow"
)

// Main runs the pipeline as a command line program named name, the
// implementation of examples/generate and examples/planar: it parses args
// (the flags below; -dataset only when dataset is ""), runs Run with
// TextHooks on stderr, prints the paper's table with the run's row and the
// files written on stdout, and returns the exit status: 0, 1 on failure,
// 2 for a bad command line.
//
//	-dataset D             the dataset (Names), unless fixed by the caller
//	-out DIR               output directory (default out/<dataset>)
//	-vae F -flow F         checkpoints (default: the shipped bundle, pretrained/<dataset>,
//	                       which samples with its recipe, sampler.json)
//	-train                 train from scratch (with -vae: the flow only)
//	-preset cpu|paper      model sizes for -train
//	-vae-time -flow-time   training time budgets; -vae-steps -flow-steps
//	-max-train N           train on the first N training graphs
//	-n -batch -seed        samples, sampling batch, seed
//	-steps -time-shift     the time grid (default: the recipe's with the shipped models,
//	                       else flow.Sample's)
//	-edge-rule -edge-margin -fill -temperature -final-jump
//	                       sampler settings (default: the recipe's, else flow.Sample's)
//	-constrained -complete the recipe's constrained or complete alternative
//	-recipe NAME           the recipe's alternative NAME (e.g. paper)
//	-expert F -expert-from T
//	                       an expert denoiser instead of the recipe's (none: the flow alone)
//	-step-offset S -step-offset-from T -jump-offset J
//	                       the denoiser's time offsets (default: the recipe's)
//	-data DIR -data-seed S data directory and synthetic-data seed
//	-device cpu|cuda       where training steps and the denoiser run
func Main(ctx context.Context, name, dataset string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	ds := &dataset
	if dataset == "" {
		ds = fs.String("dataset", "", "dataset: "+strings.Join(Names(), ", "))
	}
	fs.StringVar(&o.Out, "out", "", "output directory (default out/<dataset>)")
	fs.StringVar(&o.VAEPath, "vae", "", "LG-VAE checkpoint (default pretrained/<dataset>/vae.safetensors, or the one -train makes; with -train: train only the flow, on this autoencoder)")
	fs.StringVar(&o.FlowPath, "flow", "", "LG-Flow checkpoint (default pretrained/<dataset>/flow.safetensors, or the one -train makes)")
	fs.IntVar(&o.N, "n", 0, "graphs to sample (0: the paper's number for the dataset)")
	fs.IntVar(&o.Steps, "steps", 0, "sampler steps (0: the recipe's grid with the shipped models, unless -time-shift is given; else flow.Sample's default, 100)")
	fs.Float64Var(&o.TimeShift, "time-shift", 0, "warp the time grid, t = s·u/(1+(s-1)·u): s > 1 makes the steps near the noise longer, those near the data shorter (flow.Sampler.TimeShift; 0: the recipe's grid with the shipped models, unless -steps is given; else uniform)")
	fs.IntVar(&o.Batch, "batch", 0, "sampling batch size (0: the recipe's, else the dataset's default)")
	fs.Uint64Var(&o.Seed, "seed", 0, "sampling seed")
	fs.StringVar(&o.EdgeRule, "edge-rule", "", "decoding of undirected edges: or (the reference rule), and (both directions must agree), mean (mean score); default: the recipe's, else flow.Sample's")
	fs.BoolVar(&o.Constrained, "constrained", false, "decode under the dataset's constraint (planarity, acyclicity, spanning trees for Tree: valid by construction there; not the paper's sampler): the shipped models' recipe \"constrained\"")
	fs.BoolVar(&o.Complete, "complete", false, "the shipped models' recipe \"complete\": complete the samples that decode valid: add the missing pairs of edge confidence at least -fill (default: the dataset's, -4 for planar), most confident first, while they stay valid; invalid samples stay as decoded, so validity is the decoder's own (vae.WithEdgeCompletion; not the paper's decoder)")
	fs.StringVar(&o.Recipe, "recipe", "", "the bundle's recipe alternative to sample with (e.g. paper: the paper's decoder where the default decodes under a constraint, as for tree and planar-128; none: no recipe, flow.Sample's defaults; default: the recipe's default)")
	fill := fs.Float64("fill", 0, "with -constrained or -complete: add the missing pairs of edge confidence (logit over no-edge) at least this back, most confident first, while the constraint holds (vae.WithEdgeFill; with -complete: while the sample stays valid; default: the dataset's, -4 for planar, -8 for planar-128/256/512, none elsewhere; inf: none)")
	edgeMargin := fs.Float64("edge-margin", 0, "logit margin an edge must beat no-edge by (default: the recipe's, else the LG-VAE's own, 0 with -constrained unless only connectivity is enforced; 0: the argmax; larger: fewer spurious edges, more valid planar graphs, worse MMDs)")
	fs.Float64Var(&o.Temperature, "temperature", 0, "scale of the initial noise (0: the recipe's, else flow.Sample's default, 1)")
	fs.Float64Var(&o.FinalJump, "final-jump", 0, "integrate to this time, then take the denoiser's one-step estimate (0: the recipe's, else flow.Sample's default, 0.95; 1: none)")
	fs.StringVar(&o.ExpertPath, "expert", "", "LG-Flow whose denoiser replaces the flow's from -expert-from on, without the recipe's settings (flow.Expert; default: the recipe's experts; none: no expert and no recipe, the paper's single denoiser at flow.Sample's defaults)")
	fs.Float64Var(&o.ExpertFrom, "expert-from", 0, "first time at which the expert's denoiser is used (0: flow.DefaultExpertFrom for -expert, the recipe's for its own expert)")
	fs.BoolVar(&o.Train, "train", false, "run the whole pipeline: data, LG-VAE and LG-Flow training (resumable, in -out), then sampling")
	fs.StringVar(&o.Preset, "preset", "cpu", "with -train: model presets, cpu (two cores) or paper (a GPU)")
	fs.DurationVar(&o.VAETime, "vae-time", 0, "with -train: stop LG-VAE training after this long (0: run its steps)")
	fs.DurationVar(&o.FlowTime, "flow-time", 0, "with -train: stop LG-Flow training after this long (0: run its steps)")
	fs.IntVar(&o.VAESteps, "vae-steps", 0, "with -train: override LG-VAE steps")
	fs.IntVar(&o.FlowSteps, "flow-steps", 0, "with -train: override LG-Flow steps")
	fs.IntVar(&o.MaxTrain, "max-train", 0, "with -train: train on the first N training graphs only (0: all)")
	fs.StringVar(&o.Data.Dir, "data", "", "data directory holding ego/ and tpu_tile/ (default: $LGFLOW_DATA, else ../shared/data beside go.mod)")
	fs.Uint64Var(&o.Data.Seed, "data-seed", 0, "seed of the synthetic datasets")
	var offsets flow.TimeOffsets
	fs.Float64Var(&offsets.Step, "step-offset", 0, "time offset of the denoiser at the steps from -step-offset-from on, before the final one (flow.TimeOffsets; default, unless one of the three offset flags is given: the recipe's, else none)")
	fs.Float64Var(&offsets.From, "step-offset-from", 0, "first time -step-offset and -jump-offset apply at (a final step that starts earlier is not shifted)")
	fs.Float64Var(&offsets.Jump, "jump-offset", 0, "time offset of the denoiser at the final jump to the data (flow.TimeOffsets)")
	device := fs.String("device", "cpu", "where training steps and the denoiser run: cpu or cuda (an NVIDIA GPU)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "edge-margin":
			o.EdgeMargin = edgeMargin
		case "fill":
			o.Fill = fill
		case "step-offset", "step-offset-from", "jump-offset":
			o.Offsets = &offsets
		}
	})
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return code
	}
	if fs.NArg() > 0 {
		return fail(2, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	o.Dataset = *ds
	spec, err := Lookup(o.Dataset)
	if err != nil {
		return fail(2, err)
	}
	if o.Out == "" {
		o.Out = filepath.Join("out", spec.Name)
	}
	if o.Backend, err = cuda.Select(*device); err != nil {
		return fail(2, err)
	}
	o.Hooks = TextHooks(stderr)
	rep, err := Run(ctx, o)
	if err != nil {
		if errors.Is(err, context.Canceled) && o.Train {
			fmt.Fprintf(stderr, "%s: interrupted; run the same command again to resume training (state in %s)\n", name, o.Out)
		}
		return fail(1, err)
	}
	if err := rep.WriteTable(stdout, spec); err != nil {
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "\nwrote %s/{%s}\n", o.Out, strings.Join(rep.Files, ","))
	return 0
}
