// Package bundle trains, measures and tunes model bundles on graphs of
// one's own: the implementation of lgflow train and lgflow tune.
//
// TrainBundle picks the models from the data (Inspect, PlanFor), trains
// the LG-VAE and then LG-Flow within a budget, resumably, and writes a
// bundle (docs/bundle.md) whose recipe is the better measured of plain and
// constrained decoding. Tune searches a bundle's sampler settings on
// validation graphs, scored by Measure's V.U.N. and MMDs. ValidityTest and
// RuleConstraints give the validity rules a bundle's card names;
// ConditionTable reads the conditions of a conditional bundle's training
// graphs (a side file, node-link attributes, built-in properties).
//
// The package is internal: programs (cmd/lgflow) choose the backend and
// draw the progress (package progress); library users train with
// vae.Train and flow.Train, and sample with flow.Open and flow.Sample.
package bundle
