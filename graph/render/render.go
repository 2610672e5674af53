// Package render draws graphs as SVG: one graph, or a grid of many (for
// looking at generated samples next to training graphs).
//
// Node positions come from a layout: spectral (the Laplacian eigenvectors
// of the two smallest non-zero eigenvalues), Fruchterman-Reingold force
// directed (seeded), layered (for DAGs: depth = longest path from a
// source) or a circle. Directed edges get arrowheads; nodes are coloured
// by their label and edges by theirs.
package render

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"lgflow/graph"
)

// Layout selects how node positions are computed.
type Layout int

const (
	// LayoutAuto uses LayoutLayered for DAGs and LayoutForce otherwise.
	LayoutAuto Layout = iota
	// LayoutSpectral places node u at (v1[u], v2[u]) for the Laplacian
	// eigenvectors of the two smallest non-zero eigenvalues, per connected
	// component (components are placed side by side).
	LayoutSpectral
	// LayoutForce is Fruchterman-Reingold, started from the spectral
	// layout of each component (plus a seeded jitter).
	LayoutForce
	// LayoutLayered puts each node of a DAG in the row of its depth (the
	// longest path from a source), ordered within rows by the mean column
	// of their predecessors. Cyclic graphs fall back to LayoutForce.
	LayoutLayered
	// LayoutCircle puts the nodes on a circle in index order.
	LayoutCircle
)

// Options configures drawing. The zero value is usable.
type Options struct {
	// Width and Height of one graph's panel in pixels (default 320 each).
	Width, Height float64
	// NodeRadius in pixels (default: from the panel size and node count).
	NodeRadius float64
	// Layout picks the layout (default LayoutAuto).
	Layout Layout
	// Seed makes the force layout's jitter reproducible.
	Seed uint64
	// Iterations of the force layout (default 250).
	Iterations int
	// Palette colours node label l with Palette[l mod len] and edge label
	// l > 0 likewise (default: the Tableau 10 colours).
	Palette []string
	// NodeColor fills unlabelled nodes (default "#4e79a7").
	NodeColor string
	// EdgeColor draws label-0 edges (default "#555555").
	EdgeColor string
	// ShowIDs writes each node's index inside it.
	ShowIDs bool
	// Title is drawn above a single graph. GridSVG uses Titles instead.
	Title string
	// Titles label the grid cells (default "#0", "#1", ...).
	Titles []string
}

var tableau10 = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func (o Options) withDefaults() Options {
	if o.Width <= 0 {
		o.Width = 320
	}
	if o.Height <= 0 {
		o.Height = 320
	}
	if o.Iterations <= 0 {
		o.Iterations = 250
	}
	if len(o.Palette) == 0 {
		o.Palette = tableau10
	}
	if o.NodeColor == "" {
		o.NodeColor = "#4e79a7"
	}
	if o.EdgeColor == "" {
		o.EdgeColor = "#555555"
	}
	return o
}

// Positions returns the layout of g as points in the unit square [0,1]²
// (see Layout). The result depends only on g and opt.
func Positions(g *graph.Graph, opt Options) [][2]float64 {
	opt = opt.withDefaults()
	n := g.N()
	if n == 0 {
		return nil
	}
	var p [][2]float64
	switch opt.Layout {
	case LayoutCircle:
		p = circle(n)
	case LayoutSpectral:
		p = spectralComponents(g)
	case LayoutLayered:
		p = layered(g)
	case LayoutAuto:
		if graph.IsDAG(g) {
			p = layered(g)
		}
	}
	if p == nil {
		p = force(g, spectralComponents(g), opt)
		normalise(p)
	} else {
		normaliseAxes(p)
	}
	return p
}

func circle(n int) [][2]float64 {
	p := make([][2]float64, n)
	for i := range p {
		a := 2*math.Pi*float64(i)/float64(n) - math.Pi/2
		p[i] = [2]float64{math.Cos(a), math.Sin(a)}
	}
	return p
}

