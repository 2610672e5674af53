package vae

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Norm selects the normalisation after each message-passing layer of rho.
type Norm string

const (
	// LayerNorm normalises each node over its features. A node's latent
	// never depends on the other graphs of its batch. It was every preset's
	// norm before GraphNorm (the shipped models of session 27 and earlier
	// use it); it learns slowly because the part of phi's sum that all
	// nodes share dominates each node's features (docs/results.md,
	// session 28).
	LayerNorm Norm = "layer"
	// BatchNorm uses batch statistics in training and running statistics
	// in evaluation, so evaluation is batch-independent too. vae.Train
	// sets the running statistics to the mean of 64 training batches'
	// statistics before each validation and the final save
	// (RecalibrateBatchNorm). CPU only.
	BatchNorm Norm = "batch"
	// GraphNorm normalises each channel over the nodes of each graph
	// (nn.GraphNorm), in training and evaluation alike: like the
	// reference's BatchNorm it subtracts what the nodes share and divides by
	// their spread, and a graph's latents depend on that graph alone. Every
	// preset uses it; it runs on every backend.
	GraphNorm Norm = "graph"
	// NoNorm applies no normalisation.
	NoNorm Norm = "none"
)

// Config is the architecture of an LG-VAE. It is stored in checkpoints.
type Config struct {
	// K is the number of lowest Laplacian eigenpairs fed to phi.
	K int `json:"k"`
	// Latent is the latent dimension d per node.
	Latent int `json:"latent"`
	// PhiWidth is phi's output width h (its inner width is 2h).
	PhiWidth int `json:"phi_width"`
	// Layers and Width are rho's depth and width (Width must equal PhiWidth
	// plus nothing: the node embedding H = H_X + H_phi has width PhiWidth,
	// which rho's first layer maps to Width).
	Layers int `json:"layers"`
	Width  int `json:"width"`
	// DeepSet is the width of the decoder's row-wise DeepSet.
	DeepSet int `json:"deepset"`
	// Eta scales the 1-WL orbit perturbation of eigenvector rows (0 = off).
	Eta float64 `json:"eta"`
	// NodeClasses is the number of categorical node labels a (0 = unlabelled).
	NodeClasses int `json:"node_classes"`
	// NodeAttrs and EdgeAttrs are the widths of the graphs' integer node
	// and edge features (graph.Attrs) that the encoder reads and the
	// decoder does not produce: 10 and 6 for molecules, as the reference
	// feeds them (degree, charge, hydrogens, hybridisation, aromaticity,
	// ring sizes; conjugation, ring sizes). A Linear maps the node features
	// into phi's width and each message-passing layer adds a Linear of the
	// edge features to its edge-class term. 0: none (every other dataset).
	NodeAttrs int `json:"node_attrs,omitempty"`
	EdgeAttrs int `json:"edge_attrs,omitempty"`
	// EdgeClasses is the number of edge labels b (1 for plain graphs); the
	// decoder predicts b+1 classes, class 0 meaning "no edge".
	EdgeClasses int `json:"edge_classes"`
	// Directed selects the DAG variant: magnetic Laplacian eigenvectors,
	// directed message passing and the magnetic decoder.
	Directed bool `json:"directed"`
	// Q is the magnetic potential for Directed models (one q per model).
	// Ignored when QPerGraph is set.
	Q float64 `json:"q"`
	// QPerGraph takes the magnetic potential from each graph, as the
	// reference code does, instead of the fixed Q: the encoder's magnetic
	// Laplacian uses q = 0.1 / max(1, min(m, n)) (spectral.QEff, m the
	// number of one-way edges), and the decoder's imaginary-score factor
	// uses QForNodes(n) = 0.1 / max(1, n), the same value whenever m >= n
	// (every Price graph, most TPU Tile graphs). The decoder cannot use m:
	// a graph being generated has no edges yet. Checkpoints written before
	// this option existed have a fixed Q and load unchanged.
	QPerGraph bool `json:"q_per_graph,omitempty"`
	// Norm is the normalisation used in rho.
	Norm Norm `json:"norm"`
	// KLWeight multiplies the KL term of the loss (1e-6).
	KLWeight float64 `json:"kl_weight"`
	// LogVarInit initialises the bias of the log-variance head. The
	// reference leaves it at 0 (posterior std 1, as large as the signal);
	// with a KL weight of 1e-6 the model must then spend thousands of steps
	// shrinking it before reconstruction can become exact. A negative value
	// (e.g. -6, std 0.05) removes that warm-up.
	LogVarInit float64 `json:"logvar_init"`
	// ScaleEigvecs multiplies eigenvector entries by sqrt(N), giving every
	// eigenvector unit root-mean-square entries instead of O(1/sqrt(N)).
	// phi is learnable, so this changes what the model can represent not at
	// all, but it changes optimisation a lot: with unscaled inputs the
	// node-distinguishing signal is tiny next to the eigenvalue terms that
	// all nodes share, and Adam needs thousands of steps to grow the weights.
	ScaleEigvecs bool `json:"scale_eigvecs"`
	// SignFlips randomises eigenvector signs during training (one +-1 per
	// eigen-slot per batch), as the reference does. Without it the model
	// relies on the spectral package's deterministic sign convention.
	SignFlips bool `json:"sign_flips"`
	// PhiGate adds a multiplicative path to phi: phi(u, lam) = MLP(u, lam) +
	// u * g(lam), with g a small MLP of the eigenvalue (real and imaginary
	// parts each gated for directed models). Summed over slots this is a
	// learned spectral filter of the eigenvectors, the product a ReLU MLP
	// can only approximate piecewise. phi stays a per-(node, slot) function
	// summed over slots, so equivariance is unchanged.
	PhiGate bool `json:"phi_gate"`
	// LatentNoise (alpha) trains the decoder on z + alpha·s·eps in addition
	// to the posterior noise, where s is the standard deviation of the
	// batch's latent means (a constant: no gradient flows through it) and
	// eps ~ N(0, I). Because the noise is relative to the latent spread,
	// the encoder cannot escape it by scaling its means up, as it does the
	// posterior noise when the KL weight is tiny. The decoder then tolerates
	// latents a flow model gets only approximately right: with 0 the
	// shipped planar model decodes exactly only within about 1% of the
	// latent spread (lgflow recon -noise). 0 is the reference behaviour.
	LatentNoise float64 `json:"latent_noise,omitempty"`
	// LatentNoiseSpread draws each graph's decoder-noise level uniformly
	// from [0, LatentNoise] instead of using LatentNoise for every graph,
	// so the decoder learns both exact and approximate latents (with a
	// Refine network: to denoise whatever error it meets).
	LatentNoiseSpread bool `json:"latent_noise_spread,omitempty"`
	// Refine is the number of transformer blocks (pre-LayerNorm
	// self-attention over a graph's nodes, then an MLP) of a latent
	// refinement network in front of the decoder's heads: z' = z + R(z).
	// It sees every latent of the graph, so it can correct the errors a
	// generative model makes in one node's latent from the others. Its
	// output layer starts at zero, so a decoder fine-tuned with it starts
	// as the decoder it was initialised from. 0 (the reference) has none.
	// R is permutation-equivariant (no positional encoding).
	Refine int `json:"refine,omitempty"`
	// RefineWidth and RefineHeads are the refinement network's width and
	// attention heads.
	RefineWidth int `json:"refine_width,omitempty"`
	RefineHeads int `json:"refine_heads,omitempty"`
	// SymmetricLogits averages the (i, j) and (j, i) edge logits of
	// undirected graphs after the row-wise DeepSet, so training optimises
	// the one symmetric decision that decoding makes. The reference
	// symmetrises only the bilinear scores before the DeepSet, and its
	// decoded graph takes the OR of the two directions' decisions.
	SymmetricLogits bool `json:"symmetric_logits,omitempty"`
	// EdgeMargin is the logit margin by which an edge class must beat
	// no-edge when the model decodes (WithEdgeMargin overrides it; 0: the
	// argmax). It calibrates the decoder's decisions without changing its
	// weights: a decoder trained to undo a flow's errors decodes more
	// edges of generated latents, spurious ones among them, and a margin
	// chosen on sampled latents takes them back (docs/results.md).
	EdgeMargin float64 `json:"edge_margin,omitempty"`
}

