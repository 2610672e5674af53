package flow

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"lgflow/vae"
)

// The names of a bundle's and a training run's files, the format of a
// recipe, and the recipe name that ignores a model's recipe.
const (
	// ModelFile is a bundle's flow, and in TrainOptions.Dir the sampling
	// model with the best validation score (or the final one without
	// validation).
	ModelFile = "flow.safetensors"
	// LastFile is, in TrainOptions.Dir, the sampling model (EMA weights)
	// of the latest checkpoint.
	LastFile = "last.safetensors"
	// StateFile is, in TrainOptions.Dir, the resumable training state.
	StateFile = "state.safetensors"
	// RecipeFile is a bundle's sampling recipe (Open).
	RecipeFile = "sampler.json"
	// RecipeFormat is the format tag of the sampler.json files this
	// version reads and writes (docs/bundle.md).
	RecipeFormat = "lgflow-sampler/1"
	// NoRecipe is the WithRecipe name that ignores a model's recipe:
	// Sample's own defaults, the zero Sampler (a model from Load has no
	// recipe).
	NoRecipe = "none"
)

// Open loads the model bundle in dir: the LG-VAE (vae.safetensors), the
// flow bound to it (ModelFile, which must have been trained in that
// autoencoder's latent space), the sampling recipe (RecipeFile,
// sampler.json; docs/bundle.md) and the expert denoisers the recipe names.
// Sample then starts from the recipe's settings, so that
//
//	m, err := flow.Open("pretrained/planar")
//	graphs, err := flow.Sample(ctx, m, 16, flow.WithSeed(42))
//
// samples with the model's best measured settings; WithSettings changes
// them one by one, and WithRecipe selects a named alternative. A directory
// without a sampler.json opens with no recipe: Sample's own defaults, as a
// model loaded from a flow file. Load(dir, ae) opens it with another LG-VAE.
func Open(dir string) (*Model, error) { return openBundle(dir, nil) }

// openBundle is Open with the LG-VAE ae instead of the bundle's (nil: the
// bundle's vae.safetensors).
func openBundle(dir string, ae *vae.Model) (*Model, error) {
	r, err := LoadRecipe(filepath.Join(dir, RecipeFile))
	if errors.Is(err, fs.ErrNotExist) {
		r, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("flow: %w", err)
	}
	if ae == nil {
		if ae, err = vae.Load(filepath.Join(dir, vae.ModelFile)); err != nil {
			return nil, fmt.Errorf("flow: bundle %s: %w", dir, err)
		}
	}
	m, err := Load(filepath.Join(dir, ModelFile), ae)
	if err != nil {
		return nil, fmt.Errorf("flow: bundle %s: %w", dir, err)
	}
	if r == nil {
		return m, nil
	}
	m.Recipe, m.experts = r, map[string]*Model{}
	samplers := []Sampler{r.Sampler}
	keys := []string{"sampler"}
	for _, name := range r.Names() {
		samplers = append(samplers, r.Alternatives[name])
		keys = append(keys, "alternatives."+name)
	}
	for i, s := range samplers {
		if w := s.GuidanceScale; m.Cond == nil && w != nil && *w != 1 {
			return nil, fmt.Errorf("flow: bundle %s: %s: %s.guidance_scale: %g for a flow trained without conditions", dir, RecipeFile, keys[i], *w)
		}
		for _, e := range s.Experts {
			if m.experts[e.File] != nil {
				continue
			}
			em, err := Load(filepath.Join(dir, e.File), ae)
			if err != nil {
				return nil, fmt.Errorf("flow: bundle %s: expert denoiser of %s: %w", dir, RecipeFile, err)
			}
			m.experts[e.File] = em
		}
	}
	return m, nil
}
