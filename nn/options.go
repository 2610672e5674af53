package nn

import (
	"lgflow/autograd"
	"lgflow/tensor"
)

// Option configures a layer constructor. Every constructor accepts every
// option and ignores the ones that do not apply to it.
type Option func(*options)

type options struct {
	dtype      tensor.DType
	bias       bool
	normalInit bool
	std        float64
	act        Activation
	actSet     bool
	maskMode   autograd.MaskMode
	batchStats bool
}

func buildOptions(opts []Option) options {
	o := options{dtype: tensor.Float32, bias: true}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithDType sets the dtype of the parameters (default Float32; Float64 is
// meant for gradient checks).
func WithDType(dt tensor.DType) Option { return func(o *options) { o.dtype = dt } }

// WithBias says whether Linear layers (including those inside MLPs,
// attention and graph convolutions) have a bias (default true).
func WithBias(on bool) Option { return func(o *options) { o.bias = on } }

// WithNormalInit initialises Linear and Embedding weights from N(0, std²) and
// biases to 0, instead of PyTorch's defaults (DiT uses std = 0.02).
func WithNormalInit(std float64) Option {
	return func(o *options) { o.normalInit, o.std = true, std }
}

// WithActivation sets the hidden activation of an MLP (default ReLU) or of
// the MLP inside a GIN/GINE convolution (default GELU).
func WithActivation(a Activation) Option {
	return func(o *options) { o.act, o.actSet = a, true }
}

// WithMaskMode sets how MultiHeadSelfAttention reads a (B, N) token mask
// (default autograd.KeyPadding).
func WithMaskMode(m autograd.MaskMode) Option { return func(o *options) { o.maskMode = m } }

// WithBatchStats makes BatchNorm1d use the statistics of the current batch in
// evaluation mode too (PyTorch's track_running_stats=False).
func WithBatchStats() Option { return func(o *options) { o.batchStats = true } }
