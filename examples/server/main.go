// Command server is an HTTP sampling service: it loads shipped LG-VAE and
// LG-Flow models once and samples graphs for each request.
//
//	go run ./examples/server                                  # planar on :8080
//	go run ./examples/server -models moses=pretrained/moses   # planar and MOSES molecules
//	curl -d '{"n": 4, "seed": 1}' localhost:8080/sample
//	curl -d '{"model": "moses", "n": 8, "format": "smiles"}' localhost:8080/sample
//	curl -d '{"model": "mine", "n": 4, "condition": "label=tree", "guidance": 2}' localhost:8080/sample
//	curl localhost:8080/healthz
//
// POST /sample takes a JSON object (every field optional):
//
//	model   the model's name (default: -name, the models of -vae and -flow)
//	n       graphs to sample, 1 to -max-n (default 1)
//	seed    the sampling seed (default 0). A model is a bundle (flow.Open:
//	        the LG-VAE, the flow, its experts and sampler.json, the
//	        sampling recipe), and samples with its recipe: the shipped
//	        pretrained/planar with n = 256 and a seed gives the graphs
//	        go run ./examples/planar gives, pretrained/moses samples as
//	        examples/moses does; with -recipe NAME, models whose recipe has
//	        that alternative sample with it (-recipe complete: the graphs
//	        examples/planar -complete gives); with -plain, every model
//	        samples as flow.Sample and lgflow sample do without a recipe
//	steps   Euler steps on a uniform grid, 1 to -max-steps (default: the
//	        model's grid: its recipe's, else 100 uniform steps)
//	format  graph6 (one line per graph, the default), json (node-link
//	        objects under "graphs"), smiles (molecule models: one canonical
//	        SMILES per line, None where a graph is no valid molecule;
//	        aromatic N read as [nH] where needed, -infer-nh) or svg
//	condition  for a conditional model (lgflow train -cond): the graphs'
//	        condition, a string as lgflow sample -cond takes it
//	        ("label=tree", "prop=170", "label=planar,edges=170") or an
//	        object ({"label": "tree", "edges": 170}); absent or null:
//	        none, the model's whole distribution
//	guidance  the classifier-free guidance scale, 0 to 100 (default: the
//	        recipe's guidance_scale, else 1: plain conditional sampling;
//	        0: unconditional; above 1: the condition followed more
//	        strongly, at twice the cost)
//
// Bad input gets 400 with {"error": "..."} (among it an unknown label, a
// property outside the model's trained range, and a condition for a
// model trained without one); a body over -max-body bytes 413. At most
// -slots sampling calls run at once (default: one per CPU thread); other
// requests wait up to -queue-wait for a slot (at most -max-queue of
// them), then get 503 with Retry-After. A client that hangs up cancels
// its sampling call. GET /healthz reports the models, what the
// conditional ones condition on, and the load. SIGINT or SIGTERM stops
// accepting connections and lets running requests finish for up to
// -shutdown-timeout, then cancels them.
//
// Paths are relative to the working directory: run it from the
// repository root, or pass -model.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"lgflow/flow"
	"lgflow/graph/mol"
	"lgflow/vae"
)

// options are the command-line flags.
type options struct {
	addr, name, dir, vaePath, flowPath, models string
	lim                                        limits
	shutdownTimeout                            time.Duration
	// plain samples every model with flow.Sample's defaults, without its
	// recipe (flow.NoRecipe).
	plain bool
	// recipe selects the recipes' alternative of this name for the models
	// that have one (flow.WithRecipe; "": the recipes' default).
	recipe string
	// inferNH is the mol.InferAromaticNH bound molecule models decode
	// SMILES with.
	inferNH int
}

