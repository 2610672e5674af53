package main

import (
	"lgflow/graph/datasets"
	"lgflow/graph/mol"
)

// The molecule datasets live in package graph/mol, which package datasets
// cannot import; the command registers them for datasets.Load ("lgflow
// data -dataset moses", "lgflow train-vae -dataset moses").
func init() {
	datasets.Register("moses", mol.LoadMOSES)
}
