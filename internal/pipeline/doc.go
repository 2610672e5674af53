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
// for trained models, edited by Options.Settings; the per-model sampler
// settings live in the bundles, not here), evaluates them as the paper
// does (Spec: MMDs with V.U.N. for Planar, Tree and DAGs, the ratio for
// Ego, label-aware isomorphism for TPU Tile) and writes report.json, the
// samples, samples.svg and the splits. Report.WriteTable prints the
// paper's table for the dataset with the run's row on top.
//
// It is the implementation of examples/generate and examples/planar
// (their flags are in examples/internal/generate), internal because it is
// a program's logic: the paper's tables, the dataset registry and the
// run's report. The program chooses the backend (Options.Backend) and
// draws the progress (Options.Hooks, package progress). Every file is
// written atomically.
package pipeline
