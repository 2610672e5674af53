#!/usr/bin/env python3
"""An independent check of lgflow's V.U.N. with networkx.

Reads sampled graphs (graph6 for planar / tree, digraph6 for DAGs: the files
`go run ./examples/planar` and `go run ./examples/generate` write as
samples.g6 / samples.d6) and the training graphs (`lgflow data -dataset D
-split train -o train.g6`), and prints, per file, how many samples are valid
(planar: connected and planar; tree: a tree; dag: acyclic), how many of those
are unique (pairwise non-isomorphic) and how many of those are novel (not
isomorphic to a training graph), V.U.N. dividing by all samples.

  /usr/bin/python3 scripts/check_vun.py planar|tree|dag TRAIN SAMPLES...

Needs networkx (Debian: python3-networkx).
"""
import sys

import networkx as nx


def parse_digraph6(line):
    s = line.strip()
    if s.startswith(">>digraph6<<"):
        s = s[len(">>digraph6<<"):]
    if not s.startswith("&"):
        raise ValueError("not a digraph6 line")
    b = [ord(c) - 63 for c in s[1:]]
    if b[0] < 63:
        n, b = b[0], b[1:]
    elif b[1] < 63:
        n, b = (b[1] << 12) | (b[2] << 6) | b[3], b[4:]
    else:
        n, b = sum(b[2 + i] << (6 * (5 - i)) for i in range(6)), b[8:]
    bits = [(x >> (5 - i)) & 1 for x in b for i in range(6)]
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((i, j) for i in range(n) for j in range(n) if bits[i * n + j])
    return g


def load(path):
    out = []
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        if line.startswith("&") or line.startswith(">>digraph6<<"):
            out.append(parse_digraph6(line))
        else:
            out.append(nx.from_graph6_bytes(line.removeprefix(">>graph6<<").encode()))
    return out


VALID = {
    "planar": lambda g: g.number_of_nodes() > 0 and nx.is_connected(g) and nx.check_planarity(g)[0],
    "tree": lambda g: g.number_of_nodes() > 0 and nx.is_tree(g),
    "dag": lambda g: nx.is_directed_acyclic_graph(g),
}


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in VALID:
        sys.exit(__doc__)
    valid_fn = VALID[sys.argv[1]]
    train = {}
    for g in load(sys.argv[2]):
        train.setdefault(nx.weisfeiler_lehman_graph_hash(g), []).append(g)
    for path in sys.argv[3:]:
        gs = load(path)
        seen, valid, unique, vun = {}, 0, 0, 0
        for g in gs:
            if not valid_fn(g):
                continue
            valid += 1
            h = nx.weisfeiler_lehman_graph_hash(g)
            if any(nx.is_isomorphic(g, o) for o in seen.get(h, [])):
                continue
            seen.setdefault(h, []).append(g)
            unique += 1
            if not any(nx.is_isomorphic(g, o) for o in train.get(h, [])):
                vun += 1
        n = max(len(gs), 1)
        print(f"{path}: {len(gs)} samples, valid {valid}, valid and unique {unique}, "
              f"V.U.N. {vun} ({100 * vun / n:.1f}%)")


if __name__ == "__main__":
    main()
