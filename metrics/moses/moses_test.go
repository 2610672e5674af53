package moses

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lgflow/graph/mol"
)

// dataDir locates shared/data ($LGFLOW_DATA, else ../shared/data beside
// the module root) or skips the test.
func dataDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("LGFLOW_DATA"); d != "" {
		if _, err := os.Stat(d); err == nil {
			return d
		}
		t.Skipf("LGFLOW_DATA=%s not found", d)
	}
	wd, _ := os.Getwd()
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "data")
			if _, err := os.Stat(d); err != nil {
				t.Skipf("shared data not found at %s", d)
			}
			return d
		}
		if filepath.Dir(dir) == dir {
			t.Skip("go.mod not found")
		}
	}
}

// testdata/rdkit_filters.tsv: SMILES and the outcome of MOSES's
// mol_passes_filters run with RDKit 2022.09 ("pass", or why not).
func TestFiltersMatchRDKit(t *testing.T) {
	f, err := LoadFilters(filepath.Join(dataDir(t), "moses"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Alerts) != 502 {
		t.Errorf("%d alerts, want 22 MCF + 480 PAINS", len(f.Alerts))
	}
	fh, err := os.Open("testdata/rdkit_filters.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		r := strings.Split(sc.Text(), "\t")
		m, err := mol.ParseSMILES(r[0])
		if err != nil {
			t.Fatal(err)
		}
		ok, why := f.Check(m)
		if ok != (r[1] == "pass") {
			t.Errorf("%s: ours %v (%s), RDKit %s", r[0], ok, why, r[1])
		}
		n++
	}
	if n < 100 {
		t.Fatalf("only %d rows", n)
	}
}

func TestUniqueNovelty(t *testing.T) {
	canon := []string{"CCO", "CCO", "c1ccccc1", "CCN"}
	if got := UniqueAt(canon, 0); got != 0.75 {
		t.Errorf("unique = %v, want 0.75", got)
	}
	if got := UniqueAt(canon, 2); got != 0.5 {
		t.Errorf("unique@2 = %v, want 0.5", got)
	}
	train := map[string]struct{}{"CCO": {}}
	if got := Novelty(canon, train); math.Abs(got-2.0/3) > 1e-12 {
		t.Errorf("novelty = %v, want 2/3", got)
	}
	if !math.IsNaN(UniqueAt(nil, 10)) {
		t.Error("unique of nothing should be NaN")
	}
}

func TestCosineSimilarity(t *testing.T) {
	a := map[string]int{"x": 1, "y": 2}
	b := map[string]int{"y": 2, "z": 1}
	// (0,2 overlap): dot = 4, |a| = sqrt 5, |b| = sqrt 5
	if got := CosineSimilarity(a, b); math.Abs(got-0.8) > 1e-12 {
		t.Errorf("cos = %v, want 0.8", got)
	}
}

func TestSNN(t *testing.T) {
	ctx := context.Background()
	mk := func(bits ...int) mol.Fingerprint {
		f := mol.NewFingerprint(64)
		for _, b := range bits {
			f.Set(b)
		}
		return f
	}
	gen := []mol.Fingerprint{mk(1, 2, 3), mk(10, 11)}
	ref := []mol.Fingerprint{mk(1, 2), mk(10, 11, 12, 13)}
	// gen0: max(2/3, 0) ; gen1: max(0, 2/4)
	got, err := SNN(ctx, gen, ref, nil)
	if err != nil || math.Abs(got-(2.0/3+0.5)/2) > 1e-12 {
		t.Errorf("SNN = %v (%v), want %v", got, err, (2.0/3+0.5)/2)
	}
}

func TestFrechetDistance(t *testing.T) {
	// 1-D: (mu1-mu2)^2 + s1 + s2 - 2 sqrt(s1 s2)
	a := [][]float64{{0}, {2}}      // mean 1, var 2
	b := [][]float64{{3}, {5}, {4}} // mean 4, var 1
	want := 9 + 2 + 1 - 2*math.Sqrt(2)
	got, err := FrechetDistance(a, b)
	if err != nil || math.Abs(got-want) > 1e-9 {
		t.Errorf("FD = %v (%v), want %v", got, err, want)
	}
	// identical sets: 0
	c := [][]float64{{1, 2}, {3, 1}, {0, 0}, {2, 5}}
	if got, _ := FrechetDistance(c, c); math.Abs(got) > 1e-9 {
		t.Errorf("FD of a set with itself = %v", got)
	}
	if _, err := FrechetDistance(c[:1], c); err == nil {
		t.Error("want an error for one vector")
	}
}

type countEmbedder struct{}

// Embed maps a SMILES to (length, number of ring-closure digits).
func (countEmbedder) Embed(_ context.Context, s []string) ([][]float64, error) {
	out := make([][]float64, len(s))
	for i, x := range s {
		out[i] = []float64{float64(len(x)), float64(strings.Count(x, "1"))}
	}
	return out, nil
}

func TestFCDWithEmbedder(t *testing.T) {
	gen := []string{"CCO", "c1ccccc1", "CCN"}
	d, err := FCD(context.Background(), countEmbedder{}, gen, gen)
	// Not exactly 0: the ring-digit counts are nearly collinear with the
	// lengths, and square roots of near-zero eigenvalues amplify rounding.
	if err != nil || d < 0 || d > 1e-6 {
		t.Errorf("FCD of a set with itself = %v (%v)", d, err)
	}
}

func TestEvaluate(t *testing.T) {
	gen := []string{"CCO", "OCC", "c1ccccc1", "C1CC", "", "None", "c1ccncc1"}
	r, err := Evaluate(context.Background(), gen, Options{Train: []string{"CCO"}, Ref: []string{"c1ccccc1C", "CCCO"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 7 || r.NValid != 4 || math.Abs(r.Valid-4.0/7) > 1e-12 {
		t.Errorf("valid: %+v", r)
	}
	if r.Unique[0] != 0.75 || math.Abs(r.Novelty-2.0/3) > 1e-12 {
		t.Errorf("unique %v novelty %v", r.Unique, r.Novelty)
	}
	if !(r.SNN > 0 && r.SNN <= 1) {
		t.Errorf("SNN %v", r.SNN)
	}
	// no reference scaffold has 2 rings: Scaf is undefined
	if !math.IsNaN(r.Scaf) {
		t.Errorf("Scaf %v, want NaN", r.Scaf)
	}
}

func ExampleUniqueAt() {
	p, _ := Parse(context.Background(), []string{"CCO", "OCC", "c1ccccc1", "C1CC"}, nil)
	_, canon := p.Valid()
	fmt.Printf("valid %.2f unique %.2f\n", p.Validity(), UniqueAt(canon, 0))
	// Output: valid 0.75 unique 0.67
}