// Validate reports whether c describes a buildable model.
func (c Config) Validate() error {
	switch {
	case c.K <= 0 || c.Latent <= 0 || c.PhiWidth <= 0 || c.Width <= 0:
		return fmt.Errorf("vae: K, Latent, PhiWidth and Width must be positive (got %d, %d, %d, %d)", c.K, c.Latent, c.PhiWidth, c.Width)
	case c.Layers <= 0:
		return fmt.Errorf("vae: Layers must be positive, got %d", c.Layers)
	case c.DeepSet <= 0:
		return fmt.Errorf("vae: DeepSet must be positive, got %d", c.DeepSet)
	case c.EdgeClasses <= 0:
		return fmt.Errorf("vae: EdgeClasses must be at least 1, got %d", c.EdgeClasses)
	case c.NodeAttrs < 0 || c.EdgeAttrs < 0:
		return fmt.Errorf("vae: NodeAttrs and EdgeAttrs must be >= 0, got %d, %d", c.NodeAttrs, c.EdgeAttrs)
	case c.NodeClasses < 0:
		return fmt.Errorf("vae: NodeClasses must be >= 0, got %d", c.NodeClasses)
	case c.Eta < 0:
		return fmt.Errorf("vae: Eta must be >= 0, got %g", c.Eta)
	case c.LatentNoise < 0 || math.IsNaN(c.LatentNoise):
		return fmt.Errorf("vae: LatentNoise must be >= 0, got %g", c.LatentNoise)
	case c.Refine < 0:
		return fmt.Errorf("vae: Refine must be >= 0, got %d", c.Refine)
	case c.Refine > 0 && (c.RefineWidth <= 0 || c.RefineHeads <= 0 || c.RefineWidth%c.RefineHeads != 0):
		return fmt.Errorf("vae: a Refine network needs a positive RefineWidth divisible by RefineHeads (got %d, %d)", c.RefineWidth, c.RefineHeads)
	case math.IsNaN(c.EdgeMargin) || math.IsInf(c.EdgeMargin, 0):
		return fmt.Errorf("vae: EdgeMargin must be finite, got %v", c.EdgeMargin)
	case c.SymmetricLogits && c.Directed:
		return errors.New("vae: SymmetricLogits is for undirected graphs")
	case c.Directed && !c.QPerGraph && (c.Q <= 0 || c.Q >= 0.5 || math.IsNaN(c.Q)):
		return fmt.Errorf("vae: a directed model needs 0 < Q < 0.5 (or QPerGraph), got %g", c.Q)
	case c.QPerGraph && !c.Directed:
		return errors.New("vae: QPerGraph is for directed models")
	}
	switch c.Norm {
	case LayerNorm, BatchNorm, GraphNorm, NoNorm:
	default:
		return fmt.Errorf("vae: unknown Norm %q (want layer, batch, graph or none)", c.Norm)
	}
	return nil
}

