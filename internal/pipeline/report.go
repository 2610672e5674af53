package pipeline

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"lgflow/flow"
	"lgflow/metrics"
	"lgflow/vae"
)

// Report is what report.json holds: the run's settings, the LG-VAE's
// reconstruction of the test split, and the metrics of the samples. MMDs
// are raw MMD² values (the tables print them × 1e3) and rates fractions;
// metrics that do not apply to the dataset are omitted.
type Report struct {
	Dataset string `json:"dataset"`
	Title   string `json:"title"`
	// NSamples graphs were sampled in SampleSeconds (integration and
	// decoding).
	NSamples      int     `json:"n_samples"`
	SampleSeconds float64 `json:"sample_seconds"`
	// Steps, EdgeRule, EdgeMargin, Temperature and FinalJump are the sampler settings
	// the run sampled with (the recipe's and the run's own); 0 and "" mean flow.Sample's defaults.
	Steps int `json:"steps"`
	// TimeShift is the time grid's warp (flow.Sampler.TimeShift), if any.
	TimeShift float64 `json:"time_shift,omitempty"`
	Seed      uint64  `json:"seed"`
	EdgeRule  string  `json:"edge_rule"`
	// TimeOffsets are the denoiser's time offsets (flow.Sampler.Offsets),
	// if any.
	TimeOffsets *flow.TimeOffsets `json:"time_offsets,omitempty"`
	EdgeMargin  *float64          `json:"edge_margin,omitempty"`
	Constrained bool              `json:"constrained,omitempty"`
	// Complete says the valid samples were completed (Options.Complete),
	// with the bound Fill.
	Complete bool `json:"complete,omitempty"`
	// Fill is the bound of constrained decoding's edge fill (vae.WithEdgeFill) or of the completion, if any.
	Fill        *float64 `json:"fill,omitempty"`
	Temperature float64  `json:"temperature,omitempty"`
	FinalJump   float64  `json:"final_jump,omitempty"`
	Hardware    string   `json:"hardware"`
	// TrainSplit and TestSplit name the splits; NTrain is the number of
	// graphs novelty is measured against, NTest the reference's size.
	TrainSplit string `json:"train_split"`
	TestSplit  string `json:"test_split"`
	NTrain     int    `json:"n_train"`
	NTest      int    `json:"n_test"`
	// Reconstruction is the LG-VAE's accuracy on the test split (z = mu).
	Reconstruction struct {
		EdgeAcc   float64 `json:"edge_acc"`
		NodeAcc   float64 `json:"node_acc"`
		SampleAcc float64 `json:"sample_acc"`
		// DecodedAcc is the fraction of test graphs whose decoded graph
		// equals the input.
		DecodedAcc float64 `json:"decoded_acc"`
	} `json:"reconstruction"`
	MMD struct {
		Degree     *float64 `json:"degree,omitempty"`
		OutDegree  *float64 `json:"out_degree,omitempty"`
		InDegree   *float64 `json:"in_degree,omitempty"`
		Clustering *float64 `json:"clustering,omitempty"`
		Orbit      *float64 `json:"orbit,omitempty"`
		Spectral   *float64 `json:"spectral,omitempty"`
		Wavelet    *float64 `json:"wavelet,omitempty"`
	} `json:"mmd"`
	Valid  *float64 `json:"valid,omitempty"`
	Unique *float64 `json:"unique,omitempty"`
	Novel  *float64 `json:"novel,omitempty"`
	VUN    *float64 `json:"vun,omitempty"`
	// Ratio is the Ego ratio; Ratios its terms and TrainMMD the training
	// set's MMDs against the test split (the ratio's denominators).
	Ratio       *float64           `json:"ratio,omitempty"`
	Ratios      map[string]float64 `json:"ratios,omitempty"`
	TrainMMD    map[string]float64 `json:"train_mmd,omitempty"`
	IsoTimeouts int                `json:"iso_timeouts,omitempty"`
	// TrainedHere is true when the models were trained by this run.
	TrainedHere bool `json:"trained_here"`
	// Recipe names the recipe of the bundle's sampler.json the run sampled
	// with ("default", "constrained", "complete"), if any.
	Recipe string `json:"recipe,omitempty"`
	// Models names the checkpoints used.
	Models struct {
		VAE  string `json:"vae"`
		Flow string `json:"flow"`
		// Expert is the expert denoiser (flow.Expert), used from
		// ExpertFrom on, if any (several: comma-separated, ExpertFrom the
		// first's).
		Expert     string  `json:"expert,omitempty"`
		ExpertFrom float64 `json:"expert_from,omitempty"`
	} `json:"models"`
	// Notes say where the run differs from the paper's setting.
	Notes []string `json:"notes,omitempty"`
	// Files are the files written into the output directory.
	Files []string `json:"files,omitempty"`
}

