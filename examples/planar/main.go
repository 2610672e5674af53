// Command planar is lgflow's end-to-end example on Extended Planar graphs
// (64 nodes): it opens the model bundle shipped in pretrained/planar (the
// LG-VAE, the LG-Flow, its expert and sampler.json, the sampling recipe),
// samples graphs with the recipe, evaluates them against the test split and
// prints the results beside the paper's. flow.Sample(ctx, m, 256,
// flow.WithSeed(s)) on flow.Open("pretrained/planar") gives the graphs of
// -seed s; the sampler flags replace the recipe's settings one by one.
//
//	go run ./examples/planar                 # sample + evaluate (a few minutes on 2 cores)
//	go run ./examples/planar -train          # the whole pipeline: data, LG-VAE, LG-Flow, sampling, evaluation
//
// It writes into -out (default out/planar): report.json, samples.g6,
// samples.svg, test.g6 and train.g6. It is the shared pipeline
// (package pipeline, also go run ./examples/generate -dataset planar) with
// the dataset fixed; run with -h for the flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"lgflow/pipeline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := pipeline.Main(ctx, "planar", "planar", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
