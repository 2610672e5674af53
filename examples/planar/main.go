// Command planar is lgflow's end-to-end example on Extended Planar graphs
// (64 nodes): it opens the model bundle shipped in pretrained/planar (the
// LG-VAE, the LG-Flow, its expert and sampler.json, the sampling recipe),
// samples graphs with the recipe, evaluates them against the test split and
// prints the results beside the paper's. flow.Sample(ctx, m, 256,
// flow.WithSeed(s)) on flow.Open("pretrained/planar") gives the graphs of
// -seed s; -recipe selects an alternative of the recipe and -sampler
// replaces its settings one by one (sampler.json's keys).
//
//	go run ./examples/planar                 # sample + evaluate (a few minutes on 2 cores)
//	go run ./examples/planar -train          # the whole pipeline: data, LG-VAE, LG-Flow, sampling, evaluation
//
// It writes into -out (default out/planar): report.json, samples.g6,
// samples.svg, test.g6 and train.g6. It is examples/generate with the
// dataset fixed (go run ./examples/generate -dataset planar); run with -h
// for the flags.
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
	code := generate.Main(ctx, "planar", "planar", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
