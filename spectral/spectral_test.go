package spectral

import (
	"context"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"lgflow/graph"
)

func path(n int) *graph.Graph {
	g := graph.New(n)
	for i := 0; i+1 < n; i++ {
		g.MustAddEdge(i, i+1)
	}
	return g
}

func cycle(n int) *graph.Graph {
	g := path(n)
	g.MustAddEdge(n-1, 0)
	return g
}

func complete(n int) *graph.Graph {
	g := graph.New(n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			g.MustAddEdge(i, j)
		}
	}
	return g
}

func star(n int) *graph.Graph {
	g := graph.New(n)
	for i := 1; i < n; i++ {
		g.MustAddEdge(0, i)
	}
	return g
}

func directedCycle(n int) *graph.Graph {
	g := graph.NewDirected(n)
	for i := 0; i < n; i++ {
		g.MustAddEdge(i, (i+1)%n)
	}
	return g
}

// union returns the disjoint union of gs (undirected).
func union(gs ...*graph.Graph) *graph.Graph {
	n := 0
	for _, g := range gs {
		n += g.N()
	}
	u := graph.New(n)
	off := 0
	for _, g := range gs {
		for _, e := range g.Edges() {
			u.MustAddEdge(e.From+off, e.To+off)
		}
		off += g.N()
	}
	return u
}

// geometric returns a random geometric graph: n points in the unit square,
// joined when closer than r.
func geometric(n int, r float64, seed uint64) *graph.Graph {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i], y[i] = rng.Float64(), rng.Float64()
	}
	g := graph.New(n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if math.Hypot(x[i]-x[j], y[i]-y[j]) < r {
				g.MustAddEdge(i, j)
			}
		}
	}
	return g
}

func grid(w, h int) *graph.Graph {
	g := graph.New(w * h)
	for i := 0; i < h; i++ {
		for j := 0; j < w; j++ {
			if j+1 < w {
				g.MustAddEdge(i*w+j, i*w+j+1)
			}
			if i+1 < h {
				g.MustAddEdge(i*w+j, (i+1)*w+j)
			}
		}
	}
	return g
}

func sorted(v []float64) []float64 {
	v = slices.Clone(v)
	sort.Float64s(v)
	return v
}

func assertClose(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*max(1, math.Abs(want[i])) {
			t.Fatalf("%s: value %d = %.15g, want %.15g\n got %v\nwant %v", name, i, got[i], want[i], got, want)
		}
	}
}

func TestKnownSpectra(t *testing.T) {
	cases := []struct {
		name string
		g    *graph.Graph
		kind Kind
		want func(n int) []float64
	}{
		{"path7", path(7), Combinatorial, func(n int) []float64 {
			v := make([]float64, n)
			for j := range v {
				v[j] = 2 - 2*math.Cos(math.Pi*float64(j)/float64(n))
			}
			return v
		}},
		{"cycle9", cycle(9), Combinatorial, func(n int) []float64 {
			v := make([]float64, n)
			for j := range v {
				v[j] = 2 - 2*math.Cos(2*math.Pi*float64(j)/float64(n))
			}
			return v
		}},
		{"complete6", complete(6), Combinatorial, func(n int) []float64 {
			return []float64{0, 6, 6, 6, 6, 6}
		}},
		{"star5", star(5), Combinatorial, func(n int) []float64 {
			return []float64{0, 1, 1, 1, 5}
		}},
		{"union K3+P2+K1", union(complete(3), path(2), graph.New(1)), Combinatorial, func(n int) []float64 {
			return []float64{0, 0, 0, 2, 3, 3}
		}},
		{"normalized cycle8", cycle(8), Normalized, func(n int) []float64 {
			v := make([]float64, n)
			for j := range v {
				v[j] = 1 - math.Cos(2*math.Pi*float64(j)/float64(n))
			}
			return v
		}},
		{"normalized complete5", complete(5), Normalized, func(n int) []float64 {
			return []float64{0, 1.25, 1.25, 1.25, 1.25}
		}},
		{"normalized star5", star(5), Normalized, func(n int) []float64 {
			return []float64{0, 1, 1, 1, 2}
		}},
		{"normalized with isolated node", union(path(2), graph.New(1)), Normalized, func(n int) []float64 {
			return []float64{0, 0, 2}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.g.N()
			want := sorted(c.want(n))
			e, err := Eigen(c.g, n, Options{Laplacian: c.kind})
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "eigenvalues", e.Values, want, 1e-12)
			checkEigenpairs(t, denseOf(c.g, c.kind), e, 1e-10)
		})
	}
}

