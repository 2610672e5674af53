package graph

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteNodeLinks writes gs as JSON Lines: one networkx node-link document
// per line (see WriteNodeLink), so node and edge labels are kept. Python
// reads it back with
//
//	[nx.node_link_graph(json.loads(line)) for line in open(path)]
func WriteNodeLinks(w io.Writer, gs []*Graph) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, g := range gs {
		if err := WriteNodeLink(bw, g); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadNodeLinks reads networkx node-link graphs from r: either a sequence
// of documents (JSON Lines, or documents separated by any white space) or
// one JSON array of documents. Each document is read by ReadNodeLink;
// errors name the graph (0-based, in file order).
func ReadNodeLinks(r io.Reader) ([]*Graph, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	first, err := firstNonSpace(br)
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(br)
	var docs []json.RawMessage
	if first == '[' {
		if err := dec.Decode(&docs); err != nil {
			return nil, jsonError(err, dec.InputOffset())
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("node-link JSON: byte %d: data after the array of graphs", dec.InputOffset())
		}
	} else {
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("graph %d: %w", len(docs), jsonError(err, dec.InputOffset()))
			}
			docs = append(docs, raw)
		}
	}
	gs := make([]*Graph, len(docs))
	for i, d := range docs {
		if gs[i], err = ReadNodeLink(bytes.NewReader(d)); err != nil {
			return nil, fmt.Errorf("graph %d: %w", i, err)
		}
	}
	return gs, nil
}

// firstNonSpace returns the first byte of r that is not JSON white space,
// leaving it unread.
func firstNonSpace(r *bufio.Reader) (byte, error) {
	for {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, r.UnreadByte()
	}
}

// IsNodeLinkPath reports whether a file name says node-link JSON: it ends
// in .json, .jsonl or .ndjson, optionally followed by .gz.
func IsNodeLinkPath(path string) bool {
	p := strings.TrimSuffix(strings.ToLower(path), ".gz")
	return strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".ndjson")
}

// ReadNodeLinkFile reads the node-link graphs of a file (ReadNodeLinks;
// gzip-compressed if the name ends in ".gz"). Errors name the file.
func ReadNodeLinkFile(path string) ([]*Graph, error) { return readGraphsFile(path, ReadNodeLinks) }

// WriteNodeLinkFile writes gs as node-link JSON Lines (WriteNodeLinks) to
// path atomically; a name ending in ".gz" is gzip-compressed.
func WriteNodeLinkFile(path string, gs []*Graph) error {
	return writeGraphsFile(path, gs, WriteNodeLinks)
}

// ReadAnyFile reads a file of graphs in the format its name says:
// node-link JSON for .json, .jsonl and .ndjson (ReadNodeLinkFile), graph6
// / digraph6 / sparse6 lines otherwise (ReadFile); either may end in .gz.
func ReadAnyFile(path string) ([]*Graph, error) {
	if IsNodeLinkPath(path) {
		return ReadNodeLinkFile(path)
	}
	return ReadFile(path)
}
