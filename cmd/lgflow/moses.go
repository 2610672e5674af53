package main

// The "moses" dataset (datasets.Load, "lgflow data -dataset moses",
// "lgflow train-vae -dataset moses") is registered by package graph/mol.
import _ "lgflow/graph/mol"