func newReport(spec Spec, o Options, n int) *Report {
	return &Report{Dataset: spec.Name, Title: spec.Title, NSamples: n, Seed: o.Seed, Hardware: hardware(),
		TrainSplit: spec.TrainSplit, TestSplit: spec.TestSplit, Notes: append([]string(nil), spec.Notes...)}
}

// setSampling records the settings a run samples with (Options.sampling),
// from the bundle in dir where they come from its recipe.
func (r *Report) setSampling(sm *sampling, o Options, dir string) {
	s := sm.s
	r.Steps, r.TimeShift, r.EdgeMargin = s.Steps, s.TimeShift, s.EdgeMargin
	r.Temperature, r.FinalJump = s.Temperature, s.FinalJump
	r.EdgeRule = s.EdgeRule
	if t := s.Offsets; !t.Zero() {
		r.TimeOffsets = &t
	}
	if sm.recipe != "" {
		r.Recipe = sm.recipe
		r.Notes = append(r.Notes, fmt.Sprintf("sampler: the %s recipe of %s (%s), chosen on the validation split for these models, with the settings given for this run in place of its own; the paper's sampler integrates 100 uniform steps with one denoiser and the or rule (-recipe none -sampler final_jump=1)",
			sm.recipe, filepath.Join(dir, flow.RecipeFile), strings.Join(s.Describe(), ", ")))
	}
	if len(s.Constraints) > 0 {
		r.Constrained = true
		how := "the " + sm.recipe + " recipe decodes"
		if sm.recipe == "" {
			how = "the run decodes"
		}
		r.Notes = append(r.Notes, fmt.Sprintf("constrained decoding: %s every sample under constraints (%s), which the paper's sampler does not do; validity is then partly by construction",
			how, strings.Join(s.Constraints, ", ")))
	}
	if s.Steps > 0 || s.TimeShift > 0 && s.TimeShift != 1 {
		steps, shift := cmp.Or(s.Steps, flow.DefaultSteps), cmp.Or(s.TimeShift, 1)
		// dt/du is s at the noise and 1/s at the data.
		r.Notes = append(r.Notes, fmt.Sprintf("time grid: %d steps warped by t = s·u/(1+(s-1)·u), s = %g (flow.Sampler.TimeShift): steps of %.3g near the noise and %.3g near the data",
			steps, shift, shift/float64(steps), 1/(shift*float64(steps))))
	}
	if t := s.Offsets; !t.Zero() {
		r.Notes = append(r.Notes, fmt.Sprintf("time offsets: the denoiser evaluated at shifted times (steps from %g on: %+g; the final jump: %+g; flow.Sampler.Offsets); the paper evaluates it at the grid's times", t.From, t.Step, t.Jump))
	}
	if f := s.Fill; f != nil {
		r.Fill, r.Complete = f, len(s.Complete) > 0
		if r.Complete {
			r.Notes = append(r.Notes, fmt.Sprintf("completion: the samples that decode valid gain the missing pairs of edge confidence at least %g, most confident first, while they stay valid (vae.WithEdgeCompletion); invalid samples stay as decoded; the paper's decoder does not do this", *f))
		} else {
			r.Notes = append(r.Notes, fmt.Sprintf("edge fill: the missing pairs of edge confidence at least %g added back, most confident first, while the constraint holds (vae.WithEdgeFill)", *f))
		}
	}
	var experts []string
	for _, e := range s.Experts {
		p := e.File
		if e.Model == nil { // the bundle's
			p = filepath.Join(dir, e.File)
		}
		experts = append(experts, p)
		band := fmt.Sprintf("from time %g", e.From)
		if e.Until > 0 {
			band += fmt.Sprintf(" until %g", e.Until)
		}
		r.Notes = append(r.Notes, fmt.Sprintf("expert denoiser: %s the denoiser is a second LG-Flow (%s; flow.Expert); the paper samples with one denoiser", band, p))
		if r.Models.ExpertFrom == 0 {
			r.Models.ExpertFrom = e.From
		}
	}
	r.Models.Expert = strings.Join(experts, ",")
}

