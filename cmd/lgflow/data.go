package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/internal/cli"
	"lgflow/internal/progress"
)

func init() {
	register("data", "write a dataset split as graph6 / digraph6 lines", runData)
}

func runData(ctx context.Context, args []string) error {
	fs := newFlagSet("data", "lgflow data -dataset NAME -split train|val|test [-data-seed S] [-o FILE] [-data DIR] [-nodes N]")
	data := cli.AddData(fs, true)
	split := fs.String("split", "train", "split: "+strings.Join(datasets.SplitNames, ", "))
	out := fs.String("o", "-", "output file, written atomically (\"-\": standard output; a .gz name is compressed)")
	n := fs.Int("nodes", 0, "nodes per synthetic graph (0: the dataset's own)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	name, seed := &data.Dataset, &data.Seed
	names := datasets.Names()
	switch {
	case *name == "":
		return usagef("missing -dataset (one of %s)", strings.Join(names, ", "))
	case !slices.Contains(names, *name):
		return usagef("unknown dataset %q (one of %s)", *name, strings.Join(names, ", "))
	case !slices.Contains(datasets.SplitNames, *split):
		return usagef("unknown split %q (one of %s)", *split, strings.Join(datasets.SplitNames, ", "))
	case *n < 0:
		return usagef("-nodes must be >= 0")
	}
	opt := data.Options()
	opt.N = *n
	if progress.IsTerminal(stderr) {
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
