package spectral

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"lgflow/graph"
)

// DefaultAlpha is the PageRank damping factor α of the directed Laplacian
// used by the DAG metrics (docs/design.md, "DAG metrics") and networkx's
// default.
const DefaultAlpha = 0.95

// symNeighbors calls f(v) once for every neighbour v of u in the
// undirected view A ∨ Aᵀ of g.
func symNeighbors(g *graph.Graph, u int, f func(v int)) {
	out := g.Neighbors(u)
	if !g.Directed() {
		for _, v := range out {
			f(v)
		}
		return
	}
	in := g.InNeighbors(u)
	// merge two sorted lists, reporting common entries once
	i, j := 0, 0
	for i < len(out) || j < len(in) {
		switch {
		case j == len(in) || (i < len(out) && out[i] < in[j]):
			f(out[i])
			i++
		case i == len(out) || in[j] < out[i]:
			f(in[j])
			j++
		default:
			f(out[i])
			i++
			j++
		}
	}
}

// symDegree returns the degree of u in A ∨ Aᵀ.
func symDegree(g *graph.Graph, u int) int {
	if !g.Directed() {
		return g.Degree(u)
	}
	d := 0
	symNeighbors(g, u, func(int) { d++ })
	return d
}

// grow returns s resized to n elements and zeroed, reusing its storage
// when the capacity allows.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// Laplacian returns the combinatorial Laplacian L = D - A of g as a dense
// row-major n x n matrix (a new slice). A directed graph is symmetrised
// first: A is replaced by A ∨ Aᵀ.
func Laplacian(g *graph.Graph) []float64 { return laplacianInto(nil, g) }

func laplacianInto(dst []float64, g *graph.Graph) []float64 {
	n := g.N()
	dst = grow(dst, n*n)
	for u := 0; u < n; u++ {
		d := 0
		symNeighbors(g, u, func(v int) {
			dst[u*n+v] = -1
			d++
		})
		dst[u*n+u] = float64(d)
	}
	return dst
}

// NormalizedLaplacian returns I - D^{-1/2} A D^{-1/2} for g as a dense
// row-major n x n matrix (a new slice). As in networkx, an isolated node
// gets a zero diagonal entry (its row and column are zero). A directed
// graph is symmetrised first.
func NormalizedLaplacian(g *graph.Graph) []float64 { return normalizedInto(nil, g) }

func normalizedInto(dst []float64, g *graph.Graph) []float64 {
	n := g.N()
	dst = grow(dst, n*n)
	isq := make([]float64, n)
	for u := 0; u < n; u++ {
		if d := symDegree(g, u); d > 0 {
			isq[u] = 1 / math.Sqrt(float64(d))
		}
	}
	for u := 0; u < n; u++ {
		if isq[u] == 0 {
			continue
		}
		dst[u*n+u] = 1
		symNeighbors(g, u, func(v int) { dst[u*n+v] = -isq[u] * isq[v] })
	}
	return dst
}

// DirectedEdgeCount returns the number of one-way edges of g, i.e.
// Σ_{u,v} [A_uv ≠ A_vu] / 2: edges u -> v whose reverse v -> u is absent.
// It is 0 for undirected graphs.
func DirectedEdgeCount(g *graph.Graph) int {
	if !g.Directed() {
		return 0
	}
	m := 0
	for u := 0; u < g.N(); u++ {
		for _, v := range g.Neighbors(u) {
			if !g.HasEdge(v, u) {
				m++
			}
		}
	}
	return m
}

// QEff returns the magnetic potential the reference code uses per graph
// (docs/design.md, "Pre-processing"): q_eff = 0.1 / max(1, min(m, n)),
// where m is
// DirectedEdgeCount(g) and n the number of nodes.
func QEff(g *graph.Graph) float64 {
	return 0.1 / float64(max(1, min(DirectedEdgeCount(g), g.N())))
}

// MagneticLaplacian returns the magnetic Laplacian of g with potential q,
//
//	L_q = D_s - A_s ⊙ exp(iΘ),  A_s = A ∨ Aᵀ,  Θ = 2πq (A - Aᵀ),
//
// a Hermitian matrix, as its real part re and imaginary part im (new dense
// row-major n x n slices; re is symmetric and im antisymmetric). D_s holds
// the degrees of A_s. A one-way edge u -> v contributes -exp(+2πiq) at (u,
// v) and -exp(-2πiq) at (v, u); reciprocal pairs and undirected edges
// contribute -1 to both. For q = 0, or an undirected graph, L_q = D - A.
func MagneticLaplacian(g *graph.Graph, q float64) (re, im []float64) {
	return magneticInto(nil, nil, g, q)
}

