package bundle

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/vae"
)

// TestPlanFor pins the rule that picks the models for data PlanFor has
// not seen: k, latent size, widths and batches from the largest graph and
// the labels, and the sizes' limits.
func TestPlanFor(t *testing.T) {
	for _, c := range []struct {
		name         string
		d            DataFacts
		size         string
		ntrain       int
		k, latent, w int
		vaeB, flowB  int
		directed     bool
		nodeC, edgeC int
		bucket       bool
		dit          string // DiT depth × width
		err          string
	}{
		{"planar-like", DataFacts{MinNodes: 64, MaxNodes: 64, EdgeClasses: 1}, "cpu", 1000, 16, 16, 128, 32, 64, false, 0, 1, false, "4x128", ""},
		{"small graphs", DataFacts{MinNodes: 10, MaxNodes: 30, EdgeClasses: 1}, "cpu", 1000, 16, 16, 128, 64, 64, false, 0, 1, false, "4x128", ""},
		{"ego-like", DataFacts{MinNodes: 50, MaxNodes: 400, EdgeClasses: 1}, "cpu", 1000, 64, 16, 128, 4, 8, false, 0, 1, true, "4x128", ""},
		{"labelled DAGs", DataFacts{MinNodes: 20, MaxNodes: 150, Directed: true, NodeClasses: 47, EdgeClasses: 1}, "cpu", 1000, 64, 16, 128, 8, 16, true, 47, 1, true, "4x128", ""},
		{"few graphs", DataFacts{MinNodes: 8, MaxNodes: 8, EdgeClasses: 2}, "cpu", 5, 16, 16, 128, 5, 5, false, 0, 2, false, "4x128", ""},
		{"paper, labelled", DataFacts{MinNodes: 9, MaxNodes: 27, NodeClasses: 7, EdgeClasses: 4}, "paper", 100000, 16, 24, 256, 512, 512, false, 7, 4, false, "6x384", ""},
		{"paper, planar-like", DataFacts{MinNodes: 64, MaxNodes: 64, EdgeClasses: 1}, "paper", 100000, 16, 16, 256, 256, 256, false, 0, 1, false, "6x384", ""},
		{"too large for cpu", DataFacts{MinNodes: 10, MaxNodes: 513, EdgeClasses: 1}, "cpu", 10, 0, 0, 0, 0, 0, false, 0, 0, false, "", "the largest graph has 513 nodes; the cpu preset trains on graphs of at most 512"},
		{"unknown size", DataFacts{MinNodes: 10, MaxNodes: 10, EdgeClasses: 1}, "huge", 10, 0, 0, 0, 0, 0, false, 0, 0, false, "", `unknown preset "huge"`},
	} {
		p, err := PlanFor(c.d, c.size, c.ntrain)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		m := p.VAE.Model
		dit := fmt.Sprintf("%dx%d", p.Flow.DiT.Depth, p.Flow.DiT.Width)
		if m.K != c.k || m.Latent != c.latent || m.Width != c.w || p.VAE.Train.BatchSize != c.vaeB || p.Flow.BatchSize != c.flowB ||
			m.Directed != c.directed || m.QPerGraph != c.directed || m.NodeClasses != c.nodeC || m.EdgeClasses != c.edgeC ||
			p.VAE.Train.BucketBySize != c.bucket || p.Flow.BucketBySize != c.bucket || dit != c.dit || m.Norm != vae.GraphNorm || !p.Flow.Precondition || p.Flow.DiT.Dim != m.Latent {
			t.Errorf("%s: k %d latent %d width %d batches %d/%d directed %v classes %d/%d bucket %v DiT %s norm %s",
				c.name, m.K, m.Latent, m.Width, p.VAE.Train.BatchSize, p.Flow.BatchSize, m.Directed, m.NodeClasses, m.EdgeClasses, p.VAE.Train.BucketBySize, dit, m.Norm)
		}
	}
}