// spectral lays out one connected graph with the eigenvectors of the
// second and third smallest Laplacian eigenvalues.
func spectral(g *graph.Graph) [][2]float64 {
	n := g.N()
	switch n {
	case 1:
		return [][2]float64{{0, 0}}
	case 2:
		return [][2]float64{{-1, 0}, {1, 0}}
	}
	l := mat.NewSymDense(n, nil)
	for u := 0; u < n; u++ {
		for _, v := range g.Neighbors(u) {
			l.SetSym(u, v, -1)
		}
		l.SetSym(u, u, float64(g.Degree(u)))
	}
	var es mat.EigenSym
	if !es.Factorize(l, true) {
		return circle(n)
	}
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	p := make([][2]float64, n)
	for u := range p {
		p[u][0] = vecs.At(u, 1)
		if n > 2 {
			p[u][1] = vecs.At(u, 2)
		}
	}
	// Fix the eigenvectors' signs so the picture is deterministic.
	for k := 0; k < 2; k++ {
		s := 0.0
		for u := range p {
			s += p[u][k] * float64(u+1)
		}
		if s < 0 {
			for u := range p {
				p[u][k] = -p[u][k]
			}
		}
	}
	return p
}

// spectralComponents lays out each (weakly) connected component
// spectrally in its own unit cell, the cells side by side on a square-ish
// grid, larger components first.
func spectralComponents(g *graph.Graph) [][2]float64 {
	u := g
	if g.Directed() {
		u = g.Undirected()
	}
	comps := graph.Components(u)
	slices.SortStableFunc(comps, func(a, b []int) int { return len(b) - len(a) })
	cols := int(math.Ceil(math.Sqrt(float64(len(comps)))))
	p := make([][2]float64, g.N())
	for ci, c := range comps {
		sub := graph.New(len(c))
		index := make(map[int]int, len(c))
		for i, v := range c {
			index[v] = i
		}
		for _, a := range c {
			for _, b := range u.Neighbors(a) {
				if a < b {
					sub.MustAddEdge(index[a], index[b])
				}
			}
		}
		q := spectral(sub)
		normalise(q)
		scale := 1.0
		if ci > 0 {
			// smaller components get smaller cells
			scale = math.Sqrt(float64(len(c)) / float64(len(comps[0])))
			scale = max(scale, 0.3)
		}
		ox, oy := float64(ci%cols)*1.2, float64(ci/cols)*1.2
		for i, v := range c {
			p[v] = [2]float64{ox + 0.6 + (q[i][0]-0.5)*scale, oy + 0.6 + (q[i][1]-0.5)*scale}
		}
	}
	return p
}

// force runs Fruchterman-Reingold from the start positions.
func force(g *graph.Graph, start [][2]float64, opt Options) [][2]float64 {
	n := g.N()
	p := slices.Clone(start)
	normalise(p)
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6c67))
	for i := range p {
		p[i][0] += (rng.Float64() - 0.5) * 1e-3
		p[i][1] += (rng.Float64() - 0.5) * 1e-3
	}
	k := math.Sqrt(1 / float64(n))
	disp := make([][2]float64, n)
	temp := 0.1
	es := g.Edges()
	for it := 0; it < opt.Iterations; it++ {
		clear(disp)
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				dx, dy := p[a][0]-p[b][0], p[a][1]-p[b][1]
				d2 := max(dx*dx+dy*dy, 1e-9)
				f := k * k / d2 // (k²/d) along the unit vector (dx,dy)/d
				disp[a][0] += dx * f
				disp[a][1] += dy * f
				disp[b][0] -= dx * f
				disp[b][1] -= dy * f
			}
		}
		for _, e := range es {
			a, b := e.From, e.To
			dx, dy := p[a][0]-p[b][0], p[a][1]-p[b][1]
			d := math.Sqrt(dx*dx + dy*dy)
			f := d / k // (d²/k) along the unit vector
			disp[a][0] -= dx * f
			disp[a][1] -= dy * f
			disp[b][0] += dx * f
			disp[b][1] += dy * f
		}
		for a := range p {
			// gentle gravity keeps components together
			disp[a][0] -= (p[a][0] - 0.5) * 2 * k
			disp[a][1] -= (p[a][1] - 0.5) * 2 * k
			d := math.Hypot(disp[a][0], disp[a][1])
			if d > 0 {
				s := min(d, temp) / d
				p[a][0] += disp[a][0] * s
				p[a][1] += disp[a][1] * s
			}
		}
		temp = 0.1 * (1 - float64(it+1)/float64(opt.Iterations))
		temp = max(temp, 0.002)
	}
	return p
}

