// Package datasets builds the graph datasets of the LG-Flow paper
// (docs/design.md, "Datasets") reproducibly on any machine: the synthetic
// sets (Extended Planar, Planar-128/256/512, Extended Tree, Price DAGs)
// are generated from a seed, and the data-backed sets (Ego, TPU Tile) are
// read from the shared data directory.
//
// Synthetic sets are 8704 graphs generated in order from one seed: the
// first 8192 are train, the next 256 val and the last 256 test. Graph i
// draws from its own random stream derived from (dataset, seed, i), so a
// split is the same whichever other splits are generated, however many
// workers generate it, and on every machine. (The paper's code draws from
// numpy's global generator, which cannot be reproduced bit for bit in Go;
// the recipes are the same.)
//
// Load dispatches through a registry, so datasets whose loaders live in
// packages that cannot be imported here are added with Register, by an
// explicit call of the program that wants them (cmd/lgflow registers
// graph/mol's LoadMOSES as "moses").
package datasets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"lgflow/graph"
	"lgflow/internal/modroot"
)

// Splits are the sizes of the train, val and test splits of a synthetic
// dataset, generated in that order.
type Splits struct {
	Train, Val, Test int
}

// DefaultSplits are the paper's synthetic split sizes: 8192 / 256 / 256.
var DefaultSplits = Splits{Train: 8192, Val: 256, Test: 256}

// Options configures Load. The zero value gives the paper's datasets
// with seed 0 and the data directory from DataDir.
type Options struct {
	// Seed selects the generated graphs (synthetic sets) or the split
	// permutation (Ego).
	Seed uint64
	// N overrides the node count of synthetic graphs (0: 64, or the size
	// in the name, e.g. 256 for "planar-256").
	N int
	// Splits overrides the synthetic split sizes (zero value:
	// DefaultSplits).
	Splits Splits
	// Dir is the data directory holding ego/ and tpu_tile/ ("" : DataDir()).
	Dir string
	// Workers is the number of goroutines generating graphs (0:
	// GOMAXPROCS). The result does not depend on it.
	Workers int
	// Progress, if not nil, is called with the number of graphs done and
	// the total, from one goroutine at a time, with done increasing.
	Progress func(done, total int)
}

// Loader loads one split ("train", "val" or "test") of a dataset.
type Loader func(ctx context.Context, split string, opt Options) ([]*graph.Graph, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Loader{}
)

// Register adds a named dataset to Load. It panics if name is empty or
// already registered (a programming error, normally in an init function).
func Register(name string, l Loader) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" || l == nil {
		panic("datasets: Register with empty name or nil loader")
	}
	if _, dup := registry[name]; dup {
		panic("datasets: Register called twice for " + name)
	}
	registry[name] = l
}

// Names returns the registered dataset names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(registry))
	for k := range registry {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// SplitNames are the valid split names.
var SplitNames = []string{"train", "val", "test"}

// Load returns one split of a registered dataset: "planar", "planar-128",
// "planar-256", "planar-512", "tree", "price", "ego", "tpu" and whatever
// other packages registered. Unknown names and splits are errors that list
// the valid ones.
func Load(ctx context.Context, name, split string, opt Options) ([]*graph.Graph, error) {
	regMu.RLock()
	l, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("datasets: unknown dataset %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	if !slices.Contains(SplitNames, split) {
		return nil, fmt.Errorf("datasets: unknown split %q (valid: %s)", split, strings.Join(SplitNames, ", "))
	}
	return l(ctx, split, opt)
}

// DataDir returns the shared data directory: $LGFLOW_DATA if set,
// otherwise ../shared/data next to the directory holding go.mod, found by
// walking up from the working directory. It is an error if the directory
// does not exist.
func DataDir() (string, error) {
	if d := os.Getenv("LGFLOW_DATA"); d != "" {
		if _, err := os.Stat(d); err != nil {
			return "", fmt.Errorf("datasets: LGFLOW_DATA: %w", err)
		}
		return d, nil
	}
	root, err := modroot.Find()
	if err != nil {
		return "", errors.New("datasets: no go.mod above the working directory and LGFLOW_DATA is not set")
	}
	d := filepath.Join(root, "..", "shared", "data")
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("datasets: no data directory at %s (set LGFLOW_DATA)", d)
	}
	return filepath.Clean(d), nil
}

func (o Options) dir() (string, error) {
	if o.Dir != "" {
		return o.Dir, nil
	}
	return DataDir()
}

// splitRange returns the index range [lo, hi) of split among the
// synthetic graphs generated in train, val, test order.
func splitRange(s Splits, split string) (lo, hi int, err error) {
	if s == (Splits{}) {
		s = DefaultSplits
	}
	if s.Train < 0 || s.Val < 0 || s.Test < 0 {
		return 0, 0, fmt.Errorf("datasets: negative split size %+v", s)
	}
	switch split {
	case "train":
		return 0, s.Train, nil
	case "val":
		return s.Train, s.Train + s.Val, nil
	case "test":
		return s.Train + s.Val, s.Train + s.Val + s.Test, nil
	}
	return 0, 0, fmt.Errorf("datasets: unknown split %q (valid: %s)", split, strings.Join(SplitNames, ", "))
}

// syntheticNames holds the datasets generated from a seed (init).
var syntheticNames = map[string]bool{}

// Synthetic reports whether the named dataset is generated from
// Options.Seed, so that each seed gives its own independent draws from the
// same distribution: another seed's training graphs are more training
// graphs, not copies of this seed's validation or test graphs. (For Ego
// the seed only permutes a fixed set of graphs among the splits.)
func Synthetic(name string) bool {
	regMu.RLock()
	defer regMu.RUnlock()
	return syntheticNames[name]
}

func init() {
	synthetic := func(name string, n int, gen generator) {
		syntheticNames[name] = true
		Register(name, func(ctx context.Context, split string, opt Options) ([]*graph.Graph, error) {
			lo, hi, err := splitRange(opt.Splits, split)
			if err != nil {
				return nil, err
			}
			nn := n
			if opt.N != 0 {
				nn = opt.N
			}
			if nn < 1 {
				return nil, fmt.Errorf("datasets: %s: node count %d < 1", name, nn)
			}
			return generate(ctx, gen, name, nn, lo, hi, opt)
		})
	}
	synthetic("planar", 64, planarGraph)
	synthetic("planar-128", 128, planarGraph)
	synthetic("planar-256", 256, planarGraph)
	synthetic("planar-512", 512, planarGraph)
	synthetic("tree", 64, treeGraph)
	synthetic("price", 64, priceGraph)
	Register("ego", loadEgo)
	Register("tpu", loadTPU)
}
