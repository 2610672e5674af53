package spectral

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"

	"lgflow/graph"
)

// Kind selects the Laplacian whose eigenpairs Eigen computes.
type Kind int

const (
	// Combinatorial is L = D - A (undirected graphs; docs/design.md,
	// "Pre-processing").
	Combinatorial Kind = iota
	// Normalized is I - D^{-1/2} A D^{-1/2}.
	Normalized
	// Magnetic is the Hermitian magnetic Laplacian L_q (DAGs).
	Magnetic
	// PageRank is Chung's directed Laplacian of the PageRank walk. It is
	// dense, so it is always solved with the dense method.
	PageRank
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Combinatorial:
		return "combinatorial"
	case Normalized:
		return "normalized"
	case Magnetic:
		return "magnetic"
	case PageRank:
		return "pagerank"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Method selects the eigensolver.
type Method int

const (
	// Auto uses Dense up to Options.DenseLimit nodes and Iterative above.
	Auto Method = iota
	// Dense solves the dense matrix: the wanted eigenpairs by
	// tridiagonalisation and inverse iteration when k ≤ n/2, else by the
	// full decomposition (LAPACK Dsyev).
	Dense
	// Iterative is Chebyshev-filtered block subspace iteration with full
	// reorthogonalisation on the sparse operator (not for PageRank).
	Iterative
)

// DefaultDenseLimit is the largest node count Auto solves densely.
const DefaultDenseLimit = 600

// Options configures Eigen. The zero value asks for the combinatorial
// Laplacian with automatic method selection.
type Options struct {
	// Laplacian is the operator (default Combinatorial).
	Laplacian Kind
	// Q is the magnetic potential used when FixedQ is true. When FixedQ is
	// false, Magnetic uses QEff(g) per graph, as the reference code does.
	Q      float64
	FixedQ bool
	// Alpha is the PageRank damping factor (0 means DefaultAlpha).
	Alpha float64
	// Method picks the solver (default Auto).
	Method Method
	// DenseLimit is the largest n that Auto solves densely (0 means
	// DefaultDenseLimit). For Magnetic it applies to n, not 2n.
	DenseLimit int
	// Tol is the iterative solver's residual tolerance relative to the
	// spectral bound (0 means 1e-10).
	Tol float64
	// MaxIter bounds the iterative solver's filter-and-project steps (0
	// means 1000).
	MaxIter int
	// Seed seeds the iterative solver's random start block.
	Seed uint64
}

func (o Options) alpha() float64 {
	if o.Alpha == 0 {
		return DefaultAlpha
	}
	return o.Alpha
}

func (o Options) q(g *graph.Graph) float64 {
	if o.FixedQ {
		return o.Q
	}
	return QEff(g)
}

// Eig holds the k lowest eigenpairs of a graph Laplacian.
//
// Slot j < min(N, K) holds the j-th smallest eigenvalue and its unit
// eigenvector; slots j ≥ N (a graph with fewer than K nodes) are padding:
// Mask[j] is false and their value and vector entries are 0.
type Eig struct {
	N, K int
	// Values holds K eigenvalues in ascending order, clamped to be ≥ 0.
	Values []float64
	// Vectors is N x K row-major: Vectors[i*K+j] is entry i of eigenvector
	// j (its real part for the magnetic Laplacian).
	Vectors []float64
	// Imag is N x K row-major with the imaginary parts of the magnetic
	// eigenvectors; nil for the real Laplacians.
	Imag []float64
	// Mask[j] reports whether slot j holds a real eigenpair.
	Mask []bool
	// Q is the magnetic potential used (0 for the other kinds).
	Q float64
}

// ErrNoConvergence is returned (wrapped) when an eigensolver fails.
var ErrNoConvergence = errors.New("spectral: eigensolver did not converge")

// Solver computes eigenpairs while reusing its workspaces between calls,
// so that computing the spectra of many graphs allocates little. A Solver
// must not be used by several goroutines at once; use one per worker.
type Solver struct {
	a, w, work []float64
	re, im     []float64
	lworkN     int
	impl       lapackgonum.Implementation
	// partial solver (tridiag.go)
	pw      partialWork
	trdN    int
	trdWork []float64
	z       []float64
}

// NewSolver returns a Solver with empty workspaces.
func NewSolver() *Solver { return &Solver{} }

// Eigen returns the k lowest eigenpairs of the Laplacian of g chosen by
// opt; see Solver.Eigen. It allocates a fresh Solver; reuse one (or use
// Preprocess) for many graphs.
func Eigen(g *graph.Graph, k int, opt Options) (*Eig, error) {
	return NewSolver().Eigen(g, k, opt)
}

// Eigen returns the k lowest eigenpairs of the Laplacian of g selected by
// opt.Laplacian, in ascending order, eigenvalues clamped to ≥ 0, unit
// eigenvectors under the package's sign/phase convention, and padded to k
// slots with a mask when g has fewer than k nodes. k must be ≥ 0. The
// result does not share memory with s.
func (s *Solver) Eigen(g *graph.Graph, k int, opt Options) (*Eig, error) {
	if k < 0 {
		panic(fmt.Sprintf("spectral: negative k %d", k))
	}
	n := g.N()
	e := &Eig{N: n, K: k, Values: make([]float64, k), Vectors: make([]float64, n*k), Mask: make([]bool, k)}
	kk := min(k, n)
	for j := 0; j < kk; j++ {
		e.Mask[j] = true
	}
	if opt.Laplacian == Magnetic {
		e.Imag = make([]float64, n*k)
		e.Q = opt.q(g)
	}
	if kk == 0 {
		return e, nil
	}
	limit := opt.DenseLimit
	if limit <= 0 {
		limit = DefaultDenseLimit
	}
	dense := opt.Method == Dense || (opt.Method == Auto && n <= limit) || opt.Laplacian == PageRank
	var err error
	switch opt.Laplacian {
	case Combinatorial, Normalized, PageRank:
		if dense {
			err = s.realDense(e, g, opt)
		} else {
			err = s.realIterative(e, g, opt)
		}
	case Magnetic:
		if dense {
			err = s.magneticDense(e, g)
		} else {
			err = s.magneticIterative(e, g, opt)
		}
	default:
		panic(fmt.Sprintf("spectral: unknown Laplacian kind %d", opt.Laplacian))
	}
	if err != nil {
		return nil, err
	}
	for j := 0; j < kk; j++ {
		e.Values[j] = max(e.Values[j], 0)
	}
	return e, nil
}

// syev runs Dsyev on the n x n row-major matrix in s.a, leaving
// eigenvalues ascending in s.w and, if vectors, eigenvectors in the
// columns of s.a.
func (s *Solver) syev(n int, vectors bool) error {
	if cap(s.w) < n {
		s.w = make([]float64, n)
	}
	s.w = s.w[:n]
	if s.lworkN != n {
		q := []float64{0}
		s.impl.Dsyev(lapack.EVCompute, blas.Upper, n, s.a, max(1, n), s.w, q, -1)
		if lw := int(q[0]); cap(s.work) < lw {
			s.work = make([]float64, lw)
		} else {
			s.work = s.work[:lw]
		}
		s.lworkN = n
	}
	job := lapack.EVNone
	if vectors {
		job = lapack.EVCompute
	}
	if !s.impl.Dsyev(job, blas.Upper, n, s.a, max(1, n), s.w, s.work, len(s.work)) {
		return fmt.Errorf("%w (dense Dsyev, n=%d)", ErrNoConvergence, n)
	}
	return nil
}

// SymmetricEigen returns all eigenvalues of the symmetric n x n row-major
// matrix a in ascending order and, if wantVectors, its orthonormal
// eigenvectors as the columns of an n x n row-major matrix (vecs[i*n+j] is
// entry i of eigenvector j). Eigenvalues are not clamped and eigenvectors
// carry no sign convention (exactly what LAPACK returns). Only the upper
// triangle of a is read; a is not modified.
func (s *Solver) SymmetricEigen(a []float64, n int, wantVectors bool) (vals, vecs []float64, err error) {
	if len(a) != n*n {
		panic(fmt.Sprintf("spectral: matrix has %d entries, want %d", len(a), n*n))
	}
	s.a = append(s.a[:0], a...)
	if err := s.syev(n, wantVectors); err != nil {
		return nil, nil, err
	}
	vals = slices.Clone(s.w)
	if wantVectors {
		vecs = slices.Clone(s.a)
	}
	return vals, vecs, nil
}

func (s *Solver) realDense(e *Eig, g *graph.Graph, opt Options) error {
	n := g.N()
	switch opt.Laplacian {
	case Combinatorial:
		s.a = laplacianInto(s.a, g)
	case Normalized:
		s.a = normalizedInto(s.a, g)
	case PageRank:
		l, err := PageRankLaplacian(g, opt.alpha())
		if err != nil {
			return err
		}
		s.a = append(s.a[:0], l...)
	}
	k := e.K
	kk := min(k, n)
	if 2*kk <= n && n >= 8 {
		// Few eigenpairs: the partial solver, verified, else Dsyev.
		s.pw.orig = append(s.pw.orig[:0], s.a...)
		if s.lowestPartial(n, kk) {
			for j := 0; j < kk; j++ {
				e.Values[j] = s.w[j]
				for i := 0; i < n; i++ {
					e.Vectors[i*k+j] = s.z[i*kk+j]
				}
				fixSign(e.Vectors, n, k, j)
			}
			return nil
		}
		partialFallbacks.Add(1)
		s.a = append(s.a[:0], s.pw.orig...)
	}
	if err := s.syev(n, true); err != nil {
		return err
	}
	for j := 0; j < kk; j++ {
		e.Values[j] = s.w[j]
		for i := 0; i < n; i++ {
			e.Vectors[i*k+j] = s.a[i*n+j]
		}
		fixSign(e.Vectors, n, k, j)
	}
	return nil
}

// fixSign flips column j of the n x k row-major v so that its entry of
// largest magnitude (lowest index among near-ties) is positive.
func fixSign(v []float64, n, k, j int) {
	big := 0.0
	for i := 0; i < n; i++ {
		big = max(big, math.Abs(v[i*k+j]))
	}
	for i := 0; i < n; i++ {
		x := v[i*k+j]
		if math.Abs(x) >= big*(1-1e-9) {
			if x < 0 {
				for r := 0; r < n; r++ {
					v[r*k+j] = -v[r*k+j]
				}
			}
			return
		}
	}
}

// fixPhase multiplies the complex vector z by the unit phase that makes
// its entry of largest modulus (lowest index among near-ties) real and
// positive.
func fixPhase(z []complex128) {
	big := 0.0
	for _, x := range z {
		big = max(big, cmplx.Abs(x))
	}
	for k, x := range z {
		if a := cmplx.Abs(x); a >= big*(1-1e-9) && a > 0 {
			ph := cmplx.Conj(x) / complex(a, 0)
			for i := range z {
				z[i] *= ph
			}
			// The pivot exactly real: the product leaves an imaginary part
			// of the order of 1e-17 whose sign depends on the build.
			z[k] = complex(real(z[k]), 0)
			return
		}
	}
}

// embed writes the real symmetric embedding [[re, -im], [im, re]] of the
// n x n Hermitian matrix re + i·im into dst (2n x 2n row-major).
func embed(dst, re, im []float64, n int) []float64 {
	m := 2 * n
	dst = grow(dst, m*m)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			r, c := re[i*n+j], im[i*n+j]
			dst[i*m+j] = r
			dst[(i+n)*m+j+n] = r
			dst[i*m+j+n] = -c
			dst[(i+n)*m+j] = c
		}
	}
	return dst
}

