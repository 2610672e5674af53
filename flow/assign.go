package flow

import "math"

// assignment solves the linear assignment problem for the n×n cost matrix
// c (row-major): it returns p with p[i] the column given to row i, such
// that the sum of c[i*n+p[i]] is minimal. It is the Hungarian method with
// potentials (Kuhn-Munkres, in the shortest-augmenting-path form), O(n³)
// time and O(n) extra memory beyond the scratch slices.
func assignment(c []float64, n int) []int {
	const inf = math.MaxFloat64
	// 1-based arrays; column 0 is a sentinel.
	u := make([]float64, n+1)
	v := make([]float64, n+1)
	match := make([]int, n+1) // match[j] = row matched to column j
	way := make([]int, n+1)
	minv := make([]float64, n+1)
	used := make([]bool, n+1)
	for i := 1; i <= n; i++ {
		match[0] = i
		j0 := 0
		for j := range minv {
			minv[j], used[j] = inf, false
		}
		for {
			used[j0] = true
			i0, delta, j1 := match[j0], inf, 0
			for j := 1; j <= n; j++ {
				if used[j] {
					continue
				}
				cur := c[(i0-1)*n+j-1] - u[i0] - v[j]
				if cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= n; j++ {
				if used[j] {
					u[match[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if match[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			match[j0] = match[j1]
			j0 = j1
		}
	}
	p := make([]int, n)
	for j := 1; j <= n; j++ {
		p[match[j]-1] = j - 1
	}
	return p
}

// couple permutes the noise tokens of each graph in place so that they are
// matched to the graph's data tokens at minimal total squared distance:
// x0 and x1 are (B, N, d) float64 data, sizes the graphs' token counts.
// The DiT is permutation-equivariant, so a per-graph permutation of the
// noise leaves the noise distribution unchanged while the straight paths
// from noise to data get shorter (equivariant optimal-transport coupling).
func couple(x0, x1 []float64, sizes []int, N, d int) {
	cost := make([]float64, 0, N*N)
	tmp := make([]float64, N*d)
	for b, n := range sizes {
		if n < 2 {
			continue
		}
		base := b * N * d
		cost = cost[:n*n]
		for i := range n { // noise token i
			xi := x0[base+i*d : base+(i+1)*d]
			for j := range n { // data token j
				yj := x1[base+j*d : base+(j+1)*d]
				s := 0.0
				for k, a := range xi {
					e := a - yj[k]
					s += e * e
				}
				cost[j*n+i] = s // row: data token, column: noise token
			}
		}
		p := assignment(cost, n)
		copy(tmp[:n*d], x0[base:base+n*d])
		for j := range n {
			copy(x0[base+j*d:base+(j+1)*d], tmp[p[j]*d:(p[j]+1)*d])
		}
	}
}
