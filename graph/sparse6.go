package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// sparse6 as defined by Brendan McKay's formats.txt and as networkx reads
// and writes it (from_sparse6_bytes / to_sparse6_bytes):
//
//	sparse6 = ':' N(n) R(x), x = b[0] x[0] b[1] x[1] ...
//
// with k = max(1, bits needed for n-1), each b one bit and each x k bits.
// Decoding keeps a current vertex v = 0: b = 1 increments v; then x > v
// sets v = x, and x <= v is the edge {x, v}. The last byte is padded with
// 1 bits, which decode to a jump past the last vertex (x >= n or v >= n)
// and end the list; when that would instead add an edge (n = 2^k for
// small k), the writer pads with one 0 bit first.

const sparse6Header = ">>sparse6<<"

// sparse6K returns the bit width k of the x fields for n nodes.
func sparse6K(n int) int {
	k := 1
	for 1<<k < n {
		k++
	}
	return k
}

// ParseSparse6 decodes one sparse6 string (':' followed by N(n) and the
// edge list; a trailing newline and a leading ">>sparse6<<" header are
// allowed) into an undirected graph. Self-loops and repeated edges, which
// sparse6 can express but Graph cannot hold, are errors naming the byte
// where they are encoded, as are bytes outside '?'..'~'. Since a few bytes
// of sparse6 can declare any number of nodes, more than DefaultMaxNodes is
// an error too. Incremental sparse6 (';') is not supported.
func ParseSparse6(line string) (*Graph, error) {
	return parseSparse6(line, DefaultMaxNodes)
}

// parseSparse6 is ParseSparse6 with a node limit.
func parseSparse6(line string, maxNodes int) (*Graph, error) {
	s := strings.TrimPrefix(strings.TrimRight(line, "\r\n"), sparse6Header)
	switch {
	case len(s) > 0 && s[0] == ';':
		return nil, errors.New("sparse6: incremental sparse6 (';') is not supported")
	case len(s) == 0 || s[0] != ':':
		return nil, errors.New("sparse6: string does not start with ':'")
	}
	if err := checkChars(s, 1); err != nil {
		return nil, fmt.Errorf("sparse6: %w", err)
	}
	n, used, err := parseN(s[1:])
	if err != nil {
		return nil, fmt.Errorf("sparse6: %w", err)
	}
	if n > maxNodes {
		return nil, fmt.Errorf("sparse6: %d nodes is more than the limit of %d", n, maxNodes)
	}
	start := 1 + used
	data := s[start:]
	k := sparse6K(n)
	nbits := 6 * len(data)
	bit := func(p int) int { return int(data[p/6]-63) >> (5 - p%6) & 1 }
	var edges []Edge
	v := 0
	for p := 0; p+1+k <= nbits; {
		at := start + p/6 + 1 // 1-based byte where this pair begins
		b := bit(p)
		x := 0
		for i := 1; i <= k; i++ {
			x = x<<1 | bit(p+i)
		}
		p += 1 + k
		if b == 1 {
			v++
		}
		if x >= n || v >= n {
			break // padding
		}
		if x > v {
			v = x
			continue
		}
		if x == v {
			return nil, fmt.Errorf("sparse6: byte %d: self-loop at node %d (graphs here have none)", at, v)
		}
		edges = append(edges, Edge{From: x, To: v})
	}
	keys := make([][2]int, len(edges))
	for i, e := range edges {
		keys[i] = [2]int{e.From, e.To}
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			return nil, fmt.Errorf("sparse6: edge %d-%d appears twice (a multigraph; graphs here have single edges)", keys[i][0], keys[i][1])
		}
	}
	return FromEdges(n, false, edges)
}

// FormatSparse6 encodes the undirected graph g as a sparse6 string without
// header or newline, byte for byte as networkx's to_sparse6_bytes (with
// header=False, newline stripped). Labels are not represented. It panics
// if g is directed.
func FormatSparse6(g *Graph) string {
	return string(AppendSparse6(nil, g))
}

// AppendSparse6 appends the sparse6 encoding of the undirected graph g to
// b and returns the extended slice.
func AppendSparse6(b []byte, g *Graph) []byte {
	if g.directed {
		panic("graph: FormatSparse6 of a directed graph")
	}
	n := g.N()
	k := sparse6K(n)
	b = append(b, ':')
	b = appendN(b, n)
	var bits []byte
	enc := func(x int) {
		for i := k - 1; i >= 0; i-- {
			bits = append(bits, byte(x>>i&1))
		}
	}
	// Edges as (larger, smaller), in increasing order of the larger end,
	// then the smaller: the order of g's sorted adjacency lists.
	cur := 0
	for v := range n {
		for _, u := range g.out[v] {
			if u >= v {
				break
			}
			switch v {
			case cur:
				bits = append(bits, 0)
			case cur + 1:
				cur++
				bits = append(bits, 1)
			default:
				cur = v
				bits = append(bits, 1)
				enc(v)
				bits = append(bits, 0)
			}
			enc(u)
		}
	}
	pad := (6 - len(bits)%6) % 6
	if k < 6 && n == 1<<k && pad >= k && cur < n-1 {
		// k or more 1s of padding decode as b = 1, x = n-1, which from
		// cur = n-2 is a loop at n-1: a 0 bit first makes it a harmless
		// jump (as formats.txt, nauty and networkx do).
		bits = append(bits, 0)
		pad = (6 - len(bits)%6) % 6
	}
	for range pad {
		bits = append(bits, 1)
	}
	for i := 0; i < len(bits); i += 6 {
		c := byte(0)
		for _, x := range bits[i : i+6] {
			c = c<<1 | x
		}
		b = append(b, c+63)
	}
	return b
}
