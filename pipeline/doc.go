// Package pipeline takes any dataset of the LG-Flow paper through the
// whole system, the same way for every dataset:
//
//	data -> LG-VAE -> latents -> LG-Flow -> samples -> evaluation
//
// Run loads a dataset's splits (package graph/datasets), the shipped model
// bundle in pretrained/<dataset> (flow.Open: the LG-VAE, the LG-Flow, its
// experts and its sampling recipe, sampler.json), or trains both models
// from scratch with Options.Train, resumably and within time budgets,
// measures the autoencoder's reconstruction of the test split, samples
// graphs with flow.Sample (the bundle's recipe, or flow.Sample's defaults
// for trained models, with the settings Options gives in their place;
// the per-model sampler settings live in the bundles, not here), evaluates them as
// the paper does (Spec: MMDs with V.U.N. for Planar, Tree and DAGs, the
// ratio for Ego, label-aware isomorphism for TPU Tile) and writes
// report.json, the samples, samples.svg and the splits. Report.WriteTable
// prints the paper's table for the dataset with the run's row on top.
//
//	spec, _ := pipeline.Lookup("tree")
//	rep, err := pipeline.Run(ctx, pipeline.Options{Dataset: "tree", Train: true,
//		VAETime: time.Hour, FlowTime: time.Hour, Hooks: pipeline.TextHooks(os.Stderr)})
//	if err != nil { ... }
//	rep.WriteTable(os.Stdout, spec)
//
// The example commands examples/generate (any dataset) and examples/planar
// are thin wrappers over Run. Progress goes through Hooks; TextHooks prints
// it. Every file is written atomically.
//
// Graphs of one's own take the same way without a dataset name:
// TrainBundle picks the models from the data (Inspect, PlanFor), trains
// them within a budget, resumably, and writes a bundle whose recipe is the
// better measured of plain and constrained decoding; Tune searches a
// bundle's sampler settings on validation graphs, scored by Measure's
// V.U.N. and MMDs. lgflow train and lgflow tune are thin wrappers over
// them.
package pipeline
