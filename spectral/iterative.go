package spectral

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"lgflow/graph"
)

// csr is a square sparse matrix in compressed-row form.
type csr struct {
	n   int
	ptr []int
	idx []int32
	val []float64
}

// mulVec sets dst = M·x.
func (m *csr) mulVec(dst, x []float64) {
	for i := 0; i < m.n; i++ {
		s := 0.0
		for p := m.ptr[i]; p < m.ptr[i+1]; p++ {
			s += m.val[p] * x[m.idx[p]]
		}
		dst[i] = s
	}
}

// gershgorin returns max_i Σ_j |M_ij|, an upper bound on the spectral radius.
func (m *csr) gershgorin() float64 {
	b := 0.0
	for i := 0; i < m.n; i++ {
		s := 0.0
		for p := m.ptr[i]; p < m.ptr[i+1]; p++ {
			s += math.Abs(m.val[p])
		}
		b = max(b, s)
	}
	return b
}

// sparseLaplacian builds the combinatorial or normalised Laplacian of g
// (symmetrised if directed) in CSR form.
func sparseLaplacian(g *graph.Graph, kind Kind) *csr {
	n := g.N()
	m := &csr{n: n, ptr: make([]int, n+1)}
	deg := make([]float64, n)
	for u := 0; u < n; u++ {
		deg[u] = float64(symDegree(g, u))
	}
	for u := 0; u < n; u++ {
		diagDone := false
		addDiag := func() {
			if diagDone {
				return
			}
			diagDone = true
			switch {
			case kind == Combinatorial:
				m.idx = append(m.idx, int32(u))
				m.val = append(m.val, deg[u])
			case deg[u] > 0:
				m.idx = append(m.idx, int32(u))
				m.val = append(m.val, 1)
			}
		}
		symNeighbors(g, u, func(v int) {
			if v > u {
				addDiag()
			}
			m.idx = append(m.idx, int32(v))
			if kind == Combinatorial {
				m.val = append(m.val, -1)
			} else {
				m.val = append(m.val, -1/math.Sqrt(deg[u]*deg[v]))
			}
		})
		addDiag()
		m.ptr[u+1] = len(m.idx)
	}
	return m
}

// sparseMagneticEmbedding builds the 2n x 2n real embedding
// [[R, -I], [I, R]] of the magnetic Laplacian R + iI in CSR form.
func sparseMagneticEmbedding(g *graph.Graph, q float64) *csr {
	n := g.N()
	c, s := math.Cos(2*math.Pi*q), math.Sin(2*math.Pi*q)
	type ent struct {
		j      int
		re, im float64
	}
	rows := make([][]ent, n)
	for u := 0; u < n; u++ {
		d := 0
		symNeighbors(g, u, func(v int) {
			d++
			fwd, back := g.HasEdge(u, v), g.HasEdge(v, u)
			switch {
			case !g.Directed() || fwd == back:
				rows[u] = append(rows[u], ent{v, -1, 0})
			case fwd:
				rows[u] = append(rows[u], ent{v, -c, -s})
			default:
				rows[u] = append(rows[u], ent{v, -c, s})
			}
		})
		rows[u] = append(rows[u], ent{u, float64(d), 0})
	}
	m := &csr{n: 2 * n, ptr: make([]int, 2*n+1)}
	for r := 0; r < 2*n; r++ {
		u := r % n
		for _, e := range rows[u] {
			if r < n { // [R, -I]
				m.idx = append(m.idx, int32(e.j))
				m.val = append(m.val, e.re)
				if e.im != 0 {
					m.idx = append(m.idx, int32(e.j+n))
					m.val = append(m.val, -e.im)
				}
			} else { // [I, R]
				if e.im != 0 {
					m.idx = append(m.idx, int32(e.j))
					m.val = append(m.val, e.im)
				}
				m.idx = append(m.idx, int32(e.j+n))
				m.val = append(m.val, e.re)
			}
		}
		m.ptr[r+1] = len(m.idx)
	}
	return m
}

func (o Options) tol() float64 {
	if o.Tol > 0 {
		return o.Tol
	}
	return 1e-10
}

