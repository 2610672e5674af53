package vae

import "fmt"

// Presets for the larger planar datasets "planar-128", "planar-256" and
// "planar-512" (Planar-N: Delaunay graphs of N nodes, 8192/256/256;
// docs/design.md, "Datasets").
//
//   - "planar-N/paper" is the Extended Planar configuration of the paper
//     (k 16, d 16, phi and rho 16 x 256, DeepSet 16) with the batch
//     sizes of its Planar-N runs: 256 graphs for N = 128 and 256, 128 for
//     N = 512.
//   - "planar-N/cpu" is the planar cpu model (71.7K parameters) with the
//     batch shrunk as N grows (32·64/N graphs, at least 4), so that the
//     decoder's N x N pair activations of a batch stay near those of the
//     Extended Planar cpu preset on two cores.
func init() {
	for _, n := range []int{128, 256, 512} {
		name := fmt.Sprintf("planar-%d", n)
		paper := presets["planar/paper"]
		paper.Train.BatchSize = 256
		if n == 512 {
			paper.Train.BatchSize = 128
		}
		RegisterPreset(name, "paper", paper)
		cpu := presets["planar/cpu"]
		cpu.Train.BatchSize = max(4, 32*64/n)
		RegisterPreset(name, "cpu", cpu)
	}
}
