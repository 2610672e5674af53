package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"lgflow/flow"
	"lgflow/tensor"
	"lgflow/vae"
)

// expertFlags holds the -expert and -expert-from flags of the commands that
// sample: comma-separated lists, one first time per expert denoiser.
type expertFlags struct {
	paths, froms *string
}

// addExpertFlags registers -expert and -expert-from on fs.
func addExpertFlags(fs *flag.FlagSet, what string) expertFlags {
	return expertFlags{
		paths: fs.String("expert", "", what+"LG-Flow expert denoisers (comma-separated files), each replacing the denoiser from its first time in -expert-from on (flow.Expert: e.g. a data-end expert fine-tuned from -flow with -time-mean 3.05 -time-std 0.35 -decoder-weight 100; not the paper's sampler)"),
		froms: fs.String("expert-from", "", fmt.Sprintf("with -expert: each expert's first time, comma-separated in the order of -expert (default with one expert: %g)", flow.DefaultExpertFrom)),
	}
}

// expertSpec is one expert denoiser's file and its first time.
type expertSpec struct {
	path string
	from float64
}

// parse checks the two lists and pairs them.
func (f expertFlags) parse() ([]expertSpec, error) {
	paths, froms := splitList(*f.paths), splitList(*f.froms)
	switch {
	case len(paths) == 0 && len(froms) > 0:
		return nil, usagef("-expert-from needs -expert")
	case len(paths) == 0:
		return nil, nil
	case len(froms) == 0 && len(paths) == 1:
		return []expertSpec{{paths[0], flow.DefaultExpertFrom}}, nil
	case len(froms) != len(paths):
		return nil, usagef("-expert-from needs one time per -expert file: %d files, %d times", len(paths), len(froms))
	}
	specs := make([]expertSpec, len(paths))
	for i, p := range paths {
		t, err := strconv.ParseFloat(froms[i], 64)
		if err != nil {
			return nil, usagef("-expert-from: %q is not a number", froms[i])
		}
		specs[i] = expertSpec{p, t}
	}
	return specs, nil
}

// splitList splits a comma-separated flag value, dropping surrounding
// spaces; an empty value is an empty list.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// loadExperts loads the experts in the LG-VAE's latent space, moves them to
// backend (nil: stay on the CPU) and returns them as the sampler's experts
// (flow.Sampler.Experts): each from its first time until the next one's,
// the last to the end.
func loadExperts(specs []expertSpec, ae *vae.Model, backend tensor.Backend) ([]flow.Expert, error) {
	var es []flow.Expert
	for _, s := range specs {
		e, err := flow.Load(s.path, ae)
		if err != nil {
			return nil, err
		}
		if backend != nil {
			if err := e.ToBackend(backend); err != nil {
				return nil, err
			}
		}
		es = append(es, flow.Expert{File: s.path, From: s.from, Model: e})
	}
	// A step uses the expert with the latest first time not after its
	// start: each band ends where the next begins.
	for i := range es {
		for _, f := range es {
			if f.From > es[i].From && (es[i].Until == 0 || f.From < es[i].Until) {
				es[i].Until = f.From
			}
		}
	}
	return es, nil
}

// describeExperts is the experts as a report line: "E from T, ...".
func describeExperts(specs []expertSpec) string {
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = fmt.Sprintf("%s from %g", s.path, s.from)
	}
	return strings.Join(parts, ", ")
}