func (o Options) maxIter() int {
	if o.MaxIter > 0 {
		return o.MaxIter
	}
	return 1000
}

// lowestSparse returns the nev smallest eigenvalues (ascending) of the
// symmetric positive semidefinite matrix m and their orthonormal
// eigenvectors, vecs[j] being eigenvector j.
//
// It runs Chebyshev-filtered subspace iteration (Zhou and Saad) on a block
// of b = nev + guard vectors: each step applies a degree-d Chebyshev
// polynomial that damps the spectrum above the current cut (the largest
// Ritz value of the block) up to the Gershgorin bound, re-orthonormalises
// the block (classical Gram-Schmidt, twice) and performs a Rayleigh-Ritz
// projection with a dense b x b eigensolve. The block resolves eigenvalues
// of multiplicity up to b. Iteration stops when every wanted Ritz pair has
// residual ‖Mx - θx‖ ≤ opt.Tol·bound.
func (s *Solver) lowestSparse(m *csr, nev int, opt Options) ([]float64, [][]float64, error) {
	n := m.n
	upper := m.gershgorin()
	if upper == 0 { // zero matrix
		upper = 1
	}
	b := min(n, nev+max(6, nev/2))
	if 4*b >= n || n <= 64 {
		return s.lowestViaDense(m, nev)
	}
	const degree = 24
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6c67666c6f77))
	alloc := func() [][]float64 {
		store := make([]float64, b*n)
		v := make([][]float64, b)
		for j := range v {
			v[j] = store[j*n : (j+1)*n]
		}
		return v
	}
	X, Y, Z, MX := alloc(), alloc(), alloc(), alloc()
	for j := range X {
		for i := range X[j] {
			X[j][i] = rng.NormFloat64()
		}
	}
	H := make([]float64, b*b)
	theta := make([]float64, b)
	tol := opt.tol() * upper
	// rayleighRitz orthonormalises X, rotates it onto the Ritz vectors of
	// m in span(X) (ascending θ) and reports whether the first nev have
	// converged. MX receives m·X.
	rayleighRitz := func() (bool, error) {
		for j := range X {
			orthonormalise(X[j], X[:j], rng)
		}
		for j := range X {
			m.mulVec(MX[j], X[j])
		}
		for i := 0; i < b; i++ {
			for j := i; j < b; j++ {
				h := (dot(X[i], MX[j]) + dot(X[j], MX[i])) / 2
				H[i*b+j], H[j*b+i] = h, h
			}
		}
		s.a = append(s.a[:0], H...)
		if err := s.syev(b, true); err != nil {
			return false, err
		}
		copy(theta, s.w)
		for j := 0; j < b; j++ {
			clear(Y[j])
			clear(Z[j])
			for i := 0; i < b; i++ {
				w := s.a[i*b+j]
				axpy(Y[j], w, X[i])
				axpy(Z[j], w, MX[i])
			}
		}
		X, Y = Y, X
		MX, Z = Z, MX
		conv := true
		for j := 0; j < nev && conv; j++ {
			r := 0.0
			for i, v := range MX[j] {
				d := v - theta[j]*X[j][i]
				r += d * d
			}
			conv = math.Sqrt(r) <= tol
		}
		return conv, nil
	}
	for it := 0; it < opt.maxIter(); it++ {
		conv, err := rayleighRitz()
		if err != nil {
			return nil, nil, err
		}
		if conv {
			vals := make([]float64, nev)
			vecs := make([][]float64, nev)
			for j := 0; j < nev; j++ {
				vals[j] = theta[j]
				vecs[j] = slices.Clone(X[j])
			}
			return vals, vecs, nil
		}
		// Chebyshev filter on [cut, upper], scaled so that the value at 0
		// (a lower bound of the spectrum) stays near 1.
		cut := theta[b-1]
		if cut >= upper {
			cut = upper * 0.99
		}
		e := (upper - cut) / 2
		c := (upper + cut) / 2
		sigma := e / (0 - c)
		tau := 2 / sigma
		// Y = (M X - c X) σ/e, with M X already in MX.
		for j := 0; j < b; j++ {
			for i := range Y[j] {
				Y[j][i] = (MX[j][i] - c*X[j][i]) * sigma / e
			}
		}
		for d := 2; d <= degree; d++ {
			sigmaNew := 1 / (tau - sigma)
			for j := 0; j < b; j++ {
				m.mulVec(Z[j], Y[j])
				zj, yj, xj := Z[j], Y[j], X[j]
				for i := range zj {
					zj[i] = 2*sigmaNew/e*(zj[i]-c*yj[i]) - sigma*sigmaNew*xj[i]
				}
			}
			X, Y, Z = Y, Z, X
			sigma = sigmaNew
		}
		X, Y = Y, X
	}
	return nil, nil, fmt.Errorf("%w: Chebyshev subspace iteration, n=%d, %d eigenpairs, %d iterations", ErrNoConvergence, n, nev, opt.maxIter())
}

