package spectral

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
)

// Partial dense eigensolver for the k lowest eigenpairs of a small dense
// symmetric matrix, the LAPACK Dsyevx recipe with the pieces gonum has:
// Householder tridiagonalisation (Dsytrd), eigenvalues of the tridiagonal
// matrix T by implicit QL/QR without vectors (Dsterf, per unreduced block),
// eigenvectors of T by inverse iteration with reorthogonalisation inside
// clusters (as Dstein), and back-transformation by the explicit Q
// (Dorgtr). It avoids accumulating all n eigenvectors in Dsteqr, which
// dominates Dsyev. Every result is verified (residual and orthogonality);
// if a check fails the caller falls back to Dsyev.

// partialFallbacks counts lowestPartial calls whose self-checks failed
// (read by tests).
var partialFallbacks atomic.Int64

// partialWork holds the partial solver's reusable buffers.
type partialWork struct {
	orig, d, e, tau, z, dd, ee []float64
	lu                         []float64 // 5 tridiagonal LU arrays of length m
	piv                        []bool
	vals                       []eigRef
	src                        *rand.PCG
	rng                        *rand.Rand
}

type eigRef struct {
	val        float64
	start, end int // block [start, end)
}

// partialEps is the unit roundoff behind the partial solver's tolerances.
const partialEps = 0x1p-52

// lowestPartial computes the k lowest eigenpairs of the symmetric n x n
// matrix in s.a (full, row-major), leaving eigenvalues ascending in
// s.w[:k] and eigenvectors as the columns of the n x k row-major s.z. It
// reports false (leaving s.a destroyed) if the solver's self-checks fail.
func (s *Solver) lowestPartial(n, k int) bool {
	p := &s.pw
	if p.rng == nil {
		p.src = rand.NewPCG(1, 2)
		p.rng = rand.New(p.src)
	}
	p.src.Seed(uint64(n), uint64(k)) // deterministic per problem
	s.tridiagonalize(n)
	tnorm := tridiagNorm(p.d, p.e, n)
	if !s.blockEigenvalues(n) {
		return false
	}
	sel := p.vals[:k]
	if !p.tridiagVectors(n, sel, tnorm) || !p.verifyTridiag(n, sel, tnorm) {
		return false
	}
	s.backTransform(n, sel)
	return true
}

// tridiagonalize reduces s.a to the tridiagonal T = Qᵀ A Q (Dsytrd, upper):
// diagonal p.d, off-diagonal p.e[:n-1], reflectors in s.a and p.tau. The
// workspace for Dsytrd and Dorgtr is sized once per n.
func (s *Solver) tridiagonalize(n int) {
	p := &s.pw
	p.d = resize(p.d, n)
	p.e = resize(p.e, n)
	p.tau = resize(p.tau, n)
	// Dsytrd + Dorgtr workspace
	if s.trdN != n {
		q := []float64{0}
		s.impl.Dsytrd(blas.Upper, n, s.a, n, p.d, p.e, p.tau, q, -1)
		lw := int(q[0])
		s.impl.Dorgtr(blas.Upper, n, s.a, n, p.tau, q, -1)
		lw = max(lw, int(q[0]))
		s.trdWork = resize(s.trdWork, lw)
		s.trdN = n
	}
	s.impl.Dsytrd(blas.Upper, n, s.a, n, p.d, p.e, p.tau, s.trdWork, len(s.trdWork))
}

// tridiagNorm returns the largest absolute row sum of the n x n
// tridiagonal matrix with diagonal d and off-diagonal e, a bound on ‖T‖,
// or 1 if T is zero.
func tridiagNorm(d, e []float64, n int) float64 {
	tnorm := 0.0
	for i := 0; i < n; i++ {
		r := math.Abs(d[i])
		if i > 0 {
			r += math.Abs(e[i-1])
		}
		if i+1 < n {
			r += math.Abs(e[i])
		}
		tnorm = max(tnorm, r)
	}
	if tnorm == 0 {
		tnorm = 1
	}
	return tnorm
}