// layered lays out a DAG by depth; nil if g has a cycle.
func layered(g *graph.Graph) [][2]float64 {
	order, err := graph.TopologicalOrder(g)
	if err != nil {
		return nil
	}
	n := g.N()
	depth := make([]int, n)
	maxD := 0
	for _, u := range order {
		for _, v := range g.Neighbors(u) {
			depth[v] = max(depth[v], depth[u]+1)
		}
		maxD = max(maxD, depth[u])
	}
	rows := make([][]int, maxD+1)
	for _, u := range order {
		rows[depth[u]] = append(rows[depth[u]], u)
	}
	x := make([]float64, n)
	p := make([][2]float64, n)
	for d, row := range rows {
		if d > 0 {
			key := make(map[int]float64, len(row))
			for _, u := range row {
				s, c := 0.0, 0
				for _, v := range g.InNeighbors(u) {
					s += x[v]
					c++
				}
				key[u] = s / float64(max(c, 1))
			}
			slices.SortStableFunc(row, func(a, b int) int {
				switch {
				case key[a] < key[b]:
					return -1
				case key[a] > key[b]:
					return 1
				}
				return 0
			})
		}
		for i, u := range row {
			x[u] = (float64(i) + 0.5) / float64(len(row))
			p[u] = [2]float64{x[u], float64(d)}
		}
	}
	return p
}

// normalise maps the points into [0,1]² keeping the aspect ratio, centred.
func normalise(p [][2]float64) {
	if len(p) == 0 {
		return
	}
	lo, hi := p[0], p[0]
	for _, q := range p {
		for k := 0; k < 2; k++ {
			lo[k] = min(lo[k], q[k])
			hi[k] = max(hi[k], q[k])
		}
	}
	span := max(hi[0]-lo[0], hi[1]-lo[1])
	if span == 0 {
		for i := range p {
			p[i] = [2]float64{0.5, 0.5}
		}
		return
	}
	for i := range p {
		for k := 0; k < 2; k++ {
			p[i][k] = 0.5 + (p[i][k]-(lo[k]+hi[k])/2)/span
		}
	}
}

// normaliseAxes maps each coordinate into [0,1] separately (0.5 where it
// is constant).
func normaliseAxes(p [][2]float64) {
	for k := 0; k < 2; k++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, q := range p {
			lo, hi = min(lo, q[k]), max(hi, q[k])
		}
		for i := range p {
			if hi > lo {
				p[i][k] = (p[i][k] - lo) / (hi - lo)
			} else {
				p[i][k] = 0.5
			}
		}
	}
}

// nodeRadius picks a radius in pixels: at most 10, and at most 0.4 times
// the median distance from a node to its nearest neighbour in the panel.
func nodeRadius(p [][2]float64, width, height float64) float64 {
	n := len(p)
	r := math.Min(10, math.Min(width, height)/(4*math.Sqrt(float64(n)+4)))
	if n < 2 {
		return r
	}
	nn := make([]float64, n)
	for a := range p {
		best := math.Inf(1)
		for b := range p {
			if a != b {
				dx, dy := (p[a][0]-p[b][0])*width, (p[a][1]-p[b][1])*height
				best = math.Min(best, dx*dx+dy*dy)
			}
		}
		nn[a] = math.Sqrt(best)
	}
	slices.Sort(nn)
	return math.Max(1.5, math.Min(r, 0.4*nn[n/2]))
}