func (s *Solver) magneticDense(e *Eig, g *graph.Graph) error {
	n := g.N()
	s.re, s.im = magneticInto(s.re, s.im, g, e.Q)
	s.a = embed(s.a, s.re, s.im, n)
	m := 2 * n
	want := min(e.K, n)
	bound := 0.0
	for i := 0; i < n; i++ {
		bound = max(bound, 2*s.re[i*n+i])
	}
	rq := func(z []complex128) float64 { return rayleigh(s.re, s.im, n, z) }
	// The 2·want lowest eigenpairs of the embedding (plus one pair so the
	// last cluster is seen whole when it is a simple pair).
	if kp := min(m, 2*want+2); 2*kp <= m && m >= 8 {
		s.pw.orig = append(s.pw.orig[:0], s.a...)
		if s.lowestPartial(m, kp) {
			vec := func(c int) []float64 {
				v := make([]float64, m)
				for i := 0; i < m; i++ {
					v[i] = s.z[i*kp+c]
				}
				return v
			}
			return complexFromEmbedding(e, n, s.w[:kp], kp, vec, want, bound, rq)
		}
		partialFallbacks.Add(1)
		s.a = append(s.a[:0], s.pw.orig...)
	}
	if err := s.syev(m, true); err != nil {
		return err
	}
	vec := func(c int) []float64 { // column c as a new contiguous slice
		v := make([]float64, m)
		for i := 0; i < m; i++ {
			v[i] = s.a[i*m+c]
		}
		return v
	}
	return complexFromEmbedding(e, n, s.w, m, vec, want, bound, rq)
}

