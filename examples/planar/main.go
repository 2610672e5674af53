// Command planar is lgflow's end-to-end example on Extended Planar graphs
// (64 nodes): it loads the LG-VAE and LG-Flow models shipped in
// pretrained/planar, samples graphs, evaluates them against the test split
// and prints the results beside the paper's.
//
//	go run ./examples/planar                 # sample + evaluate (a few minutes on 2 cores)
//	go run ./examples/planar -train          # the whole pipeline: data, LG-VAE, LG-Flow, sampling, evaluation
//
// It writes into -out (default out/planar): report.json, samples.g6,
// test.g6, train.g6 and samples.svg.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"lgflow/cuda"
	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/graph/render"
	"lgflow/internal/atomicfile"
	"lgflow/internal/modroot"
	"lgflow/internal/progress"
	"lgflow/metrics"
	"lgflow/tensor"
	"lgflow/vae"
)

// options are the command-line flags.
type options struct {
	out, vaePath, flowPath string
	n, steps, batch        int
	seed                   uint64
	train                  bool
	vaeTime, flowTime      time.Duration
	vaeSteps, flowSteps    int
	ntrainEval             int
	edgeRule               string
	device                 string
	backend                tensor.Backend
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "out/planar", "output directory")
	flag.StringVar(&o.vaePath, "vae", "", "LG-VAE checkpoint (default pretrained/planar/vae.safetensors, or the one -train makes)")
	flag.StringVar(&o.flowPath, "flow", "", "LG-Flow checkpoint (default pretrained/planar/flow.safetensors, or the one -train makes)")
	flag.IntVar(&o.n, "n", 256, "graphs to sample")
	flag.IntVar(&o.steps, "steps", 100, "sampler steps")
	flag.IntVar(&o.batch, "batch", 256, "sampling batch size")
	flag.Uint64Var(&o.seed, "seed", 0, "sampling seed")
	flag.StringVar(&o.edgeRule, "edge-rule", "or", "decoding of undirected edges: or (the reference rule), and (both directions must agree), mean (mean score)")
	flag.BoolVar(&o.train, "train", false, "run the whole pipeline: generate data, train LG-VAE and LG-Flow (cpu presets), then sample")
	flag.DurationVar(&o.vaeTime, "vae-time", 0, "with -train: stop LG-VAE training after this long (0: run its steps)")
	flag.DurationVar(&o.flowTime, "flow-time", 0, "with -train: stop LG-Flow training after this long (0: run its steps)")
	flag.IntVar(&o.vaeSteps, "vae-steps", 0, "with -train: override LG-VAE steps")
	flag.IntVar(&o.flowSteps, "flow-steps", 0, "with -train: override LG-Flow steps")
	flag.StringVar(&o.device, "device", "cpu", "where training steps and the denoiser run: cpu or cuda (an NVIDIA GPU)")
	flag.Parse()
	var err error
	if o.backend, err = cuda.Select(o.device); err != nil {
		fmt.Fprintln(os.Stderr, "planar:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, o, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "planar:", err)
		os.Exit(1)
	}
}

