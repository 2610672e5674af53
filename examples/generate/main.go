// Command generate runs lgflow's whole pipeline on any dataset of the
// LG-Flow paper: data, LG-VAE, latents, LG-Flow, samples and evaluation.
// By default it opens the model bundle shipped in pretrained/<dataset>
// and samples with its recipe (sampler.json; -recipe constrained or
// complete selects its alternatives of those names, -sampler single
// settings); -train trains the models from scratch (cpu presets,
// resumable, with time budgets).
// It prints the paper's table for the dataset with this run's row on top.
//
//	go run ./examples/generate -dataset planar       # shipped models: sample + evaluate
//	go run ./examples/generate -dataset tree -train -vae-time 1h -flow-time 2h
//	go run ./examples/generate -dataset tree -train -vae pretrained/tree/vae.safetensors   # train only the flow
//	go run ./examples/generate -dataset tpu -train   # TPU Tile: trains on val, evaluates on test
//
// Datasets: planar, planar-128, planar-256, planar-512, tree, ego, price,
// tpu (molecules: go run ./examples/moses). It writes into -out (default
// out/<dataset>): report.json, the samples (samples.g6 for undirected
// graphs, samples.d6 for DAGs, samples.jsonl as node-link JSON for
// labelled graphs), samples.svg, and the test and training splits. Run
// with -h for the flags; the implementation is
// examples/internal/generate, over internal/pipeline.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"lgflow/examples/internal/generate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := generate.Main(ctx, "generate", "", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