// complexFromEmbedding extracts want complex eigenvectors of a Hermitian
// H (with Rayleigh quotient rq) from the ascending eigenpairs (vals[c], vec(c)),
// c < count, of its real embedding, clusters of near-equal eigenvalues at
// a time, and stores them with the package phase convention in e.
func complexFromEmbedding(e *Eig, n int, vals []float64, count int,
	vec func(int) []float64, want int, bound float64, rq func([]complex128) float64) error {
	tol := 1e-8 * max(1, bound)
	type cvec struct {
		z   []complex128
		val float64
	}
	var out []cvec
	for c := 0; c < count && len(out) < want; {
		end := c + 1
		for end < count && vals[end]-vals[end-1] <= tol {
			end++
		}
		cands := make([][]complex128, 0, end-c)
		for t := c; t < end; t++ {
			v := vec(t)
			z := make([]complex128, n)
			for i := 0; i < n; i++ {
				z[i] = complex(v[i], v[i+n])
			}
			cands = append(cands, z)
		}
		chosen := pivotedComplexGS(cands, (end-c+1)/2)
		var group []cvec
		for _, z := range chosen {
			group = append(group, cvec{z, rq(z)})
		}
		slices.SortStableFunc(group, func(a, b cvec) int {
			switch {
			case a.val < b.val:
				return -1
			case a.val > b.val:
				return 1
			}
			return 0
		})
		out = append(out, group...)
		c = end
	}
	if len(out) < want {
		return fmt.Errorf("%w: extracted %d of %d complex eigenvectors", ErrNoConvergence, len(out), want)
	}
	k := e.K
	for j := 0; j < want; j++ {
		z := out[j].z
		fixPhase(z)
		e.Values[j] = out[j].val
		for i := 0; i < n; i++ {
			e.Vectors[i*k+j] = real(z[i])
			e.Imag[i*k+j] = imag(z[i])
		}
	}
	return nil
}