func denseOf(g *graph.Graph, kind Kind) []float64 {
	switch kind {
	case Normalized:
		return NormalizedLaplacian(g)
	case PageRank:
		l, err := PageRankLaplacian(g, DefaultAlpha)
		if err != nil {
			panic(err)
		}
		return l
	}
	return Laplacian(g)
}

// checkEigenpairs checks L v = λ v, orthonormality and the sign convention
// for every unmasked slot of a real Eig.
func checkEigenpairs(t *testing.T, l []float64, e *Eig, tol float64) {
	t.Helper()
	n, k := e.N, e.K
	for j := 0; j < k; j++ {
		if !e.Mask[j] {
			continue
		}
		col := make([]float64, n)
		for i := range col {
			col[i] = e.Vectors[i*k+j]
		}
		for i := 0; i < n; i++ {
			s := 0.0
			for c := 0; c < n; c++ {
				s += l[i*n+c] * col[c]
			}
			if math.Abs(s-e.Values[j]*col[i]) > tol*max(1, e.Values[j]) {
				t.Fatalf("slot %d: (Lv - λv)_%d = %g", j, i, s-e.Values[j]*col[i])
			}
		}
		big, at := 0.0, -1
		for i, x := range col {
			if math.Abs(x) > big*(1+1e-9) {
				big, at = math.Abs(x), i
			}
		}
		if col[at] < 0 {
			t.Fatalf("slot %d: largest entry %d is negative (%g)", j, at, col[at])
		}
		for j2 := 0; j2 <= j; j2++ {
			d := 0.0
			for i := 0; i < n; i++ {
				d += col[i] * e.Vectors[i*k+j2]
			}
			want := 0.0
			if j == j2 {
				want = 1
			}
			if math.Abs(d-want) > 1e-10 {
				t.Fatalf("<v%d, v%d> = %g, want %g", j, j2, d, want)
			}
		}
	}
}

func TestMaskAndPadding(t *testing.T) {
	e, err := Eigen(path(3), 5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, true, false, false}; !slices.Equal(e.Mask, want) {
		t.Fatalf("mask %v, want %v", e.Mask, want)
	}
	assertClose(t, "values", e.Values, []float64{0, 1, 3, 0, 0}, 1e-12)
	for i := 0; i < 3; i++ {
		for j := 3; j < 5; j++ {
			if e.Vectors[i*5+j] != 0 {
				t.Fatalf("padded slot (%d,%d) = %g", i, j, e.Vectors[i*5+j])
			}
		}
	}
	// Zero-node graph: everything masked.
	e, err = Eigen(graph.New(0), 3, Options{Laplacian: Magnetic})
	if err != nil || len(e.Vectors) != 0 || e.Mask[0] {
		t.Fatalf("empty graph: %+v, %v", e, err)
	}
	// Truncation: k < n keeps the lowest.
	e, _ = Eigen(cycle(6), 2, Options{})
	assertClose(t, "cycle6 lowest two", e.Values, []float64{0, 1}, 1e-12)
	if math.Abs(e.Vectors[0]-1/math.Sqrt(6)) > 1e-12 {
		t.Fatalf("constant eigenvector %g, want +1/sqrt(6)", e.Vectors[0])
	}
}