// SVG writes a drawing of g as a standalone SVG document.
func SVG(w io.Writer, g *graph.Graph, opt Options) error {
	opt = opt.withDefaults()
	titleH := 0.0
	if opt.Title != "" {
		titleH = 20
	}
	bw := bufio.NewWriter(w)
	header(bw, opt.Width, opt.Height+titleH, opt)
	if opt.Title != "" {
		fmt.Fprintf(bw, "<text x=\"%.1f\" y=\"15\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"13\">%s</text>\n",
			opt.Width/2, html.EscapeString(opt.Title))
	}
	panel(bw, g, 0, titleH, opt)
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// GridSVG writes the graphs as a grid with cols columns (cols <= 0: a
// square-ish grid), each panel Width × Height with its title above it.
func GridSVG(w io.Writer, gs []*graph.Graph, cols int, opt Options) error {
	opt = opt.withDefaults()
	if len(gs) == 0 {
		return errors.New("render: no graphs to draw")
	}
	if cols <= 0 {
		cols = int(math.Ceil(math.Sqrt(float64(len(gs)))))
	}
	cols = min(cols, len(gs))
	rows := (len(gs) + cols - 1) / cols
	const titleH = 18
	cellH := opt.Height + titleH
	bw := bufio.NewWriter(w)
	header(bw, float64(cols)*opt.Width, float64(rows)*cellH, opt)
	for i, g := range gs {
		x0, y0 := float64(i%cols)*opt.Width, float64(i/cols)*cellH
		title := fmt.Sprintf("#%d", i)
		if i < len(opt.Titles) {
			title = opt.Titles[i]
		}
		fmt.Fprintf(bw, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#dddddd\"/>\n",
			x0, y0, opt.Width, cellH)
		fmt.Fprintf(bw, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"12\">%s</text>\n",
			x0+opt.Width/2, y0+13, html.EscapeString(title+" ("+fmt.Sprint(g.N())+" nodes, "+fmt.Sprint(g.M())+" edges)"))
		o := opt
		o.Seed = opt.Seed + uint64(i)
		panel(bw, g, x0, y0+titleH, o)
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

func header(w *bufio.Writer, width, height float64, opt Options) {
	fmt.Fprintf(w, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
		width, height, width, height)
	w.WriteString("<defs>\n")
	markers := append([]string{opt.EdgeColor}, opt.Palette...)
	for i, c := range markers {
		fmt.Fprintf(w, "<marker id=\"arrow%d\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\" markerUnits=\"userSpaceOnUse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"%s\"/></marker>\n", i, c)
	}
	w.WriteString("</defs>\n")
	fmt.Fprintf(w, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height)
}

// panel draws g into the Width × Height box at (x0, y0).
func panel(w *bufio.Writer, g *graph.Graph, x0, y0 float64, opt Options) {
	n := g.N()
	if n == 0 {
		return
	}
	p := Positions(g, opt)
	r := opt.NodeRadius
	if r <= 0 {
		r = nodeRadius(p, opt.Width, opt.Height)
	}
	margin := r + 4
	sx := func(u int) float64 { return x0 + margin + p[u][0]*(opt.Width-2*margin) }
	sy := func(u int) float64 { return y0 + margin + p[u][1]*(opt.Height-2*margin) }
	stroke := math.Max(0.6, math.Min(1.5, r/4))
	fmt.Fprintf(w, "<g stroke-width=\"%.2f\">\n", stroke)
	for _, e := range g.Edges() {
		x1, y1, x2, y2 := sx(e.From), sy(e.From), sx(e.To), sy(e.To)
		colour, marker := opt.EdgeColor, 0
		if e.Label != 0 {
			li := ((e.Label % len(opt.Palette)) + len(opt.Palette)) % len(opt.Palette)
			colour, marker = opt.Palette[li], li+1
		}
		if g.Directed() {
			// End the line at the target's rim so the arrowhead shows.
			dx, dy := x2-x1, y2-y1
			d := math.Hypot(dx, dy)
			if d > 2*r {
				x2 -= dx / d * (r + stroke)
				y2 -= dy / d * (r + stroke)
			}
			fmt.Fprintf(w, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" marker-end=\"url(#arrow%d)\"/>\n",
				x1, y1, x2, y2, colour, marker)
		} else {
			fmt.Fprintf(w, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\"/>\n", x1, y1, x2, y2, colour)
		}
	}
	w.WriteString("</g>\n<g stroke=\"#222222\" stroke-width=\"0.6\">\n")
	for u := 0; u < n; u++ {
		fill := opt.NodeColor
		if g.NodeLabels != nil {
			l := g.NodeLabels[u]
			fill = opt.Palette[((l%len(opt.Palette))+len(opt.Palette))%len(opt.Palette)]
		}
		fmt.Fprintf(w, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\" fill=\"%s\"><title>node %d", sx(u), sy(u), r, fill, u)
		if g.NodeLabels != nil {
			fmt.Fprintf(w, ", label %d", g.NodeLabels[u])
		}
		w.WriteString("</title></circle>\n")
		if opt.ShowIDs {
			fmt.Fprintf(w, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" dominant-baseline=\"central\" font-family=\"sans-serif\" font-size=\"%.1f\" fill=\"white\" stroke=\"none\">%d</text>\n",
				sx(u), sy(u), r*1.1, u)
		}
	}
	w.WriteString("</g>\n")
}