// blockEigenvalues splits T (p.d, p.e) into unreduced blocks at negligible
// off-diagonal entries, finds every block's eigenvalues (Dsterf) and
// leaves them in p.vals, ascending (ties by block start). It reports false
// if Dsterf fails.
func (s *Solver) blockEigenvalues(n int) bool {
	p := &s.pw
	p.vals = p.vals[:0]
	start := 0
	for i := 0; i < n; i++ {
		if i+1 < n && math.Abs(p.e[i]) > partialEps*(math.Abs(p.d[i])+math.Abs(p.d[i+1])) {
			continue
		}
		m := i + 1 - start
		p.dd = append(p.dd[:0], p.d[start:i+1]...)
		p.ee = append(p.ee[:0], p.e[start:i]...)
		if m > 1 && !s.impl.Dsterf(m, p.dd, p.ee) {
			return false
		}
		for _, v := range p.dd {
			p.vals = append(p.vals, eigRef{v, start, i + 1})
		}
		start = i + 1
	}
	slices.SortStableFunc(p.vals, func(a, b eigRef) int {
		switch {
		case a.val < b.val:
			return -1
		case a.val > b.val:
			return 1
		}
		return a.start - b.start
	})
	return true
}

// vec returns eigenvector j of T, p.z[j*n : (j+1)*n] (only its block's
// entries are non-zero).
func (p *partialWork) vec(j, n int) []float64 { return p.z[j*n : (j+1)*n] }

// tridiagVectors computes the eigenvectors of T for the eigenvalues sel
// into p.z (vector j is p.vec(j, n)) by inverse iteration within each
// eigenvalue's block. It reports false if a vector vanishes or overflows.
func (p *partialWork) tridiagVectors(n int, sel []eigRef, tnorm float64) bool {
	p.z = resize(p.z, n*len(sel))
	clear(p.z)
	col := make([]float64, n) // one allocation per call, not per vector
	for j := range sel {
		if !p.inverseIterate(n, j, sel, col, tnorm) {
			return false
		}
	}
	return true
}

// inverseIterate computes eigenvector j of T for sel[j] by three steps of
// inverse iteration from a random start (col, of length n, is scratch),
// orthogonalised against the earlier vectors of its block as
// Dstein does, and stores it normalised in p.vec(j, n).
func (p *partialWork) inverseIterate(n, j int, sel []eigRef, col []float64, tnorm float64) bool {
	pertol := 10 * partialEps * tnorm
	ortol := 1e-3 * tnorm
	b0, b1 := sel[j].start, sel[j].end
	m := b1 - b0
	if m == 1 {
		p.vec(j, n)[b0] = 1
		return true
	}
	// Separate a shift equal to the previous eigenvalue of the same
	// block, so that inverse iteration finds a new direction.
	lam := sel[j].val
	for c := j - 1; c >= 0; c-- {
		if sel[c].start == b0 {
			if lam-sel[c].val < pertol {
				lam = sel[c].val + pertol
			}
			break
		}
	}
	x := col[:m]
	for i := range x {
		x[i] = p.rng.Float64()*2 - 1
	}
	p.factor(p.d[b0:b1], p.e[b0:b1-1], lam, partialEps*tnorm)
	for it := 0; it < 3; it++ {
		nx := math.Sqrt(dot(x, x))
		for i := range x {
			x[i] /= nx
		}
		p.solve(x)
		// Orthogonalise within the cluster, as Dstein.
		p.orth(x, n, j, sel, lam, ortol, false)
	}
	// Finally against every earlier vector of the block (the result
	// is verified by verifyTridiag).
	p.orth(x, n, j, sel, lam, ortol, true)
	nx := math.Sqrt(dot(x, x))
	if !(nx > 0) || math.IsInf(nx, 0) {
		return false
	}
	zj := p.vec(j, n)[b0:b1]
	for i := range zj {
		zj[i] = x[i] / nx
	}
	return true
}

// orth removes from x (block [b0, b0+len(x)), b0 = sel[j].start) its
// components along the earlier vectors c < j of the same block, all of
// them or only those with eigenvalues within ortol of lam.
func (p *partialWork) orth(x []float64, n, j int, sel []eigRef, lam, ortol float64, all bool) {
	b0 := sel[j].start
	for c := 0; c < j; c++ {
		if sel[c].start != b0 || (!all && lam-sel[c].val > ortol) {
			continue
		}
		zcb := p.vec(c, n)[b0 : b0+len(x)]
		axpy(x, -dot(zcb, x), zcb)
	}
}