// TrainConfig is the optimisation recipe of LG-VAE training.
type TrainConfig struct {
	Steps       int     `json:"steps"`
	BatchSize   int     `json:"batch_size"`
	LR          float64 `json:"lr"`
	MinLR       float64 `json:"min_lr"`
	Warmup      int     `json:"warmup"`
	WeightDecay float64 `json:"weight_decay"`
	Beta1       float64 `json:"beta1"`
	Beta2       float64 `json:"beta2"`
	// ValEvery is the number of steps between validation reconstructions
	// (and best-checkpoint updates); 0 disables validation.
	ValEvery int `json:"val_every"`
	// CheckpointEvery is the number of steps between resumable checkpoints.
	CheckpointEvery int `json:"checkpoint_every"`
	// ClipNorm clips the global gradient norm when positive.
	ClipNorm float64 `json:"clip_norm"`
	// BucketBySize makes each batch hold graphs of similar node counts
	// (trainer.BatchesBySize) instead of random ones: the same epochs with
	// less padding in the decoder's dense N x N scores, much faster for
	// datasets of very different sizes (Ego, TPU Tile). false: the
	// reference's random batches.
	BucketBySize bool `json:"bucket_by_size,omitempty"`
	// Seed drives initialisation, batching and every random draw.
	Seed uint64 `json:"seed"`
}

