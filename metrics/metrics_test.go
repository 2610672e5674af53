package metrics

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lgflow/graph"
	"lgflow/spectral"
)

func build(t testing.TB, ls []edgeList, directed bool) []*graph.Graph {
	t.Helper()
	gs := make([]*graph.Graph, len(ls))
	for i, l := range ls {
		g := graph.New(l.n)
		if directed {
			g = graph.NewDirected(l.n)
		}
		for _, e := range l.edges {
			g.MustAddEdge(e[0], e[1])
		}
		gs[i] = g
	}
	return gs
}

func relClose(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*max(math.Abs(want), 1e-300)
}

func TestMatchesPythonReferenceUndirected(t *testing.T) {
	ref := build(t, refUndirected, false)
	gen := build(t, genUndirected, false)
	rep, err := Evaluate(context.Background(), gen, ref, nil, Options{Kind: Generic})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  *float64
		key  string
	}{
		{"degree", rep.Degree, "degree"},
		{"clustering", rep.Clustering, "clustering"},
		{"orbit", rep.Orbit, "orbit"},
		// gen[2] is bipartite; numpy put its eigenvalue 2 at
		// 2.0000000000000004 and dropped it, lgflow counts it.
		{"spectral", rep.Spectral, "spectral_snapped"},
	} {
		if c.got == nil || !relClose(*c.got, pythonRef[c.key], 1e-11) {
			t.Errorf("%s: got %v, reference %.17g", c.name, deref(c.got), pythonRef[c.key])
		}
	}
	if got := OrbitVector(gen[0]); !closeSlices(got, pythonOrbitGen0, 1e-15) {
		t.Errorf("orbit vector %v, want %v", got, pythonOrbitGen0)
	}
	if got := ClusteringHistogram(gen[1]); !slices.Equal(got, pythonClustHistGen1) {
		t.Errorf("clustering histogram %v, want %v", got, pythonClustHistGen1)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func closeSlices(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol*max(1, math.Abs(b[i])) {
			return false
		}
	}
	return true
}

func TestMatchesPythonReferenceDAG(t *testing.T) {
	ref := build(t, refDAG, true)
	gen := build(t, genDAG, true)
	for _, compat := range []bool{false, true} {
		rep, err := Evaluate(context.Background(), gen, ref, nil, Options{Kind: DAG, DirectoCompat: compat})
		if err != nil {
			t.Fatal(err)
		}
		outKey, inKey := "dag_out_degree", "dag_in_degree"
		if compat {
			outKey, inKey = "dag_out_degree_compat", "dag_in_degree_compat"
		}
		for _, c := range []struct {
			name string
			got  *float64
			key  string
		}{
			{"out_degree", rep.OutDegree, outKey},
			{"in_degree", rep.InDegree, inKey},
			{"clustering", rep.Clustering, "dag_clustering"},
			{"spectral", rep.Spectral, "dag_spectral"},
			{"wavelet", rep.Wavelet, "dag_wavelet"},
		} {
			if c.got == nil || !relClose(*c.got, pythonRef[c.key], 1e-10) {
				t.Errorf("compat=%v %s: got %v, reference %.17g", compat, c.name, deref(c.got), pythonRef[c.key])
			}
		}
		if rep.Degree != nil || rep.Orbit != nil {
			t.Errorf("DAG report has undirected metrics: %+v", rep)
		}
	}
	// The PageRank Laplacian itself, entry by entry.
	l, err := spectral.PageRankLaplacian(gen[0], spectral.DefaultAlpha)
	if err != nil {
		t.Fatal(err)
	}
	if !closeSlices(l, pythonPageRankLDAGGen0, 1e-13) {
		t.Errorf("PageRank Laplacian differs from networkx:\n%v\n%v", l, pythonPageRankLDAGGen0)
	}
	// The wavelet histogram of one graph, bin by bin.
	w, err := WaveletHistogram(gen[1])
	if err != nil {
		t.Fatal(err)
	}
	var nz [][2]int
	for i, c := range w {
		if c != 0 {
			nz = append(nz, [2]int{i, int(c)})
		}
	}
	if !slices.Equal(nz, pythonWaveletGen1) {
		t.Errorf("wavelet histogram nonzeros %v, want %v", nz, pythonWaveletGen1)
	}
}

