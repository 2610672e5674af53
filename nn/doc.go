// Package nn provides neural-network layers on top of lgflow/autograd.
//
// Layers are plain structs of parameters (reading a model's type tells you
// its weights) with a Forward method that records on a tape:
//
//	l := nn.NewLinear(rng, 16, 8)
//	tp := autograd.NewTape()
//	y := l.Forward(tp, x)
//
// Parameters are named and enumerable: every layer implements Module
// (Params() []Param), composites prefix their children's names
// ("rho.3.mlp.0.weight"), and StateDict/LoadStateDict move weights in and
// out by name with clear errors. Layers with training-only behaviour
// (BatchNorm1d, Dropout) implement TrainModule; BatchNorm1d's running
// statistics are buffers (BufferModule), saved in state dicts but never seen
// by optimisers.
//
// Initialisation is seeded from a *tensor.RNG and follows PyTorch's defaults
// unless WithNormalInit is given. WithDType(tensor.Float64) builds any layer
// in float64 for gradient checks with autograd.CheckGrad.
//
// Graph layers (GINConv, GINEConv, DirGNN) take edge lists of a batch of
// concatenated graphs (Edges) and use the fused neighbourhood kernel
// autograd.GINEAggregate (over Edges.Index, built once per batch with
// Edges.Indexed, when it is set); MultiHeadSelfAttention takes a token mask read as
// key padding or by the DiT rule (autograd.SameGroup).
package nn