func TestSignConvention(t *testing.T) {
	// P3: eigenvector of λ=1 is (1, 0, -1)/√2: a tie between entries 0
	// and 2, broken by the lowest index, so entry 0 is positive.
	e, err := Eigen(path(3), 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Vectors[0*3+1]; math.Abs(got-1/math.Sqrt2) > 1e-12 {
		t.Fatalf("v1[0] = %g, want 1/√2", got)
	}
	// λ=3: (1, -2, 1)/√6: the middle entry is the largest, so positive.
	if got := e.Vectors[1*3+2]; math.Abs(got-2/math.Sqrt(6)) > 1e-12 {
		t.Fatalf("v2[1] = %g, want 2/√6", got)
	}
}

func TestMagneticHermitian(t *testing.T) {
	g := graph.NewDirected(5)
	for _, e := range [][2]int{{0, 1}, {1, 2}, {2, 0}, {2, 3}, {3, 2}, {3, 4}} {
		g.MustAddEdge(e[0], e[1])
	}
	q := 0.13
	re, im := MagneticLaplacian(g, q)
	n := 5
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if re[i*n+j] != re[j*n+i] || im[i*n+j] != -im[j*n+i] {
				t.Fatalf("not Hermitian at (%d,%d)", i, j)
			}
		}
	}
	// one-way edge 0->1: -exp(2πiq); reciprocal pair 2<->3: -1
	if w := -cmplx.Exp(complex(0, 2*math.Pi*q)); math.Abs(re[0*n+1]-real(w)) > 1e-15 || math.Abs(im[0*n+1]-imag(w)) > 1e-15 {
		t.Fatalf("L[0,1] = %g%+gi, want %v", re[1], im[1], w)
	}
	if re[2*n+3] != -1 || im[2*n+3] != 0 {
		t.Fatalf("reciprocal pair entry %g%+gi, want -1", re[2*n+3], im[2*n+3])
	}
	if re[2*n+2] != 3 { // neighbours 0, 1, 3 in A ∨ Aᵀ
		t.Fatalf("D_s[2] = %g, want 3", re[2*n+2])
	}
	if got := DirectedEdgeCount(g); got != 4 {
		t.Fatalf("DirectedEdgeCount = %d, want 4", got)
	}
	if got, want := QEff(g), 0.1/4; got != want {
		t.Fatalf("QEff = %g, want %g", got, want)
	}
}

// For the directed n-cycle i -> i+1, L_q = 2I - e^{iθ}S - e^{-iθ}Sᵀ with
// θ = 2πq and S the cyclic shift, whose Fourier eigenvectors f_j(i) =
// ω^{ij}/√n (ω = e^{2πi/n}) give eigenvalues 2 - 2cos(2π(j/n + q)).
func TestMagneticDirectedCycle(t *testing.T) {
	for _, q := range []float64{0, 0.01, 0.1, 0.25} {
		n := 7
		want := make([]float64, n)
		for j := range want {
			want[j] = 2 - 2*math.Cos(2*math.Pi*(float64(j)/float64(n)+q))
		}
		want = sorted(want)
		e, err := Eigen(directedCycle(n), n, Options{Laplacian: Magnetic, Q: q, FixedQ: true})
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, "directed cycle", e.Values, want, 1e-11)
		re, im := MagneticLaplacian(directedCycle(n), q)
		checkHermitianPairs(t, re, im, e)
	}
}

func checkHermitianPairs(t *testing.T, re, im []float64, e *Eig) {
	t.Helper()
	n, k := e.N, e.K
	zs := make([][]complex128, 0, k)
	for j := 0; j < k; j++ {
		if !e.Mask[j] {
			continue
		}
		z := make([]complex128, n)
		big := 0.0
		for i := range z {
			z[i] = complex(e.Vectors[i*k+j], e.Imag[i*k+j])
			big = max(big, cmplx.Abs(z[i]))
		}
		for i := 0; i < n; i++ {
			var s complex128
			for c := 0; c < n; c++ {
				s += complex(re[i*n+c], im[i*n+c]) * z[c]
			}
			if cmplx.Abs(s-complex(e.Values[j], 0)*z[i]) > 1e-9 {
				t.Fatalf("slot %d row %d: residual %g", j, i, cmplx.Abs(s-complex(e.Values[j], 0)*z[i]))
			}
		}
		for i, x := range z { // phase convention: the pivot exactly real
			if cmplx.Abs(x) >= big*(1-1e-9) {
				if real(x) <= 0 || imag(x) != 0 {
					t.Fatalf("slot %d: pivot entry %d = %v, want real positive", j, i, x)
				}
				break
			}
		}
		for j2, w := range zs {
			if d := cmplx.Abs(cdot(w, z)); d > 1e-9 {
				t.Fatalf("slots %d and %d not orthogonal: %g", j2, j, d)
			}
		}
		if d := math.Abs(cnorm2(z) - 1); d > 1e-10 {
			t.Fatalf("slot %d not unit: %g", j, d)
		}
		zs = append(zs, z)
	}
}