func main() {
	o := options{lim: defaultLimits(runtime.GOMAXPROCS(0))}
	flag.StringVar(&o.addr, "addr", "localhost:8080", "listen address")
	flag.StringVar(&o.name, "name", "planar", "name of the default model, -model's (or -vae and -flow's)")
	flag.StringVar(&o.dir, "model", "pretrained/planar", "bundle of the default model: a directory holding vae.safetensors, flow.safetensors, its experts and sampler.json, the sampling recipe (flow.Open)")
	flag.StringVar(&o.vaePath, "vae", "", "LG-VAE checkpoint of the default model, with -flow, instead of -model (no recipe: flow.Sample's defaults)")
	flag.StringVar(&o.flowPath, "flow", "", "LG-Flow checkpoint of the default model, with -vae")
	flag.StringVar(&o.models, "models", "", "more models, name=DIR,... where DIR is a bundle (e.g. moses=pretrained/moses)")
	flag.StringVar(&o.recipe, "recipe", "", "models whose recipe has this alternative sample with it (e.g. complete: planar completes its valid samples as examples/planar -complete; constrained)")
	complete := flag.Bool("complete", false, "the same as -recipe complete (not the paper's decoder)")
	flag.BoolVar(&o.plain, "plain", false, "sample every model with flow.Sample's defaults (the flow alone, the paper's sampler) instead of its recipe")
	flag.IntVar(&o.inferNH, "infer-nh", mol.DefaultInferNH, "molecule models: read up to N aromatic nitrogens as [nH] where a molecule cannot be kekulised otherwise, since the encoding carries no hydrogens (mol.InferAromaticNH; 0: the paper's decoding)")
	flag.IntVar(&o.lim.MaxN, "max-n", o.lim.MaxN, "most graphs per request")
	flag.IntVar(&o.lim.MaxSteps, "max-steps", o.lim.MaxSteps, "most integration steps per request")
	flag.Int64Var(&o.lim.MaxBody, "max-body", o.lim.MaxBody, "largest request body in bytes")
	flag.IntVar(&o.lim.Slots, "slots", o.lim.Slots, "sampling calls running at once")
	flag.IntVar(&o.lim.MaxQueue, "max-queue", o.lim.MaxQueue, "requests that may wait for a slot")
	flag.DurationVar(&o.lim.QueueWait, "queue-wait", o.lim.QueueWait, "how long a request waits for a slot before 503")
	flag.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long running requests may take to finish")
	flag.Parse()
	if *complete {
		o.recipe = "complete"
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, o, log, nil); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run loads the models and serves until ctx is cancelled, then shuts down
// gracefully. If ready is not nil it receives the listening address. log
// may be nil.
func run(ctx context.Context, o options, log *slog.Logger, ready chan<- string) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	models, err := loadModels(o)
	if err != nil {
		return err
	}
	s, err := newServer(models, o.name, o.lim, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	for _, m := range models {
		if len(m.settings) > 0 {
			log.Info("sampler settings", "model", m.name, "settings", strings.Join(m.settings, "; "))
		}
	}
	log.Info("serving", "addr", ln.Addr().String(), "models", s.modelNames(), "slots", o.lim.Slots)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	log.Info("shutting down", "timeout", o.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Requests still running: closing their connections cancels
		// their contexts and so their sampling calls.
		log.Warn("shutdown timed out; closing connections", "error", err)
		srv.Close()
		// Their sampling calls return within a step.
		for deadline := time.Now().Add(10 * time.Second); s.running.Load() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loadModels loads the default model and those of -models, each with the
// sampler options of its recipe (the alternative of -recipe where it has
// one; none under -plain).
func loadModels(o options) ([]*model, error) {
	type spec struct{ name, dir string }
	specs := []spec{{o.name, o.dir}}
	for _, item := range strings.Split(o.models, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, dir, ok := strings.Cut(item, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("-models: %q is not name=DIR", item)
		}
		specs = append(specs, spec{name, dir})
	}
	var out []*model
	for i, sp := range specs {
		var fm *flow.Model
		var err error
		if i == 0 && (o.vaePath != "" || o.flowPath != "") {
			fm, err = loadPair(o.vaePath, o.flowPath)
		} else {
			fm, err = flow.Open(sp.dir)
		}
		if err != nil {
			return nil, hint(err)
		}
		md := newModel(sp.name, fm, o.inferNH)
		switch {
		case o.plain || fm.Recipe == nil:
			md.opts = []flow.SampleOption{flow.WithRecipe(flow.NoRecipe)}
			md.settings = []string{"flow.Sample's defaults"}
		default:
			name := ""
			if _, ok := fm.Recipe.Alternatives[o.recipe]; ok {
				name = o.recipe
			}
			s, _ := fm.Recipe.Lookup(name)
			md.opts = []flow.SampleOption{flow.WithRecipe(name)}
			md.settings = append([]string{fmt.Sprintf("recipe %q of %s", cmp.Or(name, "default"), filepath.Join(sp.dir, flow.RecipeFile))}, s.Describe()...)
		}
		out = append(out, md)
	}
	return out, nil
}

// loadPair loads an LG-VAE and a flow bound to it, without a recipe.
func loadPair(vaePath, flowPath string) (*flow.Model, error) {
	if vaePath == "" || flowPath == "" {
		return nil, errors.New("-vae and -flow go together")
	}
	ae, err := vae.Load(vaePath)
	if err != nil {
		return nil, err
	}
	return flow.Load(flowPath, ae)
}

// hint adds where the shipped models are to a missing-file error.
func hint(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w\n(run from the repository root, or pass -model)", err)
	}
	return err
}