func (r *Report) setReconstruction(a vae.Accuracy) {
	r.Reconstruction.EdgeAcc, r.Reconstruction.NodeAcc = a.Edge(), a.Node()
	r.Reconstruction.SampleAcc, r.Reconstruction.DecodedAcc = a.Sample(), a.Decoded()
}

func (r *Report) setMetrics(m *metrics.Report) {
	r.MMD.Degree, r.MMD.OutDegree, r.MMD.InDegree = m.Degree, m.OutDegree, m.InDegree
	r.MMD.Clustering, r.MMD.Orbit, r.MMD.Spectral, r.MMD.Wavelet = m.Clustering, m.Orbit, m.Spectral, m.Wavelet
	r.Valid, r.Unique, r.Novel, r.VUN = m.Valid, m.Unique, m.Novel, m.VUN
	r.Ratio, r.Ratios, r.IsoTimeouts = m.Ratio, m.Ratios, m.IsoTimeouts
	if len(m.Ratios) > 0 {
		r.TrainMMD = map[string]float64{}
		for k, ratio := range m.Ratios {
			if v := r.mmd(Column(k)); v != nil && ratio != 0 {
				r.TrainMMD[k] = *v / ratio
			}
		}
	}
}

// mmd returns the MMD of a column, or nil.
func (r *Report) mmd(c Column) *float64 {
	switch c {
	case ColDegree:
		return r.MMD.Degree
	case ColOutDegree:
		return r.MMD.OutDegree
	case ColInDegree:
		return r.MMD.InDegree
	case ColClust:
		return r.MMD.Clustering
	case ColOrbit:
		return r.MMD.Orbit
	case ColSpectral:
		return r.MMD.Spectral
	case ColWavelet:
		return r.MMD.Wavelet
	}
	return nil
}

// Value returns a column's value in the units of the paper's tables (MMD²
// × 1e3, rates in %, seconds, the ratio and the sample accuracy as they
// are), and whether the report has it.
func (r *Report) Value(c Column) (float64, bool) {
	pct := func(p *float64) (float64, bool) {
		if p == nil {
			return 0, false
		}
		return 100 * *p, true
	}
	switch c {
	case ColSampleAcc:
		return r.Reconstruction.SampleAcc, true
	case ColTime:
		return r.SampleSeconds, true
	case ColRatio:
		if r.Ratio == nil {
			return 0, false
		}
		return *r.Ratio, true
	case ColValid:
		return pct(r.Valid)
	case ColUnique:
		return pct(r.Unique)
	case ColNovel:
		return pct(r.Novel)
	case ColVUN:
		return pct(r.VUN)
	}
	if v := r.mmd(c); v != nil {
		return 1e3 * *v, true
	}
	return 0, false
}