// Report is what report.json holds.
type Report struct {
	Dataset       string  `json:"dataset"`
	NSamples      int     `json:"n_samples"`
	SampleSeconds float64 `json:"sample_seconds"`
	Steps         int     `json:"steps"`
	Seed          uint64  `json:"seed"`
	// EdgeRule is the decoding rule for undirected edges (or, and, mean).
	EdgeRule       string `json:"edge_rule"`
	Hardware       string `json:"hardware"`
	Reconstruction struct {
		EdgeAcc   float64 `json:"edge_acc"`
		NodeAcc   float64 `json:"node_acc"`
		SampleAcc float64 `json:"sample_acc"`
		// DecodedAcc is the fraction of test graphs whose decoded graph
		// (the OR of both directions' decisions) equals the input.
		DecodedAcc float64 `json:"decoded_acc"`
	} `json:"reconstruction"`
	MMD struct {
		Degree     float64 `json:"degree"`
		Clustering float64 `json:"clustering"`
		Orbit      float64 `json:"orbit"`
		Spectral   float64 `json:"spectral"`
	} `json:"mmd"`
	Valid  float64 `json:"valid"`
	Unique float64 `json:"unique"`
	Novel  float64 `json:"novel"`
	VUN    float64 `json:"vun"`
	// Models names the checkpoints used.
	Models struct {
		VAE  string `json:"vae"`
		Flow string `json:"flow"`
	} `json:"models"`
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.backend == nil {
		o.backend = tensor.CPU
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "generating Extended Planar (n = 64, 8192/256/256, seed 0)")
	load := func(split string) ([]*graph.Graph, error) {
		return datasets.Load(ctx, "planar", split, datasets.Options{Progress: progress.Bar(stderr, "planar "+split)})
	}
	train, err := load("train")
	if err != nil {
		return err
	}
	test, err := load("test")
	if err != nil {
		return err
	}
	for name, gs := range map[string][]*graph.Graph{"train.g6": train, "test.g6": test} {
		if err := graph.WriteFile(filepath.Join(o.out, name), gs); err != nil {
			return err
		}
	}

	vaePath, flowPath := o.vaePath, o.flowPath
	if o.train {
		val, err := load("val")
		if err != nil {
			return err
		}
		if vaePath, flowPath, err = trainAll(ctx, o, train, val, stderr); err != nil {
			return err
		}
	}
	if vaePath == "" {
		vaePath = modroot.File("pretrained/planar/vae.safetensors")
	}
	if flowPath == "" {
		flowPath = modroot.File("pretrained/planar/flow.safetensors")
	}
	ae, err := vae.Load(vaePath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w\n(no trained LG-VAE there: run with -train to train one)", err)
		}
		return err
	}
	fm, err := flow.Load(flowPath, ae)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w\n(no trained LG-Flow there: run with -train to train one)", err)
		}
		return err
	}
	if err := fm.ToBackend(o.backend); err != nil {
		return err
	}
	var rep Report
	rep.Dataset, rep.NSamples, rep.Steps, rep.Seed = "planar", o.n, o.steps, o.seed
	rep.Hardware = fmt.Sprintf("%s/%s, %d CPU threads (GOMAXPROCS)", runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	if g, ok := o.backend.(*cuda.Backend); ok {
		rep.Hardware += ", denoiser on " + g.Device().Name
	}
	rep.Models.VAE, rep.Models.Flow = vaePath, flowPath

	testSet, err := vae.Prepare(ctx, test, ae.Cfg, nil)
	if err != nil {
		return err
	}
	acc, err := vae.Reconstruct(ctx, ae, testSet, 64)
	if err != nil {
		return err
	}
	rep.Reconstruction.EdgeAcc, rep.Reconstruction.NodeAcc, rep.Reconstruction.SampleAcc = acc.Edge(), acc.Node(), acc.Sample()
	rep.Reconstruction.DecodedAcc = acc.Decoded()
	fmt.Fprintf(stderr, "LG-VAE reconstruction of the test split: edge %.4f, sample %.4f, decoded graph exact %.4f\n", acc.Edge(), acc.Sample(), acc.Decoded())

	start := time.Now()
	rule, err := vae.ParseEdgeRule(o.edgeRule)
	if err != nil {
		return err
	}
	rep.EdgeRule = rule.String()
	samples, err := flow.Sample(ctx, fm, o.n, flow.WithSeed(o.seed), flow.WithSteps(o.steps), flow.WithBatchSize(o.batch),
		flow.WithEdgeRule(rule), flow.WithProgress(progress.Bar(stderr, "sampling")))
	if err != nil {
		return err
	}
	rep.SampleSeconds = time.Since(start).Seconds()
	if err := graph.WriteFile(filepath.Join(o.out, "samples.g6"), samples); err != nil {
		return err
	}
	if err := writeSVG(filepath.Join(o.out, "samples.svg"), samples[:min(len(samples), 24)]); err != nil {
		return err
	}

	evalBar := progress.Bar(stderr, "evaluating")
	r, err := metrics.Evaluate(ctx, samples, test, train, metrics.Options{Kind: metrics.Planar,
		Progress: func(stage string, done, total int) { evalBar(done, total) }})
	if err != nil {
		return err
	}
	get := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	rep.MMD.Degree, rep.MMD.Clustering, rep.MMD.Orbit, rep.MMD.Spectral = get(r.Degree), get(r.Clustering), get(r.Orbit), get(r.Spectral)
	rep.Valid, rep.Unique, rep.Novel, rep.VUN = get(r.Valid), get(r.Unique), get(r.Novel), get(r.VUN)
	if err := atomicfile.WriteJSON(filepath.Join(o.out, "report.json"), rep); err != nil {
		return err
	}
	printTable(stdout, rep)
	fmt.Fprintf(stdout, "\nwrote %s/{report.json,samples.g6,samples.svg,test.g6,train.g6}\n", o.out)
	return nil
}