// pivotedComplexGS returns up to maxOut orthonormal complex vectors
// spanning the complex span of cands, picking at each step the candidate
// with the largest component orthogonal to those already chosen.
func pivotedComplexGS(cands [][]complex128, maxOut int) [][]complex128 {
	var chosen [][]complex128
	res := make([][]complex128, len(cands))
	for i, z := range cands {
		res[i] = slices.Clone(z)
	}
	used := make([]bool, len(cands))
	for len(chosen) < maxOut {
		best, bestNorm := -1, 0.0
		for i, z := range res {
			if used[i] {
				continue
			}
			if nr := cnorm2(z); nr > bestNorm {
				best, bestNorm = i, nr
			}
		}
		if best < 0 || bestNorm < 1e-6 {
			break
		}
		used[best] = true
		q := res[best]
		sc := complex(1/math.Sqrt(bestNorm), 0)
		for i := range q {
			q[i] *= sc
		}
		// reorthogonalise once against earlier choices for accuracy
		for _, p := range chosen {
			d := cdot(p, q)
			for i := range q {
				q[i] -= d * p[i]
			}
		}
		if nr := math.Sqrt(cnorm2(q)); nr > 0 {
			for i := range q {
				q[i] /= complex(nr, 0)
			}
		}
		chosen = append(chosen, q)
		for i, z := range res {
			if used[i] {
				continue
			}
			d := cdot(q, z)
			for t := range z {
				z[t] -= d * q[t]
			}
		}
	}
	return chosen
}

// cdot returns the Hermitian inner product a^H b.
func cdot(a, b []complex128) complex128 {
	var s complex128
	for i := range a {
		s += cmplx.Conj(a[i]) * b[i]
	}
	return s
}

func cnorm2(a []complex128) float64 {
	s := 0.0
	for _, x := range a {
		s += real(x)*real(x) + imag(x)*imag(x)
	}
	return s
}

// rayleigh returns z^H H z for unit z and H = re + i·im.
func rayleigh(re, im []float64, n int, z []complex128) float64 {
	s := 0.0
	for i := 0; i < n; i++ {
		var hz complex128
		for j := 0; j < n; j++ {
			hz += complex(re[i*n+j], im[i*n+j]) * z[j]
		}
		s += real(cmplx.Conj(z[i]) * hz)
	}
	return s
}
