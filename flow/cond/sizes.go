package cond

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// MaxSizes is the most training graphs a Sizes table keeps: a larger set
// is thinned to every k-th graph, which leaves p(n | condition) as it was
// up to sampling noise and the checkpoint small.
const MaxSizes = 8192

// Sizes holds the node count and the condition of each graph of a
// conditional flow's training set (or of an even thinning of it,
// MaxSizes), so that a graph sampled under a condition takes its node
// count from the training graphs with that condition, p(n | c), rather
// than from all of them. A condition often fixes the size: a requested
// edge count cannot be met at every node count, and a class may have
// graphs of its own sizes. NewSizes builds it; Candidates applies it.
type Sizes struct {
	// Nodes holds each graph's node count.
	Nodes []int `json:"nodes"`
	// Labels holds each graph's label index (nil without labels).
	Labels []int `json:"labels,omitempty"`
	// Props holds each graph's property values, unstandardised (nil
	// without properties).
	Props [][]float64 `json:"props,omitempty"`
}

// NewSizes returns the Sizes table of a training set: c its conditions
// and nodes each graph's node count, in the same order.
func NewSizes(c *Set, nodes []int) (*Sizes, error) {
	if c == nil {
		return nil, errors.New("cond: sizes of a training set without conditions")
	}
	if err := c.Check(len(nodes)); err != nil {
		return nil, err
	}
	step := (len(nodes) + MaxSizes - 1) / MaxSizes
	z := &Sizes{}
	for i := 0; i < len(nodes); i += max(step, 1) {
		z.Nodes = append(z.Nodes, nodes[i])
		if c.Labels != nil {
			z.Labels = append(z.Labels, c.Labels[i])
		}
		if c.Props != nil {
			z.Props = append(z.Props, slices.Clone(c.Props[i]))
		}
	}
	if err := z.Check(c.Schema); err != nil {
		return nil, err
	}
	return z, nil
}

// Check reports whether z is a valid table for schema s: at least one
// graph, positive node counts, and a label and every property for each
// graph, as s has them.
func (z *Sizes) Check(s *Schema) error {
	set := &Set{Schema: s, Labels: z.Labels, Props: z.Props}
	switch {
	case len(z.Nodes) == 0:
		return errors.New("cond: a node-count table without graphs")
	case len(z.Nodes) > MaxSizes:
		return fmt.Errorf("cond: a node-count table of %d graphs, more than %d", len(z.Nodes), MaxSizes)
	}
	for i, n := range z.Nodes {
		if n <= 0 {
			return fmt.Errorf("cond: graph %d of the node-count table has %d nodes", i, n)
		}
	}
	return set.Check(len(z.Nodes))
}

// Neighbours returns how many of m training graphs with a requested
// condition's label Candidates draws a node count from, when the
// condition has properties: the ⌈√m⌉ nearest, a number that grows with
// the data (so the draw follows p(n | c) more closely) yet stays a
// vanishing fraction of it (so it stays local).
func Neighbours(m int) int { return max(1, int(math.Ceil(math.Sqrt(float64(m))))) }

// Candidates returns the node counts a graph sampled under condition v
// draws from, one per training graph that fits v: those with v's label
// and, when s has properties, of these the Neighbours(m) nearest to v's
// properties by standardised Euclidean distance (ties to the earlier
// graph). v must be a valid, non-null condition of s (Schema.Check);
// with no training graph of v's label, Candidates returns nil.
func (z *Sizes) Candidates(s *Schema, v Value) []int {
	var idx []int
	for i := range z.Nodes {
		if z.Labels == nil || s.Labels[z.Labels[i]] == v.Label {
			idx = append(idx, i)
		}
	}
	if z.Props == nil || len(idx) == 0 {
		out := make([]int, len(idx))
		for k, i := range idx {
			out[k] = z.Nodes[i]
		}
		return out
	}
	dist := make([]float64, len(z.Nodes))
	for _, i := range idx {
		var d float64
		for j, p := range s.Properties {
			x := (z.Props[i][j] - v.Props[j]) / p.Std
			d += x * x
		}
		dist[i] = d
	}
	sort.SliceStable(idx, func(a, b int) bool { return dist[idx[a]] < dist[idx[b]] })
	idx = idx[:Neighbours(len(idx))]
	out := make([]int, len(idx))
	for k, i := range idx {
		out[k] = z.Nodes[i]
	}
	return out
}