// lowestViaDense solves small sparse problems densely.
func (s *Solver) lowestViaDense(m *csr, nev int) ([]float64, [][]float64, error) {
	n := m.n
	s.a = grow(s.a, n*n)
	for i := 0; i < n; i++ {
		for p := m.ptr[i]; p < m.ptr[i+1]; p++ {
			s.a[i*n+int(m.idx[p])] = m.val[p]
		}
	}
	if err := s.syev(n, true); err != nil {
		return nil, nil, err
	}
	vals := make([]float64, nev)
	vecs := make([][]float64, nev)
	for j := 0; j < nev; j++ {
		vals[j] = s.w[j]
		vecs[j] = make([]float64, n)
		for i := 0; i < n; i++ {
			vecs[j][i] = s.a[i*n+j]
		}
	}
	return vals, vecs, nil
}

// orthonormalise makes v orthogonal to the orthonormal vectors in q
// (classical Gram-Schmidt, applied twice) and normalises it, replacing it
// by a random direction when it (numerically) lies in their span.
func orthonormalise(v []float64, q [][]float64, rng *rand.Rand) {
	for attempt := 0; ; attempt++ {
		n0 := math.Sqrt(dot(v, v))
		for pass := 0; pass < 2; pass++ {
			for _, u := range q {
				axpy(v, -dot(u, v), u)
			}
		}
		nr := math.Sqrt(dot(v, v))
		if nr > 1e-8*n0 && nr > 0 {
			for i := range v {
				v[i] /= nr
			}
			return
		}
		if attempt > 10 {
			panic("spectral: cannot extend an orthonormal basis")
		}
		for i := range v {
			v[i] = rng.NormFloat64()
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// axpy sets y += a·x.
func axpy(y []float64, a float64, x []float64) {
	for i, v := range x {
		y[i] += a * v
	}
}

func (s *Solver) realIterative(e *Eig, g *graph.Graph, opt Options) error {
	n := g.N()
	kk := min(e.K, n)
	m := sparseLaplacian(g, opt.Laplacian)
	vals, vecs, err := s.lowestSparse(m, kk, opt)
	if err != nil {
		return err
	}
	k := e.K
	for j := 0; j < kk; j++ {
		e.Values[j] = vals[j]
		for i := 0; i < n; i++ {
			e.Vectors[i*k+j] = vecs[j][i]
		}
		fixSign(e.Vectors, n, k, j)
	}
	return nil
}

func (s *Solver) magneticIterative(e *Eig, g *graph.Graph, opt Options) error {
	n := g.N()
	want := min(e.K, n)
	m := sparseMagneticEmbedding(g, e.Q)
	nev := min(2*n, 2*want+2)
	vals, vecs, err := s.lowestSparse(m, nev, opt)
	if err != nil {
		return err
	}
	v := make([]float64, 2*n)
	mv := make([]float64, 2*n)
	rq := func(z []complex128) float64 { // z^H H z = vᵀ M v with v = [Re z; Im z]
		for i, x := range z {
			v[i], v[i+n] = real(x), imag(x)
		}
		m.mulVec(mv, v)
		return dot(v, mv)
	}
	return complexFromEmbedding(e, n, vals, nev, func(c int) []float64 { return vecs[c] }, want, m.gershgorin(), rq)
}
