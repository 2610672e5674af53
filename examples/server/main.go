// Command server is an HTTP sampling service: it loads shipped LG-VAE and
// LG-Flow models once and samples graphs for each request.
//
//	go run ./examples/server                                  # planar on :8080
//	go run ./examples/server -models moses=pretrained/moses   # planar and MOSES molecules
//	curl -d '{"n": 4, "seed": 1}' localhost:8080/sample
//	curl -d '{"model": "moses", "n": 8, "format": "smiles"}' localhost:8080/sample
//	curl localhost:8080/healthz
//
// POST /sample takes a JSON object (every field optional):
//
//	model   the model's name (default: -name, the models of -vae and -flow)
//	n       graphs to sample, 1 to -max-n (default 1)
//	seed    the sampling seed (default 0): a model named after a dataset
//	        samples as that dataset's example does with its shipped models
//	        (the data-end expert shipped beside the flow, if any, and the
//	        tuned sampler settings, pipeline.ShippedOptions), so n = 256 and
//	        a seed give the graphs examples/planar gives (a model named
//	        moses: temperature 0.8, pipeline.ShippedMOSES, and the
//	        mid-path expert shipped beside the flow, if any, in
//	        pipeline.ShippedMOSESExpert's band, as examples/moses samples
//	        its shipped models); with -complete,
//	        the graphs examples/planar -complete gives (models of datasets
//	        whose samples can be completed; pipeline.CompletedOptions);
//	        with -plain, as flow.Sample and lgflow sample do by default
//	steps   Euler steps on a uniform grid, 1 to -max-steps (default: the
//	        model's grid: the tuned one where the model samples as its
//	        dataset's example does, else 100 uniform steps)
//	format  graph6 (one line per graph, the default), json (node-link
//	        objects under "graphs"), smiles (molecule models: one canonical
//	        SMILES per line, None where a graph is no valid molecule;
//	        aromatic N read as [nH] where needed, -infer-nh) or svg
//
// Bad input gets 400 with {"error": "..."}; a body over -max-body bytes
// 413. At most -slots sampling calls run at once (default: one per CPU
// thread); other requests wait up to -queue-wait for a slot (at most
// -max-queue of them), then get 503 with Retry-After. A client that hangs
// up cancels its sampling call. GET /healthz reports the models and the
// load. SIGINT or SIGTERM stops accepting connections and lets running
// requests finish for up to -shutdown-timeout, then cancels them.
//
// Paths are relative to the working directory: run it from the
// repository root, or pass -vae and -flow.
package main

import (
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
	"lgflow/pipeline"
	"lgflow/vae"
)

// options are the command-line flags.
type options struct {
	addr, name, vaePath, flowPath, models string
	lim                                   limits
	shutdownTimeout                       time.Duration
	// plain samples every model with flow.Sample's defaults, without the
	// dataset's shipped expert and tuned settings.
	plain bool
	// complete completes the valid samples of the models whose dataset
	// allows it (pipeline.CompletedOptions).
	complete bool
	// inferNH is the mol.InferAromaticNH bound molecule models decode
	// SMILES with.
	inferNH int
}

func main() {
	o := options{lim: defaultLimits(runtime.GOMAXPROCS(0))}
	flag.StringVar(&o.addr, "addr", "localhost:8080", "listen address")
	flag.StringVar(&o.name, "name", "planar", "name of the model given by -vae and -flow (the default model)")
	flag.StringVar(&o.vaePath, "vae", "pretrained/planar/vae.safetensors", "LG-VAE checkpoint of the default model")
	flag.StringVar(&o.flowPath, "flow", "pretrained/planar/flow.safetensors", "LG-Flow checkpoint of the default model")
	flag.StringVar(&o.models, "models", "", "more models, name=DIR,... where DIR holds vae.safetensors and flow.safetensors (e.g. moses=pretrained/moses)")
	flag.BoolVar(&o.complete, "complete", false, "models named after a dataset whose samples can be completed (planar) complete their valid samples, as examples/planar -complete (pipeline.CompletedOptions; not the paper's decoder)")
	flag.BoolVar(&o.plain, "plain", false, "sample with flow.Sample's defaults (the flow alone, the paper's sampler) instead of a named dataset's shipped expert and tuned settings (pipeline.ShippedOptions)")
	flag.IntVar(&o.inferNH, "infer-nh", mol.DefaultInferNH, "molecule models: read up to N aromatic nitrogens as [nH] where a molecule cannot be kekulised otherwise, since the encoding carries no hydrogens (mol.InferAromaticNH; 0: the paper's decoding)")
	flag.IntVar(&o.lim.MaxN, "max-n", o.lim.MaxN, "most graphs per request")
	flag.IntVar(&o.lim.MaxSteps, "max-steps", o.lim.MaxSteps, "most integration steps per request")
	flag.Int64Var(&o.lim.MaxBody, "max-body", o.lim.MaxBody, "largest request body in bytes")
	flag.IntVar(&o.lim.Slots, "slots", o.lim.Slots, "sampling calls running at once")
	flag.IntVar(&o.lim.MaxQueue, "max-queue", o.lim.MaxQueue, "requests that may wait for a slot")
	flag.DurationVar(&o.lim.QueueWait, "queue-wait", o.lim.QueueWait, "how long a request waits for a slot before 503")
	flag.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long running requests may take to finish")
	flag.Parse()

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

// loadModels loads the default model and those of -models.
func loadModels(o options) ([]*model, error) {
	type spec struct{ name, vae, flow string }
	specs := []spec{{o.name, o.vaePath, o.flowPath}}
	for _, item := range strings.Split(o.models, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, dir, ok := strings.Cut(item, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("-models: %q is not name=DIR", item)
		}
		specs = append(specs, spec{name, filepath.Join(dir, "vae.safetensors"), filepath.Join(dir, "flow.safetensors")})
	}
	var out []*model
	for _, sp := range specs {
		ae, err := vae.Load(sp.vae)
		if err != nil {
			return nil, hint(err)
		}
		fm, err := flow.Load(sp.flow, ae)
		if err != nil {
			return nil, hint(err)
		}
		md := newModel(sp.name, fm, o.inferNH)
		if spec, err := pipeline.Lookup(sp.name); err == nil && !o.plain {
			shipped := pipeline.ShippedOptions
			if o.complete && spec.CanComplete() {
				shipped = pipeline.CompletedOptions
			}
			if md.opts, md.settings, err = shipped(spec, sp.flow, ae); err != nil {
				return nil, err
			}
		} else if sp.name == "moses" && md.mol == mol.MOSES && !o.plain {
			if md.opts, md.settings, err = pipeline.ShippedMOSES.Options(); err != nil {
				return nil, err
			}
			e, file, err := pipeline.LoadShippedExpert(sp.flow, ae)
			if err != nil {
				return nil, err
			}
			if e != nil {
				opts, desc, err := pipeline.ShippedMOSESExpert.Options(fm, e, file)
				if err != nil {
					return nil, err
				}
				md.opts, md.settings = append(md.opts, opts...), append(md.settings, desc)
			}
		}
		out = append(out, md)
	}
	return out, nil
}

// hint adds where the shipped models are to a missing-file error.
func hint(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w\n(run from the repository root, or pass -vae and -flow)", err)
	}
	return err
}