// Preset is a named model and training recipe for a dataset.
type Preset struct {
	Model Config
	Train TrainConfig
}

// paperTrain returns the reference training recipe (docs/design.md,
// "Training recipes").
func paperTrain(lr, minLR float64, steps, warmup, batch int) TrainConfig {
	return TrainConfig{Steps: steps, BatchSize: batch, LR: lr, MinLR: minLR, Warmup: warmup,
		WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95, ValEvery: 1000, CheckpointEvery: 500}
}

var presets = map[string]Preset{
	"planar/paper": {
		Model: Config{K: 16, Latent: 16, PhiWidth: 256, Layers: 16, Width: 256, DeepSet: 16, EdgeClasses: 1, Norm: GraphNorm, KLWeight: 1e-6, SignFlips: true},
		Train: paperTrain(2e-4, 1.5e-4, 50000, 100, 256),
	},
	"tree/paper": {
		Model: Config{K: 16, Latent: 16, PhiWidth: 256, Layers: 16, Width: 256, DeepSet: 24, Eta: 0.005, EdgeClasses: 1, Norm: GraphNorm, KLWeight: 1e-6, SignFlips: true},
		Train: paperTrain(3e-4, 1e-4, 35000, 100, 256),
	},
	"ego/paper": {
		Model: Config{K: 64, Latent: 24, PhiWidth: 256, Layers: 16, Width: 256, DeepSet: 24, Eta: 0.005, EdgeClasses: 1, Norm: GraphNorm, KLWeight: 1e-6, SignFlips: true},
		Train: paperTrain(2e-4, 5e-5, 40000, 100, 64),
	},
	"price/paper": {
		Model: Config{K: 32, Latent: 24, PhiWidth: 256, Layers: 16, Width: 256, DeepSet: 16, EdgeClasses: 1, Directed: true, QPerGraph: true, Norm: GraphNorm, KLWeight: 1e-6, SignFlips: true},
		Train: paperTrain(3e-4, 1.5e-4, 50000, 100, 256),
	},
	"tpu/paper": {
		Model: Config{K: 64, Latent: 24, PhiWidth: 256, Layers: 12, Width: 256, DeepSet: 24, Eta: 0.05, NodeClasses: 47, EdgeClasses: 1, Directed: true, QPerGraph: true, Norm: GraphNorm, KLWeight: 1e-6, SignFlips: true},
		Train: paperTrain(2e-4, 1e-5, 40000, 100, 256),
	},
	// CPU presets: small enough to train on two cores. Planar and tree
	// are 128 wide (1.6x a step of 64 wide): on trees, test exact 0.875
	// against 0.527 at 64 wide; on planar graphs (3x the training graphs)
	// 0.981 against 0.930 (docs/results.md, sessions 28-30).
	"planar/cpu": {
		Model: Config{K: 16, Latent: 16, PhiWidth: 128, Layers: 6, Width: 128, DeepSet: 16, EdgeClasses: 1, Norm: GraphNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true},
		Train: TrainConfig{Steps: 20000, BatchSize: 32, LR: 1e-3, MinLR: 1e-4, Warmup: 200, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95, ValEvery: 500, CheckpointEvery: 250, ClipNorm: 1},
	},
	"tree/cpu": {
		Model: Config{K: 16, Latent: 16, PhiWidth: 128, Layers: 6, Width: 128, DeepSet: 24, Eta: 0.005, EdgeClasses: 1, Norm: GraphNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true},
		Train: TrainConfig{Steps: 20000, BatchSize: 32, LR: 1e-3, MinLR: 1e-4, Warmup: 200, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95, ValEvery: 500, CheckpointEvery: 250, ClipNorm: 1},
	},
	// Ego graphs reach ~400 nodes (TPU Tile ~150) and the decoder is
	// quadratic in N, so their cpu presets use small batches; they keep the
	// paper's k = 64.
	"ego/cpu": {
		Model: Config{K: 64, Latent: 16, PhiWidth: 64, Layers: 6, Width: 64, DeepSet: 16, Eta: 0.005, EdgeClasses: 1, Norm: GraphNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true},
		Train: TrainConfig{Steps: 20000, BatchSize: 8, LR: 1e-3, MinLR: 1e-4, Warmup: 200, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95, ValEvery: 500, CheckpointEvery: 250, ClipNorm: 1},
	},
	"tpu/cpu": {
		Model: Config{K: 64, Latent: 16, PhiWidth: 64, Layers: 6, Width: 64, DeepSet: 16, Eta: 0.05, NodeClasses: 47, EdgeClasses: 1, Directed: true, QPerGraph: true, Norm: GraphNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true},
		Train: TrainConfig{Steps: 20000, BatchSize: 16, LR: 1e-3, MinLR: 1e-4, Warmup: 200, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95, ValEvery: 500, CheckpointEvery: 250, ClipNorm: 1},
	},
	// price/cpu keeps k = 16, the shipped model's (pretrained/price); for
	// Price graphs (n = 64, m > n) the per-graph q is 0.1/64, the fixed q
	// that model was trained with.
	"price/cpu": {
		Model: Config{K: 16, Latent: 16, PhiWidth: 64, Layers: 6, Width: 64, DeepSet: 16, EdgeClasses: 1, Directed: true, QPerGraph: true, Norm: GraphNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true},
		Train: TrainConfig{Steps: 20000, BatchSize: 32, LR: 1e-3, MinLR: 1e-4, Warmup: 200, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.95, ValEvery: 500, CheckpointEvery: 250, ClipNorm: 1},
	},
}

