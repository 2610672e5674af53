package graph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"
)

// graph6 and digraph6 as defined by Brendan McKay's formats.txt and as
// networkx reads and writes them (to_graph6_bytes / from_graph6_bytes with
// header=False, and the digraph6 equivalents):
//
//	graph6   = N(n) R(x), x = upper triangle column by column:
//	           x(0,1), x(0,2), x(1,2), x(0,3), x(1,3), x(2,3), ...
//	digraph6 = '&' N(n) R(x), x = the full n*n matrix row by row.
//
// N(n) is one byte n+63 for n <= 62, byte 126 followed by three 6-bit
// big-endian groups for n <= 258047, and bytes 126 126 followed by six
// groups above that. R(x) pads x with zeros to a multiple of 6 bits and
// writes each group of 6 (most significant first) as the byte value + 63.

const (
	graph6Header   = ">>graph6<<"
	digraph6Header = ">>digraph6<<"
	maxGraph6N     = 68719476735
	// maxParseN keeps n*n within int64; such a graph would need an
	// exabyte-long line anyway.
	maxParseN = 1 << 31
)

// appendN appends the graph6 size field N(n).
func appendN(b []byte, n int) []byte {
	switch {
	case n < 0 || n > maxGraph6N:
		panic(fmt.Sprintf("graph: graph6 cannot encode %d nodes", n))
	case n <= 62:
		return append(b, byte(n+63))
	case n <= 258047:
		return append(b, 126, byte(n>>12&63+63), byte(n>>6&63+63), byte(n&63+63))
	default:
		b = append(b, 126, 126)
		for s := 30; s >= 0; s -= 6 {
			b = append(b, byte(n>>s&63+63))
		}
		return b
	}
}

// parseN decodes N(n) at the start of s and returns n and the number of
// bytes it used.
func parseN(s string) (n, used int, err error) {
	if len(s) == 0 {
		return 0, 0, errors.New("empty size field")
	}
	if s[0] != 126 {
		return int(s[0]) - 63, 1, nil
	}
	k, start := 3, 1
	if len(s) > 1 && s[1] == 126 {
		k, start = 6, 2
	}
	if len(s) < start+k {
		return 0, 0, fmt.Errorf("size field truncated: needs %d bytes, line has %d", start+k, len(s))
	}
	for i := start; i < start+k; i++ {
		n = n<<6 | int(s[i]-63)
	}
	if n > maxParseN {
		return 0, 0, fmt.Errorf("%d nodes is more than this reader supports (%d)", n, maxParseN)
	}
	return n, start + k, nil
}

// checkChars reports the first byte of s outside '?'..'~' (63..126).
func checkChars(s string, skip int) error {
	for i := skip; i < len(s); i++ {
		if c := s[i]; c < 63 || c > 126 {
			return fmt.Errorf("byte %d is %q (0x%02x), outside '?'..'~'", i+1, c, c)
		}
	}
	return nil
}

func trimLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	s = strings.TrimPrefix(s, graph6Header)
	s = strings.TrimPrefix(s, digraph6Header)
	s = strings.TrimPrefix(s, sparse6Header)
	return s
}

// allocLists allocates adjacency lists with the given
// capacities in one backing array (each list capped so that a later insert
// reallocates instead of overwriting its neighbour's entries).
func allocLists(deg []int) [][]int {
	total := 0
	for _, d := range deg {
		total += d
	}
	back := make([]int, total)
	lists := make([][]int, len(deg))
	off := 0
	for i, d := range deg {
		lists[i] = back[off : off : off+d]
		off += d
	}
	return lists
}

