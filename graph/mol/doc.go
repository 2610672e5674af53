// Package mol reads, checks and writes molecules the way RDKit does by
// default, without RDKit: a SMILES parser, RDKit-compatible sanitisation
// (valences, kekulisation, aromaticity), canonical SMILES, conversion
// between molecules and labelled graphs for LG-VAE/LG-Flow (MOSES and
// GuacaMol encodings, REFERENCE section 3), and the chemistry that the
// MOSES metrics need (Morgan fingerprints, Bemis–Murcko scaffolds).
//
// The reference for every decision is RDKit 2022.09 (the version the
// fixtures and the paper's pinned 2023.03 agree with): MolFromSmiles with
// sanitisation, and MolToSmiles. Canonical strings are canonical (one
// string per molecule) but not byte-identical to RDKit's.
package mol