// TestPlanSteps checks what the steps a budget fits set: schedules,
// validations, checkpoints and the EMA.
func TestPlanSteps(t *testing.T) {
	p, err := PlanFor(DataFacts{MinNodes: 20, MaxNodes: 40, EdgeClasses: 1}, "cpu", 500)
	if err != nil {
		t.Fatal(err)
	}
	p.SetVAESteps(1200)
	if tr := p.VAE.Train; tr.Steps != 1200 || tr.Warmup != 120 || tr.ValEvery != 120 || tr.CheckpointEvery != 60 {
		t.Errorf("LG-VAE: %+v", tr)
	}
	p.SetFlowSteps(3000)
	if c := p.Flow; c.Steps != 3000 || c.ValEvery != 600 || c.CheckpointEvery != 150 || c.EMAAfter != 300 || c.Cooldown != 600 || c.EMABeta < 0.9966 || c.EMABeta > 0.9967 {
		t.Errorf("flow: steps %d val %d checkpoints %d EMA %g after %d cooldown %d", c.Steps, c.ValEvery, c.CheckpointEvery, c.EMABeta, c.EMAAfter, c.Cooldown)
	}
	if err := p.Flow.Validate(); err != nil {
		t.Error(err)
	}
	p.SetFlowSteps(50)
	if p.Flow.EMABeta != 0.9 {
		t.Errorf("50 steps: EMA %g, want 0.9", p.Flow.EMABeta)
	}
	if got := stepsFor(10, 60e9); got != 500 {
		t.Errorf("10 steps/s for a minute: %d steps, want 500", got)
	}
}

// TestInspect checks the facts of a set of graphs and the sets it refuses,
// by the graph that breaks the rule.
func TestInspect(t *testing.T) {
	path := func(n int, directed bool) *graph.Graph {
		g := graph.New(n)
		if directed {
			g = graph.NewDirected(n)
		}
		for u := 1; u < n; u++ {
			g.MustAddEdge(u-1, u)
		}
		return g
	}
	labelled := path(4, false)
	labelled.NodeLabels = []int{0, 2, 1, 0}
	if err := labelled.AddLabeledEdge(0, 3, 2); err != nil {
		t.Fatal(err)
	}
	d, err := Inspect([]*graph.Graph{labelled, func() *graph.Graph { g := path(6, false); g.NodeLabels = make([]int, 6); return g }()})
	if err != nil {
		t.Fatal(err)
	}
	if d.Graphs != 2 || d.MinNodes != 4 || d.MaxNodes != 6 || d.NodeClasses != 3 || d.EdgeClasses != 3 || d.Directed || d.MeanNodes != 5 || d.MeanEdges != 4.5 {
		t.Errorf("%+v", d)
	}
	for _, c := range []struct {
		name  string
		gs    []*graph.Graph
		index int
		want  string
	}{
		{"no graphs", nil, -1, "no graphs"},
		{"no nodes", []*graph.Graph{path(3, false), graph.New(0)}, 1, "no nodes"},
		{"mixed", []*graph.Graph{path(3, false), path(3, false), path(3, true)}, 2, "the graph is directed, the first is undirected"},
		{"labels on some", []*graph.Graph{labelled, path(3, false)}, 1, "either every graph has node labels or none"},
	} {
		_, err := Inspect(c.gs)
		var ge *GraphError
		switch {
		case err == nil || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case c.index >= 0 && (!errors.As(err, &ge) || ge.Index != c.index):
			t.Errorf("%s: %v names no graph %d", c.name, err, c.index)
		}
	}
}