func TestMagneticZeroQIsCombinatorial(t *testing.T) {
	g := graph.NewDirected(6)
	for _, e := range [][2]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}, {3, 4}, {5, 4}, {4, 0}} {
		g.MustAddEdge(e[0], e[1])
	}
	mag, err := Eigen(g, 6, Options{Laplacian: Magnetic, FixedQ: true, Q: 0})
	if err != nil {
		t.Fatal(err)
	}
	comb, err := Eigen(g.Undirected(), 6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "q=0 vs combinatorial", mag.Values, comb.Values, 1e-12)
	// Small q: eigenvalues move continuously.
	mag2, _ := Eigen(g, 6, Options{Laplacian: Magnetic, FixedQ: true, Q: 1e-7})
	assertClose(t, "q→0", mag2.Values, comb.Values, 1e-9)
	// Undirected input: imaginary parts vanish.
	u, _ := Eigen(cycle(5), 5, Options{Laplacian: Magnetic, FixedQ: true, Q: 0.2})
	for _, x := range u.Imag {
		if math.Abs(x) > 1e-12 {
			t.Fatalf("undirected magnetic eigenvector has imaginary part %g", x)
		}
	}
	// Degenerate complex eigenvalues (cycle: multiplicity 2) still give an
	// orthonormal set.
	re, im := MagneticLaplacian(cycle(5), 0.2)
	checkHermitianPairs(t, re, im, u)
}

func TestPageRankLaplacian(t *testing.T) {
	// 0 -> 1 on two nodes: P = [[0.025, 0.975], [0.5, 0.5]],
	// π = (0.5, 0.975)/1.475; the chain is reversible so
	// L = [[0.975, -√0.4875], [-√0.4875, 0.5]] with eigenvalues 0, 1.475.
	g := graph.NewDirected(2)
	g.MustAddEdge(0, 1)
	l, err := PageRankLaplacian(g, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "L", l, []float64{0.975, -math.Sqrt(0.4875), -math.Sqrt(0.4875), 0.5}, 1e-14)
	e, _ := Eigen(g, 2, Options{Laplacian: PageRank})
	assertClose(t, "eigenvalues", e.Values, []float64{0, 1.475}, 1e-13)
	if _, err := PageRankLaplacian(g, 1); err == nil {
		t.Fatal("alpha = 1 accepted")
	}

	// Any graph: spectrum in [0, 2], eigenvalue 0 with eigenvector √π.
	d := graph.NewDirected(7)
	for _, e := range [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {4, 5}, {1, 5}} {
		d.MustAddEdge(e[0], e[1])
	}
	l, _ = PageRankLaplacian(d, 0.95)
	e, err = Eigen(d, 7, Options{Laplacian: PageRank})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range e.Values {
		if v < 0 || v > 2+1e-12 {
			t.Fatalf("eigenvalue %g outside [0, 2]", v)
		}
	}
	if e.Values[0] > 1e-12 {
		t.Fatalf("smallest eigenvalue %g, want 0", e.Values[0])
	}
	checkEigenpairs(t, l, e, 1e-10)
	for i := 0; i < 7; i++ { // √π > 0: the 0-eigenvector is positive
		if e.Vectors[i*7] <= 0 {
			t.Fatalf("0-eigenvector entry %d = %g, want > 0", i, e.Vectors[i*7])
		}
	}
}

// projector returns V Vᵀ for columns cols of the n x k matrix v.
func projector(v []float64, n, k int, cols []int) []float64 {
	p := make([]float64, n*n)
	for _, j := range cols {
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				p[a*n+b] += v[a*k+j] * v[b*k+j]
			}
		}
	}
	return p
}