// PresetFor returns the preset for a dataset ("planar", "tree", "price",
// "ego", "tpu", ...) and a size ("cpu" or "paper").
func PresetFor(dataset, size string) (Preset, error) {
	presetsMu.RLock()
	p, ok := presets[dataset+"/"+size]
	presetsMu.RUnlock()
	if !ok {
		return Preset{}, fmt.Errorf("vae: no preset %q for dataset %q (have %v)", size, dataset, PresetNames())
	}
	return p, nil
}

// RegisterPreset adds or replaces a preset (e.g. for molecules). It is safe
// to call concurrently with itself, PresetFor and PresetNames.
func RegisterPreset(dataset, size string, p Preset) {
	presetsMu.Lock()
	defer presetsMu.Unlock()
	presets[dataset+"/"+size] = p
}

// presetsMu guards presets after package initialisation.
var presetsMu sync.RWMutex

// PresetNames lists the registered presets as "dataset/size".
func PresetNames() []string {
	presetsMu.RLock()
	defer presetsMu.RUnlock()
	names := make([]string, 0, len(presets))
	for k := range presets {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// EncoderArchitecture returns the part of c that shapes the encoder and so
// the latent space: Architecture without the decoder's settings (DeepSet,
// Refine, RefineWidth, RefineHeads, SymmetricLogits, EdgeMargin). A decoder fine-tuned
// with TrainOptions.FreezeEncoder, even with a refinement network added,
// keeps its model's EncoderArchitecture, and flows trained in its latent
// space stay usable with it.
func (c Config) EncoderArchitecture() Config {
	c = c.Architecture()
	c.DeepSet, c.Refine, c.RefineWidth, c.RefineHeads, c.SymmetricLogits, c.EdgeMargin = 0, 0, 0, 0, false, 0
	return c
}

// Architecture returns c without its training-only settings (KLWeight,
// LogVarInit, LatentNoise, LatentNoiseSpread): two configurations with the same Architecture
// build the same parameters and encode and decode alike, whatever they were
// trained with.
func (c Config) Architecture() Config {
	c.KLWeight, c.LogVarInit, c.LatentNoise, c.LatentNoiseSpread = 0, 0, 0, false
	return c
}
