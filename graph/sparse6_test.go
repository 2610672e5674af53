package graph

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSparse6Known decodes and encodes strings from formats.txt and the
// networkx documentation.
func TestSparse6Known(t *testing.T) {
	for _, tc := range []struct {
		s     string
		n     int
		edges [][2]int
	}{
		{":Fa@x^", 7, [][2]int{{0, 1}, {0, 2}, {1, 2}, {5, 6}}}, // formats.txt
		{":An", 2, [][2]int{{0, 1}}},                            // networkx to_sparse6_bytes(path_graph(2))
		{":?", 0, nil},
		{":@", 1, nil},
		{":CfV", 4, [][2]int{{0, 1}, {2, 3}}},
		{":CcJ", 4, [][2]int{{0, 1}, {0, 2}, {1, 2}}}, // n = 2^k: padded with a 0 bit, not a loop at 3
	} {
		g, err := ParseSparse6(tc.s + "\n")
		require.NoError(t, err, tc.s)
		want := fromEdges(tc.n, false, tc.edges...)
		sameGraph(t, want, g)
		assert.Equal(t, tc.s, FormatSparse6(want), "encoding %v", tc.edges)
	}
	g, err := ParseLine(">>sparse6<<:Fa@x^")
	require.NoError(t, err)
	assert.Equal(t, 4, g.M())
}

// TestSparse6RoundTripRandom encodes random graphs of 0 to 70 nodes (all
// the k boundaries and n = 2^k padding cases) and decodes them back.
func TestSparse6RoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 71 {
		for _, p := range []float64{0, 0.05, 0.3, 1} {
			g := randomGraph(rng, n, p, false)
			s := FormatSparse6(g)
			h, err := ParseSparse6(s)
			require.NoError(t, err, "n=%d p=%g %q", n, p, s)
			sameGraph(t, g, h)
		}
	}
	// Graphs whose last edge ends at n-2, for n = 2, 4, 8, 16, 32: the
	// padding must not read as a loop at n-1.
	for _, n := range []int{2, 4, 8, 16, 32} {
		g := New(n)
		if n > 2 {
			g.MustAddEdge(0, n-2)
		}
		h, err := ParseSparse6(FormatSparse6(g))
		require.NoError(t, err, "n=%d", n)
		sameGraph(t, g, h)
	}
}

func TestSparse6Errors(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{":A_", "edge 0-1 appears twice"},      // networkx reads a multigraph
		{":A?", "byte 3: self-loop at node 0"}, // b=0 x=0 at v=0
		{";Fa@x^", "incremental sparse6"},      // not supported
		{"Fa@x^", "does not start with ':'"},   // graph6 given to the sparse6 reader
		{":", "empty size field"},              // no N(n)
		{":F a", "byte 3 is ' '"},              // outside '?'..'~'
		{":~?", "size field truncated"},        // long N(n) cut short
		{":~~~~~~~~", "more than this reader supports"},
	} {
		_, err := ParseSparse6(tc.s)
		require.Error(t, err, tc.s)
		assert.Contains(t, err.Error(), tc.want, tc.s)
		assert.True(t, strings.HasPrefix(err.Error(), "sparse6: "), err.Error())
	}
	_, err := ReadGraphs(strings.NewReader("Bg\n:A_\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 2: sparse6: edge 0-1 appears twice")
}

// TestSparse6Networkx decodes and encodes the strings networkx 3.6.1 wrote
// for 67 random and edge-case graphs (testdata/sparse6_networkx.tsv): both
// directions must agree with it byte for byte.
func TestSparse6Networkx(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "sparse6_networkx.tsv"))
	require.NoError(t, err)
	cases := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		require.Len(t, f, 3, line)
		n, err := strconv.Atoi(f[0])
		require.NoError(t, err)
		want := New(n)
		if f[1] != "-" {
			for _, e := range strings.Fields(f[1]) {
				u, v, _ := strings.Cut(e, "-")
				a, err1 := strconv.Atoi(u)
				c, err2 := strconv.Atoi(v)
				require.NoError(t, errors.Join(err1, err2), e)
				want.MustAddEdge(a, c)
			}
		}
		got, err := ParseSparse6(f[2])
		require.NoError(t, err, f[2])
		sameGraph(t, want, got)
		assert.Equal(t, f[2], FormatSparse6(want), "n=%d %s", n, f[1])
		cases++
	}
	assert.Equal(t, 67, cases)
}
