package flow

import (
	"fmt"
	"slices"
	"strings"
)

// datasetRecipe is the paper's LG-Flow run for one dataset (the DiT of the
// reference code's training configuration, batch size and steps;
// docs/design.md, "LG-Flow recipes per dataset") and the batch size of its
// cpu variant.
type datasetRecipe struct {
	dit         string // "T", "S", "B" or "mediumsmall"
	batch       int
	steps       int
	weightDecay float64 // 0: the preset's
	cpuBatch    int
}

var datasetRecipes = map[string]datasetRecipe{
	"planar":     {dit: "T", batch: 256, steps: 500000, cpuBatch: 64},
	"planar-128": {dit: "T", batch: 256, steps: 500000, cpuBatch: 32},
	"planar-256": {dit: "T", batch: 256, steps: 500000, cpuBatch: 16},
	"planar-512": {dit: "T", batch: 128, steps: 500000, cpuBatch: 8},
	"tree":       {dit: "mediumsmall", batch: 256, steps: 500000, cpuBatch: 64},
	"ego":        {dit: "S", batch: 128, steps: 300000, cpuBatch: 16},
	"price":      {dit: "T", batch: 256, steps: 100000, cpuBatch: 64},
	"tpu":        {dit: "T", batch: 256, steps: 300000, cpuBatch: 32},
	"moses":      {dit: "B", batch: 2048, steps: 600000, weightDecay: 0.1, cpuBatch: 64},
}

// presetDatasets lists the datasets Preset has recipes for, sorted.
func presetDatasets() []string {
	names := make([]string, 0, len(datasetRecipes))
	for k := range datasetRecipes {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Preset returns the LG-Flow training recipe of a size for a dataset
// (latentDim: the LG-VAE's latent width):
//
//   - "T", "S", "B": the paper's DiT sizes with its optimiser settings
//     (docs/design.md, "Training recipes"), "tiny" for tests, whatever
//     the dataset.
//   - "paper": the reference code's training configuration for the
//     dataset (docs/design.md, "LG-Flow recipes per dataset"): DiT-T for
//     Planar, Planar-N, Price and TPU Tile, the 12-layer, 8-head,
//     512-wide DiT for Tree, DiT-S for Ego, DiT-B for MOSES (weight decay
//     0.1), with the reference's batch sizes and step counts (planar-512:
//     batch 128). For dataset "" (data of your own), DiT-T.
//   - "cpu": a 4 x 128 DiT that trains on two cores. For the paper's
//     datasets with a batch that shrinks for large graphs (Ego 16,
//     Planar-256 16, Planar-512 8) and TimeMean 1, which trains more where
//     the LG-VAE decoder needs precise latents (the shipped planar flow's
//     validation validity went from 0 to 0.33 over the same 4k steps;
//     docs/results.md).
//
// A dataset other than "" and the paper's (planar, planar-128,
// planar-256, planar-512, tree, ego, price, tpu, moses) is an error.
func Preset(dataset, size string, latentDim int) (Config, error) {
	r, ok := datasetRecipes[dataset]
	if dataset != "" && !ok {
		return Config{}, fmt.Errorf("flow: no preset for dataset %q (have %s, or \"\" for your own data)", dataset, strings.Join(presetDatasets(), ", "))
	}
	switch {
	case size == "paper" && dataset == "":
		return sizePreset("T", latentDim)
	case size != "paper" && size != "cpu" || dataset == "":
		return sizePreset(size, latentDim)
	case size == "cpu":
		c, err := sizePreset("cpu", latentDim)
		if err != nil {
			return Config{}, err
		}
		c.BatchSize, c.TimeMean = r.cpuBatch, 1
		return c, c.Validate()
	}
	base := r.dit
	if base == "mediumsmall" {
		base = "T"
	}
	c, err := sizePreset(base, latentDim)
	if err != nil {
		return Config{}, err
	}
	if r.dit == "mediumsmall" {
		c.DiT.Depth, c.DiT.Heads, c.DiT.Width = 12, 8, 512
	}
	c.BatchSize, c.Steps = r.batch, r.steps
	if r.weightDecay > 0 {
		c.WeightDecay = r.weightDecay
	}
	return c, c.Validate()
}