// verifyTridiag checks ‖T z_j - λ_j z_j‖ and the orthonormality of the
// vectors within each block before they are trusted.
func (p *partialWork) verifyTridiag(n int, sel []eigRef, tnorm float64) bool {
	for j := range sel {
		z := p.vec(j, n)
		r := 0.0
		for i := 0; i < n; i++ {
			t := (p.d[i] - sel[j].val) * z[i]
			if i > 0 {
				t += p.e[i-1] * z[i-1]
			}
			if i+1 < n {
				t += p.e[i] * z[i+1]
			}
			r += t * t
		}
		if math.Sqrt(r) > 1e3*float64(n)*partialEps*tnorm {
			return false
		}
		for c := 0; c <= j; c++ {
			if sel[c].start != sel[j].start {
				continue // disjoint supports
			}
			g := dot(z, p.vec(c, n))
			if c == j {
				g--
			}
			if math.Abs(g) > 1e-10 {
				return false
			}
		}
	}
	return true
}

// backTransform forms Q (Dorgtr) in s.a and stores the eigenvectors of A,
// Q z_j, as the columns of the n x len(sel) row-major s.z, and the
// eigenvalues in s.w.
func (s *Solver) backTransform(n int, sel []eigRef) {
	p := &s.pw
	k := len(sel)
	s.impl.Dorgtr(blas.Upper, n, s.a, n, p.tau, s.trdWork, len(s.trdWork))
	s.z = resize(s.z, n*k)
	for i := 0; i < n; i++ {
		qi := s.a[i*n : (i+1)*n]
		for j := 0; j < k; j++ {
			b0, b1 := sel[j].start, sel[j].end
			s.z[i*k+j] = dot(qi[b0:b1], p.vec(j, n)[b0:b1])
		}
	}
	s.w = resize(s.w, k)
	for j := 0; j < k; j++ {
		s.w[j] = sel[j].val
	}
}

// factor computes the LU factorisation with partial pivoting of the
// tridiagonal T - λI (diagonal d, off-diagonal e), LAPACK dgttrf style,
// replacing pivots smaller than tiny by ±tiny.
func (p *partialWork) factor(d, e []float64, lam, tiny float64) {
	m := len(d)
	p.lu = resize(p.lu, 4*m)
	p.piv = p.piv[:0]
	dg, du, du2, dl := p.lu[:m], p.lu[m:2*m], p.lu[2*m:3*m], p.lu[3*m:4*m]
	for i := 0; i < m; i++ {
		dg[i] = d[i] - lam
		du2[i] = 0
		if i+1 < m {
			du[i], dl[i] = e[i], e[i]
		}
	}
	for i := 0; i+1 < m; i++ {
		if math.Abs(dg[i]) >= math.Abs(dl[i]) {
			p.piv = append(p.piv, false)
			if dg[i] == 0 {
				dg[i] = tiny
			}
			f := dl[i] / dg[i]
			dl[i] = f
			dg[i+1] -= f * du[i]
		} else {
			p.piv = append(p.piv, true)
			f := dg[i] / dl[i]
			dg[i] = dl[i]
			dl[i] = f
			t := du[i]
			du[i] = dg[i+1]
			dg[i+1] = t - f*dg[i+1]
			if i+2 < m {
				du2[i] = du[i+1]
				du[i+1] = -f * du[i+1]
			}
		}
	}
	for i := range dg {
		if math.Abs(dg[i]) < tiny {
			dg[i] = math.Copysign(tiny, dg[i])
		}
	}
}

// solve overwrites x with (T - λI)^{-1} x using the factorisation.
func (p *partialWork) solve(x []float64) {
	m := len(x)
	dg, du, du2, dl := p.lu[:m], p.lu[m:2*m], p.lu[2*m:3*m], p.lu[3*m:4*m]
	for i := 0; i+1 < m; i++ {
		if !p.piv[i] {
			x[i+1] -= dl[i] * x[i]
		} else {
			t := x[i]
			x[i] = x[i+1]
			x[i+1] = t - dl[i]*x[i]
		}
	}
	x[m-1] /= dg[m-1]
	if m > 1 {
		x[m-2] = (x[m-2] - du[m-2]*x[m-1]) / dg[m-2]
	}
	for i := m - 3; i >= 0; i-- {
		x[i] = (x[i] - du[i]*x[i+1] - du2[i]*x[i+2]) / dg[i]
	}
}

// resize returns s with length n, reusing its storage when possible (the
// contents are unspecified).
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
