// Package generate is the program of examples/generate and
// examples/planar: their flags (the shared ones of package cli) over
// pipeline.Run, the paper's table on standard output.
package generate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"lgflow/internal/cli"
	"lgflow/internal/pipeline"
	"lgflow/internal/progress"
)

// Main runs the pipeline as a command line program named name: it parses
// args (the flags below; -dataset only when dataset is ""), runs
// pipeline.Run with progress on stderr, prints the paper's table with the
// run's row and the files written on stdout, and returns the exit status:
// 0, 1 on failure, 2 for a bad command line.
//
//	-dataset D             the dataset (pipeline.Names), unless fixed by the caller
//	-out DIR               output directory (default out/<dataset>)
//	-vae F -flow F         checkpoints (default: the shipped bundle, pretrained/<dataset>,
//	                       which samples with its recipe, sampler.json)
//	-n -seed               samples, seed
//	-recipe NAME           the recipe's alternative NAME (constrained, complete, paper; none: no recipe)
//	-sampler KEY=VALUE,... single settings in place of the recipe's, by sampler.json's keys
//	-train                 train from scratch (with -vae: the flow only)
//	-preset cpu|paper      model sizes for -train
//	-vae-time -flow-time   training time budgets; -vae-steps -flow-steps
//	-max-train N           train on the first N training graphs
//	-data DIR -data-seed S data directory and synthetic-data seed
//	-device cpu|cuda       where training steps and the denoiser run
func Main(ctx context.Context, name, dataset string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o pipeline.Options
	ds := &dataset
	if dataset == "" {
		ds = fs.String("dataset", "", "dataset: "+strings.Join(pipeline.Names(), ", "))
	}
	fs.StringVar(&o.Out, "out", "", "output directory (default out/<dataset>)")
	fs.StringVar(&o.VAEPath, "vae", "", "LG-VAE checkpoint (default pretrained/<dataset>/vae.safetensors, or the one -train makes; with -train: train only the flow, on this autoencoder)")
	fs.StringVar(&o.FlowPath, "flow", "", "LG-Flow checkpoint, without a recipe (default pretrained/<dataset>/flow.safetensors with its bundle's recipe, or the one -train makes)")
	fs.IntVar(&o.N, "n", 0, "graphs to sample (0: the paper's number for the dataset)")
	fs.Uint64Var(&o.Seed, "seed", 0, "sampling seed")
	sampler := cli.AddSampler(fs, true)
	fs.BoolVar(&o.Train, "train", false, "run the whole pipeline: data, LG-VAE and LG-Flow training (resumable, in -out), then sampling; -recipe constrained or complete then decode with the dataset's constraint")
	fs.StringVar(&o.Preset, "preset", "cpu", "with -train: model presets, cpu (two cores) or paper (a GPU)")
	fs.DurationVar(&o.VAETime, "vae-time", 0, "with -train: stop LG-VAE training after this long (0: run its steps)")
	fs.DurationVar(&o.FlowTime, "flow-time", 0, "with -train: stop LG-Flow training after this long (0: run its steps)")
	fs.IntVar(&o.VAESteps, "vae-steps", 0, "with -train: override LG-VAE steps")
	fs.IntVar(&o.FlowSteps, "flow-steps", 0, "with -train: override LG-Flow steps")
	maxTrain := cli.AddMaxTrain(fs)
	data := cli.AddData(fs, false)
	device := cli.AddDevice(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return code
	}
	if fs.NArg() > 0 {
		return fail(2, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	o.Dataset, o.MaxTrain, o.Data = *ds, *maxTrain, data.Options()
	o.Recipe, o.Settings = sampler.Recipe, sampler.Edit
	spec, err := pipeline.Lookup(o.Dataset)
	if err != nil {
		return fail(2, err)
	}
	if o.Out == "" {
		o.Out = filepath.Join("out", spec.Name)
	}
	if o.Backend, err = device.Backend(stderr, o.Train); err != nil {
		return fail(2, err)
	}
	o.Device = device.Describe()
	o.Hooks = progress.Text(stderr)
	rep, err := pipeline.Run(ctx, o)
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