// trainAll trains the LG-VAE and LG-Flow cpu presets from scratch and
// returns the paths of the best checkpoints.
func trainAll(ctx context.Context, o options, train, val []*graph.Graph, stderr io.Writer) (string, string, error) {
	p, err := vae.PresetFor("planar", "cpu")
	if err != nil {
		return "", "", err
	}
	if o.vaeSteps > 0 {
		p.Train.Steps = o.vaeSteps
	}
	trainSet, err := vae.Prepare(ctx, train, p.Model, progress.Bar(stderr, "eigenpairs (train)"))
	if err != nil {
		return "", "", err
	}
	valSet, err := vae.Prepare(ctx, val, p.Model, progress.Bar(stderr, "eigenpairs (val)"))
	if err != nil {
		return "", "", err
	}
	vaeDir := filepath.Join(o.out, "vae")
	fmt.Fprintf(stderr, "training LG-VAE (%d steps, batch %d; resumable: state in %s)\n", p.Train.Steps, p.Train.BatchSize, vaeDir)
	_, err = vae.Train(ctx, p.Model, p.Train, trainSet, valSet, vae.TrainOptions{Dir: vaeDir, Resume: true, MaxDuration: o.vaeTime, LogEvery: 10, Backend: o.backend,
		Progress: func(pr vae.Progress) {
			fmt.Fprintf(stderr, "\rLG-VAE step %d/%d loss %.4f best val sample acc %.3f eta %s   ", pr.Step, pr.Steps, pr.Loss, max(pr.BestSample, 0), pr.ETA.Round(time.Second))
		}})
	fmt.Fprintln(stderr)
	if err != nil {
		return "", "", err
	}
	vaePath := filepath.Join(vaeDir, vae.ModelFile)
	ae, err := vae.Load(vaePath)
	if err != nil {
		return "", "", err
	}
	cfg, err := flow.Preset("cpu", ae.Cfg.Latent)
	if err != nil {
		return "", "", err
	}
	if o.flowSteps > 0 {
		cfg.Steps = o.flowSteps
	}
	lat, err := flow.EncodeLatents(ctx, ae, trainSet, 128, progress.Bar(stderr, "encoding latents"))
	if err != nil {
		return "", "", err
	}
	flowDir := filepath.Join(o.out, "flow")
	fmt.Fprintf(stderr, "training LG-Flow (%d steps, batch %d; resumable: state in %s)\n", cfg.Steps, cfg.BatchSize, flowDir)
	_, err = flow.Train(ctx, cfg, ae, trainSet, lat, flow.TrainOptions{Dir: flowDir, Resume: true, MaxDuration: o.flowTime, LogEvery: 10, Backend: o.backend,
		Score: func(gs []*graph.Graph) float64 {
			n := 0
			for _, g := range gs {
				if metrics.IsValidPlanar(g) {
					n++
				}
			}
			return float64(n) / float64(len(gs))
		},
		Progress: func(pr flow.Progress) {
			fmt.Fprintf(stderr, "\rLG-Flow step %d/%d loss %.4f eta %s   ", pr.Step, pr.Steps, pr.Loss, pr.ETA.Round(time.Second))
		}})
	fmt.Fprintln(stderr)
	if err != nil {
		return "", "", err
	}
	return vaePath, filepath.Join(flowDir, flow.ModelFile), nil
}

func writeSVG(path string, gs []*graph.Graph) error {
	return graph.WriteFileAtomic(path, func(w io.Writer) error {
		return render.GridSVG(w, gs, 6, render.Options{Width: 200, Height: 200})
	})
}

// printTable prints lgflow's results beside the paper's (Extended Planar,
// MMD x 1e3, rates in %).
func printTable(w io.Writer, r Report) {
	fmt.Fprintf(w, "\nExtended Planar, %d samples, %d Euler steps (MMD² × 1e3; V.U.N. in %%)\n\n", r.NSamples, r.Steps)
	fmt.Fprintf(w, "%-22s %8s %8s %8s %8s %8s %10s %10s\n", "", "Deg.", "Orbit", "Clust.", "Spec.", "V.U.N.", "Time (s)", "Recon.")
	fmt.Fprintf(w, "%-22s %8.1f %8.1f %8.1f %8.1f %8.1f %10.1f %10.4f\n", "lgflow (this run)",
		1e3*r.MMD.Degree, 1e3*r.MMD.Orbit, 1e3*r.MMD.Clustering, 1e3*r.MMD.Spectral, 100*r.VUN, r.SampleSeconds, r.Reconstruction.SampleAcc)
	fmt.Fprintf(w, "%-22s %8.1f %8.1f %8.1f %8.1f %8.1f %10.1f %10.4f\n", "LG-Flow (paper, L40)", 0.3, 0.4, 10.0, 1.3, 99.4, 8.9, 0.9961)
	fmt.Fprintf(w, "%-22s %8.1f %8.1f %8.1f %8.1f %8.1f %10.0f %10s\n", "DeFoG (paper)", 0.3, 0.1, 9.7, 1.3, 99.6, 890.0, "-")
	fmt.Fprintf(w, "\nvalid %.1f%%, unique %.1f%%, novel %.1f%%; hardware: %s\n", 100*r.Valid, 100*r.Unique, 100*r.Novel, r.Hardware)
}
