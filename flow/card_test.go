package flow_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lgflow/flow"
)

// TestCardValidation checks the card's keys for lgflow train's bundles:
// the validity rule, the output format, the molecule encoding and the
// data's facts, each refused by its key when out of range.
func TestCardValidation(t *testing.T) {
	ok := flow.Card{Validity: "planar", Output: "g6", Data: &flow.Data{File: "train.g6", Format: "g6", Train: 9, Val: 1,
		Nodes: [2]int{4, 8}, EdgeClasses: 1, TrainGraphs: "train.g6.gz", ValGraphs: "val.g6.gz"}}
	for _, c := range []struct {
		name string
		edit func(c *flow.Card)
		want string
	}{
		{"valid", func(*flow.Card) {}, ""},
		{"molecules", func(c *flow.Card) { c.Validity, c.Output, c.Molecules = "molecule", "smiles", "moses" }, ""},
		{"unknown rule", func(c *flow.Card) { c.Validity = "chordal" }, `card.validity: "chordal" is not one of`},
		{"unknown output", func(c *flow.Card) { c.Output = "gml" }, `card.output: "gml" is not one of g6, nodelink, smiles`},
		{"unknown encoding", func(c *flow.Card) { c.Molecules = "zinc" }, `card.molecules: "zinc"`},
		{"SMILES without encoding", func(c *flow.Card) { c.Output = "smiles" }, "card.molecules: a model of molecules"},
		{"graphs outside the bundle", func(c *flow.Card) { c.Data.ValGraphs = "../val.g6" }, `card.data.val_graphs: "../val.g6" is not a file name in the bundle`},
		{"node range", func(c *flow.Card) { c.Data.Nodes = [2]int{8, 4} }, "card.data.nodes"},
		{"negative counts", func(c *flow.Card) { c.Data.Train = -1 }, "card.data: negative counts"},
	} {
		card := ok
		d := *ok.Data
		card.Data = &d
		c.edit(&card)
		r := &flow.Recipe{Format: flow.RecipeFormat, Card: card}
		err := r.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	r, err := parseRecipe(t, (`{"format": "lgflow-sampler/1", "card": {"validity": "tree", "data": {"file": "t.g6", "format": "g6", "train": 3, "val": 1, "nodes": [2, 5], "budget": "20m"}}}`))
	if err != nil || r.Card.Validity != "tree" || r.Card.Data.Budget != "20m" || r.Card.Data.Nodes != [2]int{2, 5} {
		t.Errorf("parsed %+v, %v", r, err)
	}
	if _, err := parseRecipe(t, (`{"format": "lgflow-sampler/1", "card": {"data": {"fiel": "t.g6"}}}`)); err == nil || !strings.Contains(err.Error(), `unknown key "fiel"`) {
		t.Errorf("an unknown key of the data: %v", err)
	}
}

// parseRecipe reads the sampler.json text through a file, as
// flow.LoadRecipe reads a bundle's.
func parseRecipe(t *testing.T, text string) (*flow.Recipe, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), flow.RecipeFile)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return flow.LoadRecipe(path)
}