// ParseGraph6 decodes one graph6 string (a trailing newline and a leading
// ">>graph6<<" header are allowed) into an undirected graph. The error
// says which byte is invalid or how the length is wrong.
func ParseGraph6(line string) (*Graph, error) {
	s := trimLine(line)
	if len(s) > 0 && s[0] == '&' {
		return nil, errors.New("graph6: string starts with '&': this is digraph6 (use ParseDigraph6)")
	}
	if len(s) > 0 && (s[0] == ':' || s[0] == ';') {
		return nil, errors.New("graph6: string starts with ':' or ';': this is sparse6 (use ParseSparse6 or ParseLine)")
	}
	if err := checkChars(s, 0); err != nil {
		return nil, fmt.Errorf("graph6: %w", err)
	}
	n, used, err := parseN(s)
	if err != nil {
		return nil, fmt.Errorf("graph6: %w", err)
	}
	data := s[used:]
	bits := n * (n - 1) / 2
	if want := (bits + 5) / 6; len(data) != want {
		return nil, fmt.Errorf("graph6: %d nodes need %d data bytes (%d bits), got %d", n, want, bits, len(data))
	}
	// Bit k belongs to the pair (i, j), i < j, in column-major order;
	// walking the set bits in order fills every list in sorted order.
	ks := setBits(data, bits, make([]int, 0, onesCount(data)))
	deg := make([]int, n)
	i, j, k0 := 0, 1, 0
	for _, k := range ks {
		for i += k - k0; i >= j; j++ {
			i -= j
		}
		k0 = k
		deg[i]++
		deg[j]++
	}
	g := &Graph{out: allocLists(deg), m: len(ks)}
	i, j, k0 = 0, 1, 0
	for _, k := range ks {
		for i += k - k0; i >= j; j++ {
			i -= j
		}
		k0 = k
		g.out[i] = append(g.out[i], j)
		g.out[j] = append(g.out[j], i)
	}
	return g, nil
}

// onesCount returns the number of set bits in graph6 data bytes.
func onesCount(data string) int {
	c := 0
	for i := 0; i < len(data); i++ {
		c += bits.OnesCount8(data[i] - 63)
	}
	return c
}

// setBits appends to dst the indices k < nbits of the set bits of the
// graph6 data bytes (6 bits per byte, most significant first), ascending.
func setBits(data string, nbits int, dst []int) []int {
	for bi := 0; bi < len(data); bi++ {
		d := data[bi] - 63
		for d != 0 {
			p := bits.LeadingZeros8(d) - 2
			k := bi*6 + p
			if k >= nbits {
				break // padding
			}
			dst = append(dst, k)
			d &^= 0x20 >> p
		}
	}
	return dst
}

// FormatGraph6 encodes the undirected graph g as a graph6 string without
// header or newline. Labels are not represented. It panics if g is
// directed (use FormatDigraph6).
func FormatGraph6(g *Graph) string {
	return string(AppendGraph6(nil, g))
}

// AppendGraph6 appends the graph6 encoding of the undirected graph g to b
// and returns the extended slice.
func AppendGraph6(b []byte, g *Graph) []byte {
	if g.directed {
		panic("graph: FormatGraph6 of a directed graph (use FormatDigraph6)")
	}
	n := g.N()
	b = appendN(b, n)
	bits := n * (n - 1) / 2
	start := len(b)
	nb := (bits + 5) / 6
	b = append(b, make([]byte, nb)...)
	data := b[start:]
	for u, nbrs := range g.out {
		for _, v := range nbrs {
			if v > u {
				k := v*(v-1)/2 + u
				data[k/6] |= 1 << (5 - k%6)
			}
		}
	}
	for i := range data {
		data[i] += 63
	}
	return b
}

// ParseDigraph6 decodes one digraph6 string ('&' followed by N(n) and the
// row-major n*n adjacency bits; a trailing newline and a leading
// ">>digraph6<<" header are allowed) into a directed graph. A set
// diagonal bit (self-loop) is an error, since Graph has no self-loops.
func ParseDigraph6(line string) (*Graph, error) {
	s := trimLine(line)
	if len(s) == 0 || s[0] != '&' {
		return nil, errors.New("digraph6: string does not start with '&'")
	}
	s = s[1:]
	if err := checkChars(s, 0); err != nil {
		return nil, fmt.Errorf("digraph6: %w", err)
	}
	n, used, err := parseN(s)
	if err != nil {
		return nil, fmt.Errorf("digraph6: %w", err)
	}
	data := s[used:]
	bits := n * n
	if want := (bits + 5) / 6; len(data) != want {
		return nil, fmt.Errorf("digraph6: %d nodes need %d data bytes (%d bits), got %d", n, want, bits, len(data))
	}
	ks := setBits(data, bits, make([]int, 0, onesCount(data)))
	outDeg := make([]int, n)
	inDeg := make([]int, n)
	for _, k := range ks {
		i, j := k/n, k%n
		if i == j {
			return nil, fmt.Errorf("digraph6: self-loop at node %d (graphs here have none)", i)
		}
		outDeg[i]++
		inDeg[j]++
	}
	g := &Graph{directed: true, out: allocLists(outDeg), in: allocLists(inDeg), m: len(ks)}
	for _, k := range ks {
		i, j := k/n, k%n
		g.out[i] = append(g.out[i], j)
		g.in[j] = append(g.in[j], i)
	}
	return g, nil
}

