// Package cli holds what the programs share: the flags that cmd/lgflow
// and the examples take, declared once here, one function per group, so
// that each has one meaning and one default everywhere; and the choice of
// the backend (-device), which only programs make (no library package
// imports package cuda).
//
// The groups:
//
//	AddData     -dataset, -data, -data-seed: a built-in dataset
//	AddDevice   -device: where the denoiser and the training steps run
//	AddSampler  -recipe, -sampler: the bundle's recipe and single settings
//	AddConfig   -config: single settings of a training configuration
//	AddMaxTrain -max-train: the first N training graphs only
//
// -sampler and -config take typed KEY=VALUE pairs (Settings): the keys are
// the JSON names of the settings (sampler.json's, a checkpoint's
// configuration's), each value is parsed for its field's type, and the
// struct's Validate checks them together.
package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"lgflow/cuda"
	"lgflow/dist"
	"lgflow/dist/nccl"
	"lgflow/flow"
	"lgflow/graph/datasets"
	"lgflow/internal/bundle"
	"lgflow/tensor"
)

// Data holds the data flags: the dataset and where its files are.
type Data struct {
	// Dataset is -dataset, a datasets.Load name.
	Dataset string
	// Dir is -data, the data directory ("": $LGFLOW_DATA, else
	// ../shared/data beside go.mod).
	Dir string
	// Seed is -data-seed, the seed of the synthetic datasets and of the Ego
	// split.
	Seed uint64
}

// AddData registers -data and -data-seed on fs, and -dataset with
// dataset (a program whose dataset is fixed leaves it out).
func AddData(fs *flag.FlagSet, dataset bool) *Data {
	d := &Data{}
	if dataset {
		fs.StringVar(&d.Dataset, "dataset", "", "built-in dataset: "+strings.Join(datasets.Names(), ", "))
	}
	fs.StringVar(&d.Dir, "data", "", "data directory of the built-in datasets, holding ego/, tpu_tile/ and moses/ (default: $LGFLOW_DATA, else ../shared/data beside go.mod)")
	fs.Uint64Var(&d.Seed, "data-seed", 0, "seed of the synthetic datasets (planar, tree, price) and of the Ego split")
	return d
}

// Options returns the datasets.Load options of the flags.
func (d *Data) Options() datasets.Options { return datasets.Options{Seed: d.Seed, Dir: d.Dir} }

// AddMaxTrain registers -max-train on fs.
func AddMaxTrain(fs *flag.FlagSet) *int {
	return fs.Int("max-train", 0, "train on the first N training graphs only (0: all)")
}

// Device holds -device and, once Backend chose it, the backend.
type Device struct {
	// Name is -device: cpu or cuda.
	Name string
	gpu  *cuda.Backend
}

// AddDevice registers -device on fs.
func AddDevice(fs *flag.FlagSet) *Device {
	d := &Device{}
	fs.StringVar(&d.Name, "device", "cpu", "where the denoiser and the training steps run: cpu, or cuda (an NVIDIA GPU through its driver, cuBLAS and NVRTC; the LG-VAE decodes on the CPU)")
	return d
}

// Backend returns the backend -device names (cuda.Select). For training
// (train) on a GPU of compute capability 8.0 or newer, float32 matrix
// products use TensorFloat-32 unless $LGFLOW_CUDA_TF32 is 0 (exact
// float32); sampling keeps exact float32 unless it is 1. On a GPU it
// describes the device on log.
func (d *Device) Backend(log io.Writer, train bool) (tensor.Backend, error) {
	be, err := cuda.Select(d.Name)
	if err != nil {
		return nil, err
	}
	gpu, ok := be.(*cuda.Backend)
	if !ok {
		return be, nil
	}
	d.gpu = gpu
	if train {
		gpu.SetTF32(os.Getenv("LGFLOW_CUDA_TF32") != "0" && gpu.SupportsTF32())
	}
	info := gpu.Device()
	fmt.Fprintf(log, "cuda: %s (sm_%d%d, %.1f GiB), kernels for %s, TF32 %v\n", info.Name, info.ComputeCapability[0], info.ComputeCapability[1],
		float64(info.TotalMemory)/(1<<30), info.Arch, gpu.TF32())
	return be, nil
}

