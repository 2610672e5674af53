package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/internal/progress"
)

func init() {
	register("data", "write a dataset split as graph6 / digraph6 lines", runData)
}

func runData(ctx context.Context, args []string) error {
	fs := newFlagSet("data", "lgflow data -dataset NAME -split train|val|test [-data-seed S] [-o FILE] [-data DIR] [-n N]")
	name := fs.String("dataset", "", "dataset: "+strings.Join(datasets.Names(), ", "))
	split := fs.String("split", "train", "split: "+strings.Join(datasets.SplitNames, ", "))
	seed := fs.Uint64("data-seed", 0, "seed of the synthetic graphs / the Ego split (the -data-seed of the other commands)")
	out := fs.String("o", "-", "output file, written atomically (\"-\": standard output; a .gz name is compressed)")
	dir := fs.String("data", "", "data directory holding ego/ and tpu_tile/ (default: $LGFLOW_DATA, else ../shared/data beside go.mod)")
	n := fs.Int("n", 0, "nodes per synthetic graph (0: the dataset's own)")
	showProgress := fs.Bool("progress", false, "report progress on standard error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	names := datasets.Names()
	switch {
	case *name == "":
		return usagef("missing -dataset (one of %s)", strings.Join(names, ", "))
	case !slices.Contains(names, *name):
		return usagef("unknown dataset %q (one of %s)", *name, strings.Join(names, ", "))
	case !slices.Contains(datasets.SplitNames, *split):
		return usagef("unknown split %q (one of %s)", *split, strings.Join(datasets.SplitNames, ", "))
	case *n < 0:
		return usagef("-n must be >= 0")
	}
	opt := datasets.Options{Seed: *seed, N: *n, Dir: *dir}
	if *showProgress {
		opt.Progress = progress.Bar(stderr, *name+" "+*split)
	}
	gs, err := datasets.Load(ctx, *name, *split, opt)
	if err != nil {
		return err
	}
	if *out == "-" {
		return graph.WriteGraphs(stdout, gs)
	}
	if err := graph.WriteFile(*out, gs); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %d graphs (%s %s, seed %d) to %s\n", len(gs), *name, *split, *seed, *out)
	return nil
}