func TestIterativeMatchesDense(t *testing.T) {
	cases := []struct {
		name string
		g    *graph.Graph
		kind Kind
		k    int
	}{
		{"geometric", geometric(420, 0.09, 3), Combinatorial, 12},
		{"geometric normalized", geometric(420, 0.09, 4), Normalized, 12},
		{"grid 21x20 (degenerate)", grid(21, 20), Combinatorial, 10},
		{"three components", union(geometric(150, 0.16, 5), geometric(140, 0.17, 6), cycle(130)), Combinatorial, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.g.N()
			d, err := Eigen(c.g, c.k, Options{Laplacian: c.kind, Method: Dense})
			if err != nil {
				t.Fatal(err)
			}
			it, err := Eigen(c.g, c.k, Options{Laplacian: c.kind, Method: Iterative, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			top := d.Values[c.k-1]
			for j := range d.Values {
				if math.Abs(it.Values[j]-d.Values[j]) > 1e-8*max(d.Values[j], 1e-2*top) {
					t.Fatalf("eigenvalue %d: iterative %.15g, dense %.15g", j, it.Values[j], d.Values[j])
				}
			}
			checkEigenpairs(t, denseOf(c.g, c.kind), it, 1e-7)
			// Compare eigenvectors through the projectors of clusters that
			// lie wholly inside the first k slots.
			for s := 0; s < c.k; {
				e := s + 1
				for e < c.k && d.Values[e]-d.Values[e-1] < 1e-6 {
					e++
				}
				if e == c.k && c.k < n {
					break // the last cluster may continue beyond slot k
				}
				cols := make([]int, 0, e-s)
				for j := s; j < e; j++ {
					cols = append(cols, j)
				}
				pd := projector(d.Vectors, n, c.k, cols)
				pi := projector(it.Vectors, n, c.k, cols)
				for i := range pd {
					if math.Abs(pd[i]-pi[i]) > 1e-6 {
						t.Fatalf("cluster %d..%d: projectors differ by %g", s, e-1, math.Abs(pd[i]-pi[i]))
					}
				}
				s = e
			}
		})
	}
}

func TestMagneticIterativeMatchesDense(t *testing.T) {
	g0 := geometric(360, 0.1, 9)
	g := graph.NewDirected(g0.N())
	for _, e := range g0.Edges() { // orient by index, a DAG
		g.MustAddEdge(e.From, e.To)
	}
	opt := Options{Laplacian: Magnetic, FixedQ: true, Q: 0.05}
	d, err := Eigen(g, 6, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Method = Iterative
	it, err := Eigen(g, 6, opt)
	if err != nil {
		t.Fatal(err)
	}
	for j := range d.Values {
		if math.Abs(it.Values[j]-d.Values[j]) > 1e-8*max(d.Values[j], 1e-3) {
			t.Fatalf("eigenvalue %d: iterative %.15g, dense %.15g", j, it.Values[j], d.Values[j])
		}
	}
	re, im := MagneticLaplacian(g, 0.05)
	checkHermitianPairs(t, re, im, it)
	checkHermitianPairs(t, re, im, d)
}

func TestPreprocessDeterministic(t *testing.T) {
	gs := []*graph.Graph{cycle(6), star(4), geometric(40, 0.3, 1), path(2), graph.New(0)}
	var calls []int
	f1, err := Preprocess(context.Background(), gs, PreprocessOptions{K: 4, Workers: 1}, func(done, total int) {
		calls = append(calls, done)
		if total != len(gs) {
			t.Errorf("total %d", total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("progress calls %v", calls)
	}
	f2, err := Preprocess(context.Background(), gs, PreprocessOptions{K: 4, Workers: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f1 {
		if !slices.Equal(f1[i].Vectors, f2[i].Vectors) || !slices.Equal(f1[i].Orbits, f2[i].Orbits) {
			t.Fatalf("graph %d differs between 1 and 3 workers", i)
		}
	}
	// cycle: every node in one orbit; star: leaves form an orbit, centre 0.
	if !slices.Equal(f1[0].Orbits, []int32{1, 1, 1, 1, 1, 1}) || !slices.Equal(f1[1].Orbits, []int32{0, 1, 1, 1}) {
		t.Fatalf("orbits %v %v", f1[0].Orbits, f1[1].Orbits)
	}
	if !slices.Equal(f1[3].Mask, []bool{true, true, false, false}) || f1[4].N != 0 {
		t.Fatalf("masks %v / %+v", f1[3].Mask, f1[4])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Preprocess(ctx, gs, PreprocessOptions{K: 4}, nil); err == nil {
		t.Fatal("cancelled context not reported")
	}
}

// randomTree returns a uniform random labelled tree (Prüfer decoding).
func randomTree(n int, seed uint64) *graph.Graph {
	rng := rand.New(rand.NewPCG(seed, 5))
	pr := make([]int, n-2)
	deg := make([]int, n)
	for i := range deg {
		deg[i] = 1
	}
	for i := range pr {
		pr[i] = rng.IntN(n)
		deg[pr[i]]++
	}
	g := graph.New(n)
	for _, v := range pr {
		for u := 0; u < n; u++ {
			if deg[u] == 1 {
				g.MustAddEdge(u, v)
				deg[u]--
				deg[v]--
				break
			}
		}
	}
	var last []int
	for u := 0; u < n; u++ {
		if deg[u] == 1 {
			last = append(last, u)
		}
	}
	g.MustAddEdge(last[0], last[1])
	return g
}

func TestPartialMatchesFull(t *testing.T) {
	type tc struct {
		name string
		g    *graph.Graph
		kind Kind
		k    int
	}
	cases := []tc{
		{"star20", star(20), Combinatorial, 8},
		{"complete20", complete(20), Combinatorial, 6},
		{"grid6x5", grid(6, 5), Combinatorial, 12},
		{"three cycles", union(cycle(9), cycle(9), cycle(12)), Combinatorial, 10},
		{"path40", path(40), Combinatorial, 10},
		{"isolated nodes", union(graph.New(1), graph.New(1), cycle(10), graph.New(1)), Combinatorial, 6},
		{"normalized grid", grid(5, 5), Normalized, 12},
		{"pagerank dag", func() *graph.Graph {
			g := graph.NewDirected(30)
			for i := 0; i < 30; i++ {
				for _, d := range []int{1, 3, 7} {
					if i+d < 30 {
						g.MustAddEdge(i, i+d)
					}
				}
			}
			return g
		}(), PageRank, 10},
	}
	for s := uint64(0); s < 20; s++ {
		cases = append(cases, tc{"tree64", randomTree(64, s), Combinatorial, 16})
		cases = append(cases, tc{"geometric64", geometric(64, 0.18, s), Combinatorial, 16})
	}
	before := partialFallbacks.Load()
	var solver Solver
	for _, c := range cases {
		n := c.g.N()
		l := denseOf(c.g, c.kind)
		full, _, err := solver.SymmetricEigen(l, n, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := solver.Eigen(c.g, c.k, Options{Laplacian: c.kind})
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < c.k; j++ {
			if math.Abs(e.Values[j]-max(full[j], 0)) > 1e-12*max(1, full[n-1]) {
				t.Fatalf("%s: eigenvalue %d = %.16g, Dsyev %.16g", c.name, j, e.Values[j], full[j])
			}
		}
		checkEigenpairs(t, l, e, 1e-10)
	}
	if f := partialFallbacks.Load() - before; f != 0 {
		t.Errorf("partial solver fell back to Dsyev %d times in %d problems", f, len(cases))
	}
}

func TestMagneticPartialMatchesFull(t *testing.T) {
	dag := graph.NewDirected(40)
	for i := 0; i < 40; i++ {
		for _, d := range []int{1, 5, 11} {
			if i+d < 40 {
				dag.MustAddEdge(i, i+d)
			}
		}
	}
	cases := []struct {
		name string
		g    *graph.Graph
		q    float64
		k    int
	}{
		{"directed cycle q=0.1", directedCycle(20), 0.1, 5},
		{"directed cycle q=0 (degenerate pairs)", directedCycle(20), 0, 5},
		{"undirected cycle (degenerate)", cycle(21), 0.2, 6},
		{"dag", dag, 0.02, 8},
		{"complete (multiplicity 15)", complete(16), 0.1, 6},
	}
	before := partialFallbacks.Load()
	for _, c := range cases {
		opt := Options{Laplacian: Magnetic, Q: c.q, FixedQ: true}
		full, err := Eigen(c.g, c.g.N(), opt) // k = n: full Dsyev
		if err != nil {
			t.Fatal(err)
		}
		part, err := Eigen(c.g, c.k, opt)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < c.k; j++ {
			if math.Abs(part.Values[j]-full.Values[j]) > 1e-11*max(1, full.Values[c.g.N()-1]) {
				t.Fatalf("%s: eigenvalue %d = %.16g, full %.16g", c.name, j, part.Values[j], full.Values[j])
			}
		}
		re, im := MagneticLaplacian(c.g, c.q)
		checkHermitianPairs(t, re, im, part)
	}
	if f := partialFallbacks.Load() - before; f != 0 {
		t.Errorf("partial solver fell back %d times", f)
	}
}
