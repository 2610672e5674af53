package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/graph/mol"
	"lgflow/tensor"
)

// conditionalModel returns an untrained tiny flow in the latent space of
// the shipped planar LG-VAE (whose decoder tells latents apart),
// conditioned on a label (planar or tree) and the edge count (trained on
// [100, 180]), its condition paths drawn at random so that conditions
// change the graphs.
func conditionalModel(t *testing.T) *model {
	t.Helper()
	planar, _ := testModels(t)
	ae := planar.flow.VAE
	s := &cond.Schema{Labels: []string{"planar", "tree"}, Properties: []cond.Property{{Name: "edges", Mean: 140, Std: 20, Min: 100, Max: 180}}}
	cfg, err := flow.Preset("", "tiny", ae.Cfg.Latent)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.ForCondition(s)
	net, err := dit.New(cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	r := tensor.NewRNG(3)
	for _, p := range net.Params() {
		if strings.HasPrefix(p.Name, "y_embed.") || strings.HasPrefix(p.Name, "cond_") {
			tensor.FillNormal(p.V.Value, r, 0, 2)
		}
	}
	counts := make([]int, 17)
	counts[12], counts[16] = 1, 1
	fm := &flow.Model{Cfg: cfg, VAE: ae, Net: net, Scale: 1, NodeCounts: counts, Cond: s}
	return newModel("cond", fm, mol.DefaultInferNH)
}

// TestCondition samples a conditional model under conditions given as
// strings and as objects, with and without guidance: the graphs are those
// of flow.Sample under the same condition; bad conditions, and any
// condition for an unconditional model, are 400s.
func TestCondition(t *testing.T) {
	planar, _ := testModels(t)
	cm := conditionalModel(t)
	s, err := newServer([]*model{cm, planar}, "cond", defaultLimits(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	const n, seed, steps = 3, 2, 3
	want := func(opts ...flow.SampleOption) []string {
		gs, err := flow.Sample(context.Background(), cm.flow, n, append([]flow.SampleOption{flow.WithSeed(seed), flow.WithSettings(func(s *flow.Sampler) { s.Steps = steps })}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return g6s(gs)
	}
	tree := flow.WithCondition(cond.Value{Label: "tree", Props: []float64{120}})
	for _, c := range []struct {
		name, condition string
		guidance        string
		echo            string // the response's condition
		want            []string
	}{
		{"none", ``, ``, "", want()},
		{"null", `, "condition": null`, ``, "", want()},
		{"a string", `, "condition": "label=tree,edges=120"`, ``, "label=tree,edges=120", want(tree)},
		{"prop= for the one property", `, "condition": "prop=120,label=tree"`, ``, "label=tree,edges=120", want(tree)},
		{"an object", `, "condition": {"label": "tree", "edges": 120}`, ``, "label=tree,edges=120", want(tree)},
		{"another label", `, "condition": {"label": "planar", "edges": 180}`, ``, "label=planar,edges=180",
			want(flow.WithCondition(cond.Value{Label: "planar", Props: []float64{180}}))},
		{"guidance", `, "condition": "label=tree,edges=120"`, `, "guidance": 2.5`, "label=tree,edges=120", want(tree, flow.WithGuidanceScale(2.5))},
		{"guidance 0", `, "condition": "label=tree,edges=120"`, `, "guidance": 0`, "label=tree,edges=120", want(tree, flow.WithGuidanceScale(0))},
	} {
		body := `{"n": 3, "seed": 2, "steps": 3, "format": "json"` + c.condition + c.guidance + `}`
		resp, b := post(t, context.Background(), ts.URL, body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d (%s)", c.name, resp.StatusCode, b)
			continue
		}
		var out struct {
			Condition string            `json:"condition"`
			Guidance  *float64          `json:"guidance"`
			Graphs    []json.RawMessage `json:"graphs"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []*graph.Graph
		for _, raw := range out.Graphs {
			g, err := graph.ReadNodeLink(strings.NewReader(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, g)
		}
		if out.Condition != c.echo || (c.guidance == "") != (out.Guidance == nil) {
			t.Errorf("%s: the response says condition %q, guidance %v", c.name, out.Condition, out.Guidance)
		}
		if !slices.Equal(g6s(got), c.want) {
			t.Errorf("%s: graphs %q, want %q", c.name, g6s(got), c.want)
		}
	}
	if slices.Equal(want(tree), want()) || slices.Equal(want(tree), want(tree, flow.WithGuidanceScale(2.5))) {
		t.Error("the condition or the guidance changed no graph: the checks above are vacuous")
	}

	for _, c := range []struct {
		name, body, err string
	}{
		{"unknown label", `{"condition": "label=grid,edges=120"}`, `condition: unknown label "grid" (the model's labels: planar, tree)`},
		{"out of range", `{"condition": {"label": "tree", "edges": 1000}}`, "condition: property edges = 1000 is outside the range the model was trained on, [100, 180]"},
		{"a part missing", `{"condition": "label=tree"}`, "condition: the condition has no properties"},
		{"not a number", `{"condition": {"label": "tree", "edges": "many"}}`, `edges="many" is not a number`},
		{"not key=value", `{"condition": "tree"}`, "is not key=value"},
		{"an unknown key", `{"condition": {"label": "tree", "nodes": 64}}`, `unknown key "nodes"`},
		{"a list", `{"condition": {"label": ["tree"], "edges": 120}}`, `"label" is ["tree"], neither a string`},
		{"a number", `{"condition": 5}`, "condition must be a string"},
		{"an empty object", `{"condition": {}}`, "an empty object"},
		{"a comma in a value", `{"condition": {"label": "tree,edges=1", "edges": 120}}`, "hold no ',' or '='"},
		{"negative guidance", `{"condition": "label=tree,edges=120", "guidance": -1}`, "guidance must be between 0 and 100"},
		{"huge guidance", `{"guidance": 1e9}`, "guidance must be between 0 and 100"},
		{"guidance as a string", `{"guidance": "2"}`, "invalid JSON"},
		{"a condition for an unconditional model", `{"model": "planar", "condition": "label=tree"}`, "condition: the model is unconditional"},
		{"guidance for an unconditional model", `{"model": "planar", "guidance": 2}`, `guidance: model "planar" was trained without conditions`},
	} {
		resp, b := post(t, context.Background(), ts.URL, c.body)
		var e struct{ Error string }
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error, c.err) {
			t.Errorf("%s: status %d, %s; want 400 with %q", c.name, resp.StatusCode, b, c.err)
		}
	}
	// Guidance 1 is every model's default, and fine for any.
	if resp, b := post(t, context.Background(), ts.URL, `{"model": "planar", "guidance": 1, "steps": 2}`); resp.StatusCode != http.StatusOK {
		t.Errorf("guidance 1 for an unconditional model: %d %s", resp.StatusCode, b)
	}

	// /healthz says what the conditional model conditions on.
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Conditions map[string]string }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if h.Conditions["cond"] != "label (planar, tree), edges (trained on [100, 180])" || len(h.Conditions) != 1 {
		t.Errorf("healthz conditions %v", h.Conditions)
	}
}

func g6s(gs []*graph.Graph) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = graph.FormatGraph6(g)
	}
	return out
}