// columnHeads are the table headings of the columns.
var columnHeads = map[Column]string{
	ColSampleAcc: "Recon.", ColDegree: "Deg.", ColOutDegree: "Out Deg.", ColInDegree: "In Deg.", ColOrbit: "Orbit",
	ColClust: "Clust.", ColSpectral: "Spec.", ColWavelet: "Wave.", ColRatio: "Ratio", ColValid: "Valid",
	ColUnique: "Unique", ColNovel: "Novel", ColVUN: "V.U.N.", ColTime: "Time (s)",
}

// cell formats a value for a column, "-" when missing: sample accuracy
// with 4 decimals, times with 1 below 100 s and none above, the rest
// with 1.
func cell(c Column, v float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case c == ColSampleAcc:
		return fmt.Sprintf("%.4f", v)
	case c == ColTime && v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	s := fmt.Sprintf("%.1f", v)
	if s == "-0.0" {
		s = "0.0"
	}
	return s
}

// width returns a column's width in the table.
func width(c Column) int {
	if c == ColTime || c == ColSampleAcc {
		return 10
	}
	return 8
}

// WriteTable prints the report as the paper's table for the dataset: our
// row ("lgflow (this run)") above the paper's rows, then the rates, the
// notes and the hardware.
func (r *Report) WriteTable(w io.Writer, spec Spec) error {
	var b strings.Builder
	sampler := fmt.Sprintf("%d Euler steps", r.Steps)
	if r.Steps == 0 {
		sampler = "flow.Sample's default steps"
	}
	if r.TimeShift > 0 && r.TimeShift != 1 {
		sampler += fmt.Sprintf(", time shift %g", r.TimeShift)
	}
	units := "MMD² × 1e3"
	switch spec.Kind {
	case metrics.Planar, metrics.Tree:
		units += "; V.U.N. in %"
	case metrics.DAG:
		units += "; rates in %"
	}
	fmt.Fprintf(&b, "\n%s, %d samples, %s (%s)\n\n", spec.Title, r.NSamples, sampler, units)
	line := func(label string, val func(Column) (float64, bool)) {
		fmt.Fprintf(&b, "%-22s", label)
		for _, c := range spec.Columns {
			v, ok := val(c)
			fmt.Fprintf(&b, " %*s", width(c), cell(c, v, ok))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%-22s", "")
	for _, c := range spec.Columns {
		fmt.Fprintf(&b, " %*s", width(c), columnHeads[c])
	}
	b.WriteString("\n")
	line("lgflow (this run)", r.Value)
	if len(r.TrainMMD) > 0 {
		line("train set (this split)", func(c Column) (float64, bool) {
			if c == ColRatio {
				return 1, true
			}
			v, ok := r.TrainMMD[string(c)]
			return 1e3 * v, ok
		})
	}
	for _, p := range spec.Paper {
		line(p.Label, func(c Column) (float64, bool) {
			v, ok := p.Values[c]
			return v, ok
		})
	}
	b.WriteString("\n")
	var rates []string
	for _, x := range []struct {
		name string
		v    *float64
	}{{"valid", r.Valid}, {"unique", r.Unique}, {"novel", r.Novel}} {
		if x.v != nil {
			rates = append(rates, fmt.Sprintf("%s %.1f%%", x.name, 100**x.v))
		}
	}
	if len(rates) > 0 {
		fmt.Fprintf(&b, "%s; ", strings.Join(rates, ", "))
	}
	fmt.Fprintf(&b, "hardware: %s\n", r.Hardware)
	if spec.Kind != metrics.Planar && spec.Kind != metrics.Tree || spec.Name != "planar" {
		fmt.Fprintf(&b, "LG-VAE reconstruction of the test split: edge %.4f, node %.4f, sample %.4f; models: %s, %s\n",
			r.Reconstruction.EdgeAcc, r.Reconstruction.NodeAcc, r.Reconstruction.SampleAcc, r.Models.VAE, r.Models.Flow)
	}
	if r.IsoTimeouts > 0 {
		fmt.Fprintf(&b, "%d isomorphism look-ups timed out (counted as not isomorphic)\n", r.IsoTimeouts)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
