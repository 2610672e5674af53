package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"lgflow/graph"
	"lgflow/internal/progress"
	"lgflow/metrics"
)

func init() {
	register("eval", "compare generated graphs with reference graphs (MMD, validity, V.U.N.)", runEval)
}

func runEval(ctx context.Context, args []string) error {
	fs := newFlagSet("eval", "lgflow eval -gen GEN.g6 -ref TEST.g6 [-train TRAIN.g6] [-kind generic|planar|tree|ego|dag] [-json]")
	genPath := fs.String("gen", "", "generated graphs (graph6 / digraph6 lines, .gz allowed)")
	refPath := fs.String("ref", "", "reference graphs, the test split in the paper's tables")
	trainPath := fs.String("train", "", "training graphs (novelty, V.U.N., Ego ratio)")
	kindName := fs.String("kind", "generic", "metric set: generic, planar, tree, ego, dag")
	asJSON := fs.Bool("json", false, "print the report as JSON (raw MMD², rates as fractions)")
	emd := fs.Bool("emd", false, "use GRAN's Gaussian-EMD kernels instead of Gaussian-TV")
	compat := fs.Bool("directo-compat", false, "dag: reproduce Directo's degree MMD (swapped in/out degree sequences)")
	labels := fs.Bool("node-labels", false, "isomorphism tests respect node labels (TPU Tile)")
	isoTimeout := fs.Duration("iso-timeout", 0, "time limit per isomorphism look-up (0: 5s for dag, none otherwise; <0: none)")
	decimals := fs.Int("decimals", 1, "decimals in the table")
	showProgress := fs.Bool("progress", false, "report progress on standard error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	kind, err := metrics.ParseKind(*kindName)
	switch {
	case err != nil:
		return usagef("%v", err)
	case *genPath == "":
		return usagef("missing -gen")
	case *refPath == "":
		return usagef("missing -ref")
	case *decimals < 0:
		return usagef("-decimals must be >= 0")
	}
	read := func(path string) ([]*graph.Graph, error) {
		if path == "" {
			return nil, nil
		}
		gs, err := graph.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(gs) == 0 {
			return nil, fmt.Errorf("%s: no graphs", path)
		}
		return gs, nil
	}
	gen, err := read(*genPath)
	if err != nil {
		return err
	}
	ref, err := read(*refPath)
	if err != nil {
		return err
	}
	train, err := read(*trainPath)
	if err != nil {
		return err
	}
	opt := metrics.Options{Kind: kind, EMD: *emd, DirectoCompat: *compat, NodeLabels: *labels, IsoTimeout: *isoTimeout}
	if *showProgress {
		var mu sync.Mutex
		bars := map[string]func(done, total int){}
		opt.Progress = func(stage string, done, total int) {
			mu.Lock()
			bar, ok := bars[stage]
			if !ok {
				bar = progress.Bar(stderr, stage)
				bars[stage] = bar
			}
			mu.Unlock()
			bar(done, total)
		}
	}
	start := time.Now()
	rep, err := metrics.Evaluate(ctx, gen, ref, train, opt)
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	if err := rep.WriteTable(stdout, *decimals); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "evaluated in %.1f s\n", time.Since(start).Seconds())
	return err
}