// FormatDigraph6 encodes the directed graph g as a digraph6 string without
// header or newline. Labels are not represented. It panics if g is
// undirected (use FormatGraph6).
func FormatDigraph6(g *Graph) string {
	return string(AppendDigraph6(nil, g))
}

// AppendDigraph6 appends the digraph6 encoding of the directed graph g to
// b and returns the extended slice.
func AppendDigraph6(b []byte, g *Graph) []byte {
	if !g.directed {
		panic("graph: FormatDigraph6 of an undirected graph (use FormatGraph6)")
	}
	n := g.N()
	b = append(b, '&')
	b = appendN(b, n)
	bits := n * n
	start := len(b)
	b = append(b, make([]byte, (bits+5)/6)...)
	data := b[start:]
	for u, nbrs := range g.out {
		for _, v := range nbrs {
			k := u*n + v
			data[k/6] |= 1 << (5 - k%6)
		}
	}
	for i := range data {
		data[i] += 63
	}
	return b
}

// ParseLine decodes one graph6, digraph6 or sparse6 line, choosing the
// format by its first byte ('&' = digraph6, ':' or ';' = sparse6).
func ParseLine(line string) (*Graph, error) {
	s := trimLine(line)
	if len(s) > 0 {
		switch s[0] {
		case '&':
			return ParseDigraph6(s)
		case ':', ';':
			return ParseSparse6(s)
		}
	}
	return ParseGraph6(s)
}

// ScanGraphs reads graph6 / digraph6 / sparse6 lines from r (auto-detected
// per line; blank lines are skipped and a ">>graph6<<", ">>digraph6<<" or
// ">>sparse6<<" header prefix is ignored) and calls fn with each graph and
// its 1-based line number. It stops at the first error, which names the
// line.
func ScanGraphs(r io.Reader, fn func(line int, g *Graph) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("graph: reading line %d: %w", lineNo, err)
		}
		if s := strings.TrimSpace(trimLine(line)); s != "" {
			g, perr := ParseLine(s)
			if perr != nil {
				return fmt.Errorf("line %d: %w", lineNo, perr)
			}
			if ferr := fn(lineNo, g); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// ReadGraphs reads all graph6 / digraph6 / sparse6 lines from r (see
// ScanGraphs).
func ReadGraphs(r io.Reader) ([]*Graph, error) {
	var gs []*Graph
	err := ScanGraphs(r, func(_ int, g *Graph) error {
		gs = append(gs, g)
		return nil
	})
	return gs, err
}

// WriteGraphs writes one line per graph: graph6 for undirected graphs,
// digraph6 for directed ones, without a header. Labels are not written.
func WriteGraphs(w io.Writer, gs []*Graph) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var b []byte
	for _, g := range gs {
		b = b[:0]
		if g.directed {
			b = AppendDigraph6(b, g)
		} else {
			b = AppendGraph6(b, g)
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadFile reads a file of graph6 / digraph6 / sparse6 lines
// (gzip-compressed if the name ends in ".gz"). Errors name the file and
// line.
func ReadFile(path string) ([]*Graph, error) { return readGraphsFile(path, ReadGraphs) }

// WriteFile writes gs as graph6 / digraph6 lines (see WriteGraphs) to path
// atomically: the data goes to a temporary file in the same directory,
// which is synced and then renamed over path. A name ending in ".gz" is
// gzip-compressed.
func WriteFile(path string, gs []*Graph) error { return writeGraphsFile(path, gs, WriteGraphs) }