func TestDirectoCompatSwapsInAndOut(t *testing.T) {
	// Out-stars: node 0 -> all. Their out-degree sequences are (k, 0, ...),
	// in-degree sequences (0, 1, 1, ...).
	star := func(k int, reverse bool) *graph.Graph {
		g := graph.NewDirected(k + 1)
		for i := 1; i <= k; i++ {
			if reverse {
				g.MustAddEdge(i, 0)
			} else {
				g.MustAddEdge(0, i)
			}
		}
		return g
	}
	ref := []*graph.Graph{star(3, false), star(4, false), star(5, false)}
	gen := []*graph.Graph{star(3, true), star(6, false)}
	ctx := context.Background()
	plain, err := Evaluate(ctx, gen, ref, nil, Options{Kind: DAG})
	if err != nil {
		t.Fatal(err)
	}
	compat, err := Evaluate(ctx, gen, ref, nil, Options{Kind: DAG, DirectoCompat: true})
	if err != nil {
		t.Fatal(err)
	}
	seqMMD := func(f func(*graph.Graph) []float64) float64 {
		var x, y [][]float64
		for _, g := range ref {
			x = append(x, f(g))
		}
		for _, g := range gen {
			y = append(y, f(g))
		}
		v, err := MMD(x, y, GaussianTV(1), true)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	histMMD := func(f func(*graph.Graph) []float64) float64 { return seqMMD(f) }
	if want := seqMMD(InDegreeSequence); *compat.OutDegree != want {
		t.Errorf("compat out-degree %v, want the in-degree-sequence MMD %v", *compat.OutDegree, want)
	}
	if want := seqMMD(OutDegreeSequence); *compat.InDegree != want {
		t.Errorf("compat in-degree %v, want the out-degree-sequence MMD %v", *compat.InDegree, want)
	}
	if want := histMMD(OutDegreeHistogram); *plain.OutDegree != want {
		t.Errorf("out-degree %v, want the out-degree-histogram MMD %v", *plain.OutDegree, want)
	}
	if *plain.OutDegree == *compat.OutDegree {
		t.Error("DirectoCompat did not change the out-degree MMD")
	}
}

func TestMMDBasics(t *testing.T) {
	x := [][]float64{{1, 2, 3}, {0, 4}, {5}}
	y := [][]float64{{2, 2}, {1, 0, 0, 1}}
	k := GaussianTV(1)
	if v, _ := MMD(x, x, k, true); math.Abs(v) > 1e-15 {
		t.Errorf("MMD(X, X) = %g, want 0", v)
	}
	a, _ := MMD(x, y, k, true)
	b, _ := MMD(y, x, k, true)
	if math.Abs(a-b) > 1e-15 || a <= 0 {
		t.Errorf("MMD(X,Y) = %g, MMD(Y,X) = %g: want equal and positive", a, b)
	}
	// By hand: X = {[1, 0]}, Y = {[0, 1]}: after normalisation the pmfs
	// are [c, 0] and [0, c] with c = 1/(1+1e-6), TV = c, so
	// MMD² = 1 + 1 - 2 exp(-c²/2).
	c := 1 / (1 + 1e-6)
	v, _ := MMD([][]float64{{1, 0}}, [][]float64{{0, 1}}, k, true)
	if want := 2 - 2*math.Exp(-c*c/2); math.Abs(v-want) > 1e-15 {
		t.Errorf("MMD = %.17g, want %.17g", v, want)
	}
	// By hand, not normalised, padded: X = {[3]}, Y = {[1], [0, 2]} with
	// σ = 2: TV(x,y1) = 1, TV(x,y2) = 2.5, TV(y1,y2) = 1.5.
	k2 := GaussianTV(2)
	e := func(d float64) float64 { return math.Exp(-d * d / 8) }
	want := 1 + (2+2*e(1.5))/4 - 2*(e(1)+e(2.5))/2
	v, _ = MMD([][]float64{{3}}, [][]float64{{1}, {0, 2}}, k2, false)
	if math.Abs(v-want) > 1e-15 {
		t.Errorf("MMD = %.17g, want %.17g", v, want)
	}
	if _, err := MMD(nil, y, k, true); err == nil {
		t.Error("empty set accepted")
	}
	// EMD: moving all mass by one bin costs 1/scaling.
	if d := EMD1D([]float64{1, 0, 0}, []float64{0, 1, 0}, 1); math.Abs(d-1) > 1e-15 {
		t.Errorf("EMD = %g, want 1", d)
	}
	if d := EMD1D([]float64{0.5, 0, 0.5}, []float64{0, 1, 0}, 10); math.Abs(d-0.1) > 1e-15 {
		t.Errorf("EMD = %g, want 0.1", d)
	}
	if v := GaussianL2(1)([]float64{0, 0}, []float64{3, 4}); math.Abs(v-math.Exp(-12.5)) > 1e-18 {
		t.Errorf("GaussianL2 = %g", v)
	}
}

func TestHistogramNumpySemantics(t *testing.T) {
	h := Histogram([]float64{0, 0.5, 1.0, 0.25, 0.999999, 1.0000001, -1e-300, math.NaN()}, 4, 0, 1)
	if want := []float64{1, 1, 1, 2}; !slices.Equal(h, want) {
		t.Errorf("got %v, want %v", h, want)
	}
	// numpy.histogram of [i/100 for i in 0..100] + [1/3, 2/3, 1/6, 5/6,
	// 0.1+0.2, 0.7, 0.57, 0.58, 0.29] with 100 bins on [0, 1]: i/100 lands
	// in bin i-1 where linspace's edge i rounds above i/100 (i = 35, 41,
	// 47, 57, 69, 70, 82, 83, 94, 95).
	want := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 2, 2, 0, 1, 1, 1, 1, 2, 0, 1, 1, 1, 1, 2, 0, 1, 1, 1, 1, 1, 1, 1, 1, 3, 0, 2, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2, 2, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2}
	v := make([]float64, 0, 110)
	for i := 0; i <= 100; i++ {
		v = append(v, float64(i)/100)
	}
	v = append(v, 1.0/3, 2.0/3, 1.0/6, 5.0/6, 0.1+0.2, 0.7, 0.57, 0.58, 0.29)
	if got := Histogram(v, 100, 0, 1); !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if e := BinEdges(100, 0, 1); e[35] != 0.35000000000000003 || e[100] != 1 {
		t.Errorf("edges[35] = %.17g, edges[100] = %g", e[35], e[100])
	}
}