func magneticInto(re, im []float64, g *graph.Graph, q float64) ([]float64, []float64) {
	n := g.N()
	re = grow(re, n*n)
	im = grow(im, n*n)
	c, s := math.Cos(2*math.Pi*q), math.Sin(2*math.Pi*q)
	for u := 0; u < n; u++ {
		d := 0
		symNeighbors(g, u, func(v int) {
			d++
			fwd, back := g.HasEdge(u, v), g.HasEdge(v, u)
			if !g.Directed() || fwd == back {
				re[u*n+v] = -1
				return
			}
			re[u*n+v] = -c
			if fwd { // Θ_uv = +2πq
				im[u*n+v] = -s
			} else { // Θ_uv = -2πq
				im[u*n+v] = s
			}
		})
		re[u*n+u] = float64(d)
	}
	return re, im
}

// ErrAlpha is returned (wrapped) for a PageRank damping factor outside (0, 1).
var ErrAlpha = errors.New("spectral: PageRank alpha must be in (0, 1)")

// PageRankLaplacian returns Chung's directed Laplacian of the PageRank walk
// on g with damping alpha (docs/design.md, "DAG metrics"; networkx
// directed_laplacian_matrix with walk_type="pagerank"):
//
//	P = alpha · (row-normalised A, dangling rows set to 1/n) + (1 - alpha)/n,
//	π = the Perron vector of Pᵀ with Σπ = 1,
//	L = I - (Q + Qᵀ)/2,  Q = Π^{1/2} P Π^{-1/2}.
//
// The result is a new dense row-major n x n symmetric matrix with spectrum
// in [0, 2]. An undirected g is read as the directed graph with both
// orientations of every edge. π is computed by solving (I - Pᵀ)π = 0,
// Σπ = 1 directly (P is strictly positive, so π is unique and positive).
func PageRankLaplacian(g *graph.Graph, alpha float64) ([]float64, error) {
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("%w: got %v", ErrAlpha, alpha)
	}
	n := g.N()
	if n == 0 {
		return []float64{}, nil
	}
	p := make([]float64, n*n)
	tele := (1 - alpha) / float64(n)
	for u := 0; u < n; u++ {
		row := p[u*n : (u+1)*n]
		nb := g.Neighbors(u)
		if len(nb) == 0 {
			for v := range row {
				row[v] = alpha/float64(n) + tele
			}
			continue
		}
		w := alpha / float64(len(nb))
		for v := range row {
			row[v] = tele
		}
		for _, v := range nb {
			row[v] += w
		}
	}
	pi, err := perron(p, n)
	if err != nil {
		return nil, err
	}
	sq := make([]float64, n)
	for i, x := range pi {
		sq[i] = math.Sqrt(math.Abs(x))
	}
	l := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			qij := sq[i] * p[i*n+j] / sq[j]
			qji := sq[j] * p[j*n+i] / sq[i]
			v := -(qij + qji) / 2
			if i == j {
				v += 1
			}
			l[i*n+j] = v
		}
	}
	return l, nil
}

// perron returns the stationary distribution π of the row-stochastic,
// strictly positive n x n matrix p: πᵀ p = πᵀ, Σπ = 1.
func perron(p []float64, n int) ([]float64, error) {
	if n == 1 {
		return []float64{1}, nil
	}
	// M = I - Pᵀ with its last row replaced by ones; M π = e_n.
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n-1; i++ {
		for j := 0; j < n; j++ {
			v := -p[j*n+i]
			if i == j {
				v += 1
			}
			m.Set(i, j, v)
		}
	}
	for j := 0; j < n; j++ {
		m.Set(n-1, j, 1)
	}
	b := mat.NewVecDense(n, nil)
	b.SetVec(n-1, 1)
	var x mat.VecDense
	if err := x.SolveVec(m, b); err != nil {
		var cond mat.Condition
		if !errors.As(err, &cond) {
			return nil, fmt.Errorf("spectral: PageRank stationary distribution: %w", err)
		}
	}
	pi := make([]float64, n)
	s := 0.0
	for i := range pi {
		pi[i] = x.AtVec(i)
		s += pi[i]
	}
	for i := range pi {
		pi[i] /= s
	}
	return pi, nil
}
