// Package moses computes the MOSES benchmark metrics on SMILES strings
// with the definitions of the moses package (molecularsets/moses): Valid,
// Unique@k, Novelty, Filters, SNN (Morgan Tanimoto nearest neighbour),
// Scaf (cosine similarity of Bemis–Murcko scaffold counts) and FCD given
// a pluggable Embedder. Chemistry comes from package mol, which follows
// RDKit 2022.09; canonical SMILES are this library's own (canonical but
// not byte-identical to RDKit's), so reference sets must be given as
// SMILES or molecules and are canonicalised here, never compared as
// RDKit strings.
package moses