func TestStatisticsOfKnownGraphs(t *testing.T) {
	tri := graph.New(3)
	tri.MustAddEdge(0, 1)
	tri.MustAddEdge(1, 2)
	tri.MustAddEdge(0, 2)
	star := graph.New(5)
	for i := 1; i < 5; i++ {
		star.MustAddEdge(0, i)
	}
	if h := ClusteringHistogram(tri); h[99] != 3 || sum(h) != 3 {
		t.Errorf("triangle clustering histogram: bin 99 = %v, total %v", h[99], sum(h))
	}
	if h := ClusteringHistogram(star); h[0] != 5 || sum(h) != 5 {
		t.Errorf("star clustering histogram: bin 0 = %v, total %v", h[0], sum(h))
	}
	if h := DegreeHistogram(star); !slices.Equal(h, []float64{0, 4, 0, 0, 1}) {
		t.Errorf("star degree histogram %v", h)
	}
	if h := DegreeHistogram(graph.New(0)); len(h) != 0 {
		t.Errorf("empty degree histogram %v", h)
	}
	// Triangle orbits: 3 nodes each in 2 edges (orbit 0) and 1 triangle
	// (orbit 3): per-node means 2 and 1.
	if o := OrbitVector(tri); o[0] != 2 || o[3] != 1 || sum(o) != 3 {
		t.Errorf("triangle orbit vector %v", o)
	}
	// Cycle C8: normalised-Laplacian eigenvalues 1 - cos(2πj/8) =
	// 0, 1-√½ (×2), 1 (×2), 1+√½ (×2), 2; bins of width 2.00001/200.
	c8 := graph.New(8)
	for i := 0; i < 8; i++ {
		c8.MustAddEdge(i, (i+1)%8)
	}
	h, err := SpectralHistogram(c8)
	if err != nil {
		t.Fatal(err)
	}
	edges := BinEdges(200, -1e-5, 2)
	bin := func(x float64) int {
		for i := 0; i < 200; i++ {
			if x < edges[i+1] {
				return i
			}
		}
		return 199
	}
	want := make([]float64, 200)
	for _, x := range []float64{0, 1 - math.Sqrt(0.5), 1 - math.Sqrt(0.5), 1, 1, 1 + math.Sqrt(0.5), 1 + math.Sqrt(0.5), 2} {
		want[bin(x)] += 1.0 / 8
	}
	if !slices.Equal(h, want) {
		t.Errorf("C8 spectral pmf differs: %v", h)
	}
	// K5: eigenvalues 0 and 5/4 (×4).
	k5 := graph.New(5)
	for i := 0; i < 5; i++ {
		for j := i + 1; j < 5; j++ {
			k5.MustAddEdge(i, j)
		}
	}
	h, _ = SpectralHistogram(k5)
	if h[bin(0)] != 0.2 || h[bin(1.25)] != 0.8 {
		t.Errorf("K5 spectral pmf: %v at 0, %v at 1.25", h[bin(0)], h[bin(1.25)])
	}
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func TestAbspline(t *testing.T) {
	if !relClose(AbsplineGamma, pythonRef["gamma_l"], 1e-9) {
		t.Errorf("γ = %.17g, PyGSP %.17g", AbsplineGamma, pythonRef["gamma_l"])
	}
	if s := AbsplineKernel(2 - 1/math.Sqrt(3)); math.Abs(s-AbsplineGamma) > 1e-14 {
		t.Errorf("spline max %.17g, want γ", s)
	}
	scales := AbsplineScales()
	if math.Abs(scales[0]-20) > 1e-13 || math.Abs(scales[10]-0.5) > 1e-15 {
		t.Errorf("scales %v", scales)
	}
	got := make([]float64, 12)
	for i, x := range pythonAbsplineAt {
		Abspline(got, x, scales)
		// γ differs from PyGSP's numerically found maximum by ~1e-10
		if !closeSlices(got, pythonAbsplineVals[i], 1e-9) {
			t.Errorf("Abspline(%g) = %v\nPyGSP %v", x, got, pythonAbsplineVals[i])
		}
	}
	// spline pieces at chosen points
	for _, c := range [][2]float64{{0.5, 0.25}, {1, 1}, {1.5, -5 + 16.5 - 13.5 + 3.375}, {2, 1}, {4, 0.25}} {
		if v := AbsplineKernel(c[0]); math.Abs(v-c[1]) > 1e-15 {
			t.Errorf("s(%g) = %g, want %g", c[0], v, c[1])
		}
	}
}

// relabel returns g with its nodes renamed by a seeded random
// permutation, checking that the edge set really changed (so that only an
// isomorphism test can see through it).
func relabel(t testing.TB, g *graph.Graph, seed uint64) *graph.Graph {
	t.Helper()
	perm := rand.New(rand.NewPCG(seed, 99)).Perm(g.N())
	h, err := g.Permute(perm)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(h.Edges(), g.Edges()) {
		t.Fatalf("relabelling with seed %d left the edges unchanged", seed)
	}
	return h
}

func TestVUNPlanted(t *testing.T) {
	cycle := func(n int) *graph.Graph {
		g := graph.New(n)
		for i := 0; i < n; i++ {
			g.MustAddEdge(i, (i+1)%n)
		}
		return g
	}
	path := func(n int) *graph.Graph {
		g := graph.New(n)
		for i := 0; i+1 < n; i++ {
			g.MustAddEdge(i, i+1)
		}
		return g
	}
	k5 := graph.New(6) // K5 plus a pendant node: connected, not planar
	for i := 0; i < 5; i++ {
		for j := i + 1; j < 5; j++ {
			k5.MustAddEdge(i, j)
		}
	}
	k5.MustAddEdge(4, 5)
	disconnected := graph.New(6)
	disconnected.MustAddEdge(0, 1)
	wheel := cycle(6)
	wheel2 := graph.New(7)
	for _, e := range wheel.Edges() {
		wheel2.MustAddEdge(e.From, e.To)
	}
	for i := 0; i < 6; i++ {
		wheel2.MustAddEdge(6, i)
	}
	train := []*graph.Graph{cycle(9), path(11), wheel2}
	gen := []*graph.Graph{
		cycle(10),                // unique, novel, valid
		relabel(t, cycle(10), 3), // duplicate of 0
		relabel(t, cycle(9), 2),  // in train (relabelled)
		k5,                       // unique, novel, invalid
		disconnected,             // unique, novel, invalid
		relabel(t, wheel2, 5),    // in train
		relabel(t, k5, 1),        // duplicate of k5
		path(12),                 // unique, novel, valid
		graph.New(0),             // empty: counted in nothing
		relabel(t, path(12), 4),  // duplicate
	}
	r, err := VUN(context.Background(), gen, train, IsValidPlanar, VUNOptions{})
	if err != nil {
		t.Fatal(err)
	}
	N := 10.0
	want := VUNResult{
		Valid:       6 / N,           // cycle10 ×2, cycle9, wheel, path12 ×2
		Unique:      (N - 3) / N,     // 3 duplicates
		Novel:       1 - 2/N,         // cycle9 and the wheel are in train
		UniqueNovel: (N - 3 - 2) / N, // minus the 2 unique-but-in-train
		VUN:         2 / N,           // cycle10, path12
	}
	if r != want {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
	// Without training graphs novelty is unknown.
	r, _ = VUN(context.Background(), gen, nil, IsValidPlanar, VUNOptions{})
	if !math.IsNaN(r.Novel) || r.VUN != 4/N {
		t.Errorf("no train: %+v", r)
	}
}

func TestReportJSONAndTable(t *testing.T) {
	ref := build(t, refUndirected, false)
	gen := build(t, genUndirected, false)
	rep, err := Evaluate(context.Background(), gen, ref, ref[:3], Options{Kind: Planar})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"degree", "clustering", "orbit", "spectral", "valid", "unique", "novel", "vun"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	for _, k := range []string{"wavelet", "ratio", "out_degree"} {
		if _, ok := m[k]; ok {
			t.Errorf("JSON has %q: %s", k, b)
		}
	}
	if m["kind"] != "planar" || m["degree"].(float64) != *rep.Degree {
		t.Errorf("JSON %s", b)
	}
	s := rep.String()
	if !strings.Contains(s, "Deg.") || !strings.Contains(s, "V.U.N. %") || strings.Contains(s, "Wave.") {
		t.Errorf("table:\n%s", s)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Kind != Planar || *back.Orbit != *rep.Orbit {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestEgoRatio(t *testing.T) {
	ref := build(t, refUndirected, false)
	gen := build(t, genUndirected, false)
	train := ref[2:]
	rep, err := Evaluate(context.Background(), gen, ref, train, Options{Kind: Ego})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Evaluate(context.Background(), train, ref, nil, Options{Kind: Generic})
	if err != nil {
		t.Fatal(err)
	}
	want := (*rep.Degree / *tr.Degree + *rep.Clustering / *tr.Clustering + *rep.Orbit / *tr.Orbit + *rep.Spectral / *tr.Spectral) / 4
	if rep.Ratio == nil || !relClose(*rep.Ratio, want, 1e-12) {
		t.Errorf("ratio %v, want %v", deref(rep.Ratio), want)
	}
	if rep.VUN != nil || rep.Unique != nil {
		t.Errorf("Ego report has V.U.N. fields")
	}
}

func TestEvaluateErrors(t *testing.T) {
	d := graph.NewDirected(3)
	u := graph.New(3)
	ctx := context.Background()
	if _, err := Evaluate(ctx, []*graph.Graph{d}, []*graph.Graph{u}, nil, Options{Kind: Planar}); err == nil || !strings.Contains(err.Error(), "generated graph 0 is directed") {
		t.Errorf("directed graph for planar: %v", err)
	}
	if _, err := Evaluate(ctx, nil, []*graph.Graph{u}, nil, Options{}); err == nil {
		t.Error("no generated graphs accepted")
	}
	if _, err := ParseKind("forest"); err == nil {
		t.Error("unknown kind accepted")
	}
	if k, err := ParseKind("DAG"); err != nil || k != DAG {
		t.Errorf("ParseKind(DAG) = %v, %v", k, err)
	}
}

func TestEvaluateEMDOption(t *testing.T) {
	ref := build(t, refUndirected, false)
	gen := build(t, genUndirected, false)
	ctx := context.Background()
	tv, err := Evaluate(ctx, gen, ref, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	emd, err := Evaluate(ctx, gen, ref, nil, Options{EMD: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][2]*float64{"degree": {tv.Degree, emd.Degree}, "clustering": {tv.Clustering, emd.Clustering},
		"orbit": {tv.Orbit, emd.Orbit}, "spectral": {tv.Spectral, emd.Spectral}} {
		if !(*p[1] > 0) || math.IsInf(*p[1], 0) || *p[0] == *p[1] {
			t.Errorf("%s: EMD-kernel MMD %v (TV %v)", name, *p[1], *p[0])
		}
	}
	// The EMD option's orbit kernel is the L2 Gaussian of GRAN.
	var x, y [][]float64
	for _, g := range ref {
		x = append(x, OrbitVector(g))
	}
	for _, g := range gen {
		y = append(y, OrbitVector(g))
	}
	want, _ := MMD(x, y, GaussianL2(SigmaOrbit), false)
	if *emd.Orbit != want {
		t.Errorf("orbit with EMD option %v, want %v", *emd.Orbit, want)
	}
}

// TestEvaluateProgressSerialised: Evaluate's workers finish graphs on
// several goroutines, but Progress calls must never overlap (a caller may
// keep a map of progress bars, as pipeline does), and the statistics
// stage must count every graph once.
func TestEvaluateProgressSerialised(t *testing.T) {
	ref := build(t, refUndirected, false)
	gen := build(t, genUndirected, false)
	var inside, overlaps, last int
	var mu sync.Mutex // guards only the test's own bookkeeping
	calls := map[string]int{}
	_, err := Evaluate(context.Background(), gen, ref, nil, Options{Workers: 4, Progress: func(stage string, done, total int) {
		mu.Lock()
		inside++
		if inside > 1 {
			overlaps++
		}
		mu.Unlock()
		calls[stage]++ // unguarded on purpose: overlapping calls are a data race
		if stage == "statistics" {
			last = done
		}
		time.Sleep(100 * time.Microsecond)
		mu.Lock()
		inside--
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if overlaps > 0 {
		t.Errorf("%d Progress calls overlapped", overlaps)
	}
	if n := len(gen) + len(ref); calls["statistics"] != n || last != n {
		t.Errorf("statistics progress: %d calls ending at %d, want %d", calls["statistics"], last, n)
	}
}