// TestDetectValidity checks the rule lgflow train picks by default and
// the rules it refuses for the graphs.
func TestDetectValidity(t *testing.T) {
	tree := graph.New(4)
	tree.MustAddEdge(0, 1)
	tree.MustAddEdge(1, 2)
	tree.MustAddEdge(1, 3)
	cycle := tree.Clone()
	cycle.MustAddEdge(2, 3)
	k5 := graph.New(5)
	for u := range 5 {
		for v := u + 1; v < 5; v++ {
			k5.MustAddEdge(u, v)
		}
	}
	apart := graph.New(3)
	apart.MustAddEdge(0, 1)
	dag := graph.NewDirected(3)
	dag.MustAddEdge(0, 1)
	dag.MustAddEdge(0, 2)
	cyc := graph.NewDirected(2)
	cyc.MustAddEdge(0, 1)
	cyc.MustAddEdge(1, 0)
	for _, c := range []struct {
		gs   []*graph.Graph
		want string
	}{
		{[]*graph.Graph{tree}, "tree"},
		{[]*graph.Graph{tree, cycle}, "planar"},
		{[]*graph.Graph{tree, k5}, "connected"},
		{[]*graph.Graph{tree, apart}, "none"},
		{[]*graph.Graph{dag}, "dag"},
		{[]*graph.Graph{dag, cyc}, "none"},
	} {
		if got := DetectValidity(c.gs); got != c.want {
			t.Errorf("%d graphs: %s, want %s", len(c.gs), got, c.want)
		}
	}
	for _, c := range []struct {
		rule                string
		directed, molecules bool
		ok                  bool
	}{
		{"tree", false, false, true}, {"tree", true, false, false}, {"planar", true, false, false}, {"dag", false, false, false},
		{"dag", true, false, true}, {"connected", true, false, true}, {"molecule", false, false, false}, {"molecule", false, true, true},
	} {
		if err := CheckRule(c.rule, c.directed, c.molecules); (err == nil) != c.ok {
			t.Errorf("%s, directed %v, molecules %v: %v", c.rule, c.directed, c.molecules, err)
		}
	}
}

// TestBetterAndFront checks how measured points compare: V.U.N. first,
// then the MMDs' geometric mean; and the trade-off front.
func TestBetterAndFront(t *testing.T) {
	f := func(vun float64, mmd ...float64) Figures {
		return Figures{VUN: vun, MMD: map[string]float64{"degree": mmd[0], "orbit": mmd[1]}}
	}
	for _, c := range []struct {
		a, b Figures
		want bool
	}{
		{f(0.9, 1, 1), f(0.8, 0.1, 0.1), true},
		{f(0.902, 1, 1), f(0.9, 0.5, 1), false}, // within half a point: the MMDs
		{f(0.9, 0.5, 1), f(0.902, 1, 1), true},
		{f(0.9, 4, 0.25), f(0.9, 1, 1), false}, // the same geometric mean
	} {
		if got := Better(c.a, c.b); got != c.want {
			t.Errorf("Better(%v, %v) = %v", c.a, c.b, got)
		}
	}
	ps := []*TunePoint{{Figures: f(0.9, 1, 1)}, {Figures: f(0.95, 2, 2)}, {Figures: f(0.8, 2, 2)}, {Figures: f(0.9, 0.5, 3)}}
	fr := front(ps)
	if len(fr) != 3 || fr[0].Figures.VUN != 0.95 {
		t.Errorf("front %v, want the points but the third, by V.U.N.", fr)
	}
	if shiftFor(70) != 1.43 || shiftFor(50) != 2 || shiftFor(100) != 0 {
		t.Errorf("time shifts %g %g %g", shiftFor(70), shiftFor(50), shiftFor(100))
	}
	if _, err := ValidityTest("chordal", nil); err == nil {
		t.Error("an unknown rule accepted")
	}
	for _, rule := range ValidityRules {
		// A model card takes every rule, and only these.
		r := &flow.Recipe{Format: flow.RecipeFormat, Card: flow.Card{Validity: rule}}
		if rule == "molecule" {
			r.Card.Molecules = "moses"
		}
		if err := r.Validate(); err != nil {
			t.Errorf("a card with validity %s: %v", rule, err)
		}
		if rule == "molecule" {
			continue
		}
		if _, err := ValidityTest(rule, nil); err != nil {
			t.Errorf("%s: %v", rule, err)
		}
	}
	r := &flow.Recipe{Format: flow.RecipeFormat, Card: flow.Card{Validity: "chordal"}}
	if err := r.Validate(); err == nil {
		t.Error("a card with an unknown validity rule accepted")
	}
}