// TrainBackend is Backend for a training command whose processes form
// the job of communicator c (dist.Open's: under mpirun the MPI job, else
// one process). In a job of several processes on -device cuda (under
// mpirun, or started torchrun-style: RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT) every process takes the GPU of its local rank
// (nccl.LocalRank, cuda.DeviceForLocalRank) and the training steps sum
// their gradients with NCCL in device memory: the returned communicator
// is NCCL's (nccl.Open; its unique id sent over c under MPI, else by the
// torchrun rendezvous), which the caller closes before c. Otherwise it
// returns c itself.
func (d *Device) TrainBackend(log io.Writer, c dist.Comm) (tensor.Backend, dist.Comm, error) {
	if d.Name != "cuda" || c.Size() == 1 && !nccl.TorchrunEnv() {
		be, err := d.Backend(log, true)
		return be, c, err
	}
	lr, _, err := nccl.LocalRank()
	if err != nil {
		return nil, nil, err
	}
	if _, err := cuda.InitDevice(cuda.DeviceForLocalRank(lr)); err != nil {
		return nil, nil, err
	}
	be, err := d.Backend(log, true)
	if err != nil {
		return nil, nil, err
	}
	var boot dist.Comm
	if c.Size() > 1 {
		boot = c
	}
	nc, err := nccl.Open(nccl.Options{Device: d.gpu, Bootstrap: boot})
	if err != nil {
		return nil, nil, err
	}
	return be, nc, nil
}

// Describe names the GPU Backend chose, "" for the CPU.
func (d *Device) Describe() string {
	if d.gpu == nil {
		return ""
	}
	return d.gpu.Device().Name
}

// Stats returns the GPU allocator's figures for progress lines ("" on the
// CPU).
func (d *Device) Stats() string {
	if d.gpu == nil {
		return ""
	}
	return "  gpu " + d.gpu.MemStats().String()
}

// Sampler holds the sampler flags: the recipe's alternative and single
// settings in its place.
type Sampler struct {
	// Recipe is -recipe: the alternative of the bundle's recipe to sample
	// with ("": its default; none: flow.Sample's defaults).
	Recipe string
	// Settings is -sampler: settings by sampler.json's keys.
	Settings *Settings
	experts  []flow.Expert // the experts given, loaded (LoadExperts)
}

// AddSampler registers -sampler on fs, and -recipe with recipe (a
// command that samples no bundle leaves it out).
func AddSampler(fs *flag.FlagSet, recipe bool) *Sampler {
	s := &Sampler{Settings: NewSettings(nil, &flow.Sampler{})}
	if recipe {
		fs.StringVar(&s.Recipe, "recipe", "", "the alternative of the bundle's recipe (sampler.json) to sample with, e.g. constrained or complete (default: the recipe's default; none: no recipe, flow.Sample's defaults, the paper's sampler with the final jump at 0.95)")
	}
	fs.Var(s.Settings, "sampler", "sampler settings in place of the recipe's, `KEY=VALUE` pairs by sampler.json's keys (docs/bundle.md), comma-separated or the flag repeated, "+
		"e.g. steps=100,final_jump=1 or constraints=planar,connected,fill=-4 or 'experts=[{\"file\":\"F\",\"from\":0.95}]' (an expert file that the recipe does not name is a path); keys: "+
		strings.Join(s.Settings.Keys(), ", "))
	return s
}

// Edit sets the settings given in s.
func (f *Sampler) Edit(s *flow.Sampler) {
	f.Settings.Apply(s)
	if f.experts != nil {
		s.Experts = slices.Clone(f.experts)
	}
}

// LoadExperts loads the expert denoisers the settings give that m's
// recipe does not name (bundle.LoadExperts: files by their paths) in m's
// latent space, on be, for Edit.
func (f *Sampler) LoadExperts(m *flow.Model, be tensor.Backend) error {
	if !f.Settings.Has("experts") {
		return nil
	}
	var s flow.Sampler
	f.Settings.Apply(&s)
	if err := bundle.LoadExperts(m, &s, be); err != nil {
		return err
	}
	f.experts = s.Experts
	return nil
}

// Options returns the flow.Sample options of the flags: the recipe's
// alternative when given, and the settings.
func (f *Sampler) Options() []flow.SampleOption {
	var opts []flow.SampleOption
	if f.Recipe != "" {
		opts = append(opts, flow.WithRecipe(f.Recipe))
	}
	if f.Settings.Given() {
		opts = append(opts, flow.WithSettings(f.Edit))
	}
	return opts
}

// AddConfig registers -config on fs: single settings of the structs roots
// point to (a training configuration), by their JSON names, except the
// keys in exclude (flags of their own). what names the configuration in
// the usage text.
func AddConfig(fs *flag.FlagSet, what string, exclude []string, roots ...any) *Settings {
	s := NewSettings(exclude, roots...)
	keys := s.Keys()
	slices.Sort(keys)
	fs.Var(s, "config", "settings of "+what+" in place of the preset's (or, continuing a training state, the checkpoint's), `KEY=VALUE` pairs by their JSON names, comma-separated or the flag repeated, e.g. steps=5000,lr=2e-4; keys: "+
		strings.Join(keys, ", "))
	return s
}
