package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"lgflow/internal/atomicfile"
	"lgflow/tensor"
)

// Sharded checkpoints follow the Hugging Face convention: a model meant
// for NAME.safetensors is split into NAME-00001-of-00003.safetensors, ...,
// each a complete safetensors file holding some of the tensors, next to
// NAME.safetensors.index.json:
//
//	{"metadata": {"total_size": 123456, ...}, "weight_map": {"tensor name": "NAME-00001-of-00003.safetensors", ...}}
//
// Each shard also carries the checkpoint's metadata, so every file is
// self-describing; the index's "metadata" holds it too (besides
// total_size, the bytes of tensor data).

// IndexSuffix is appended to a checkpoint's path to name its shard index.
const IndexSuffix = ".index.json"

// Index is the content of a shard index file.
type Index struct {
	// Metadata holds total_size (a number) and the checkpoint's metadata
	// (strings).
	Metadata map[string]any `json:"metadata"`
	// WeightMap maps every tensor name to the file (in the index's
	// directory) that holds it.
	WeightMap map[string]string `json:"weight_map"`
}

// SaveSharded writes tensors and metadata for the checkpoint path (for
// example "out/flow.safetensors"), storing them as Save does (with opts)
// but in files of at most maxShardBytes bytes each: a single file at path
// when everything fits in one, otherwise shards
// "out/flow-0000k-of-0000n.safetensors" (tensors in name order, packed
// greedily) and the index "out/flow.safetensors.index.json". Every file is
// written atomically, and a previous checkpoint at path in the other form
// (a single file, or an index and shards) is removed, so that LoadModel
// finds the new one. A tensor too large for a shard on its own is an
// error. It returns the files written, the index last.
func SaveSharded(path string, tensors map[string]*tensor.Tensor, metadata map[string]string, maxShardBytes int64, opts ...WriteOption) ([]string, error) {
	o, err := buildWriteOptions(opts)
	if err != nil {
		return nil, err
	}
	es, err := tensorEntries(tensors, o)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.info.Name, b.info.Name) })
	// Greedy packing: a shard's size is its header plus its data.
	var shards [][]entry
	var cur []entry
	size := func(es []entry) (int64, error) {
		infos := make([]TensorInfo, len(es))
		var data int64
		for i, e := range es {
			infos[i] = e.info
			data += e.info.NumElements() * int64(e.info.DType.Size())
		}
		hdr, err := encodeHeader(infos, metadata)
		return int64(len(hdr)) + data, err
	}
	for _, e := range es {
		n, err := size(append(cur, e))
		if err != nil {
			return nil, err
		}
		if n <= maxShardBytes {
			cur = append(cur, e)
			continue
		}
		if len(cur) == 0 {
			return nil, newErr(ErrShape, e.info.Name, fmt.Sprintf("a file holding it alone needs %d bytes, more than the shard limit of %d", n, maxShardBytes))
		}
		shards = append(shards, cur)
		cur = []entry{e}
		if n, err := size(cur); err != nil || n > maxShardBytes {
			return nil, errors.Join(err, newErr(ErrShape, e.info.Name, fmt.Sprintf("a file holding it alone needs %d bytes, more than the shard limit of %d", n, maxShardBytes)))
		}
	}
	if len(cur) > 0 || len(shards) == 0 {
		shards = append(shards, cur)
	}
	dir, base := filepath.Split(path)
	stem := strings.TrimSuffix(base, ".safetensors")
	if len(shards) == 1 {
		if err := withPath(atomicfile.Write(path, func(w io.Writer) error { return writeEntries(w, shards[0], metadata) }), path); err != nil {
			return nil, err
		}
		removeShards(dir, stem, nil)
		os.Remove(path + IndexSuffix)
		return []string{path}, nil
	}
	idx := Index{Metadata: map[string]any{}, WeightMap: map[string]string{}}
	for k, v := range metadata {
		idx.Metadata[k] = v
	}
	var total int64
	var files []string
	keep := map[string]bool{}
	for i, sh := range shards {
		name := fmt.Sprintf("%s-%05d-of-%05d.safetensors", stem, i+1, len(shards))
		p := filepath.Join(dir, name)
		if err := withPath(atomicfile.Write(p, func(w io.Writer) error { return writeEntries(w, sh, metadata) }), p); err != nil {
			return nil, err
		}
		for _, e := range sh {
			idx.WeightMap[e.info.Name] = name
			total += e.info.NumElements() * int64(e.info.DType.Size())
		}
		files = append(files, p)
		keep[name] = true
	}
	idx.Metadata["total_size"] = total
	if err := atomicfile.WriteJSON(path+IndexSuffix, idx); err != nil {
		return nil, err
	}
	os.Remove(path)
	removeShards(dir, stem, keep)
	return append(files, path+IndexSuffix), nil
}

// removeShards removes the files STEM-NNNNN-of-NNNNN.safetensors of dir
// that keep does not name (shards of an earlier checkpoint).
func removeShards(dir, stem string, keep map[string]bool) {
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	re := regexp.MustCompile("^" + regexp.QuoteMeta(stem) + `-\d{5}-of-\d{5}\.safetensors$`)
	for _, e := range ents {
		if re.MatchString(e.Name()) && !keep[e.Name()] {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Stat is os.Stat for a checkpoint in any of the forms LoadModel reads:
// when path does not exist but path+".index.json" (a sharded checkpoint's
// index) does, it returns that file's information. Otherwise it returns
// os.Stat(path), whose error names path.
func Stat(path string) (os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) || strings.HasSuffix(path, IndexSuffix) {
		return fi, err
	}
	if ifi, ierr := os.Stat(path + IndexSuffix); ierr == nil {
		return ifi, nil
	}
	return fi, err
}

// LoadModel reads a checkpoint in any of the forms this package writes,
// with half-precision tensors as float32 (HalfToFloat32, plus opts):
//
//   - path is a safetensors file: Load(path);
//   - path is a shard index (NAME.safetensors.index.json), or path does not
//     exist but path+".index.json" does: every shard the index names is
//     read and the tensors are merged. The index must name every tensor of
//     the shards, in the shard that holds it, and nothing else. The
//     metadata is that of the shards (which must agree), or the index's
//     string entries for shards without any.
//
// For a sharded checkpoint File.Header is the first shard's, with Tensors
// listing the tensors of all shards.
func LoadModel(path string, opts ...Option) (*File, error) {
	opts = append([]Option{HalfToFloat32()}, opts...)
	index := path
	if !strings.HasSuffix(path, IndexSuffix) {
		if _, err := os.Stat(path); err == nil || !errors.Is(err, os.ErrNotExist) {
			return Load(path, opts...)
		}
		index = path + IndexSuffix
		if _, err := os.Stat(index); err != nil {
			return Load(path, opts...) // the error names path
		}
	}
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var idx Index
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, &Error{Path: index, Kind: ErrHeaderJSON, Detail: err.Error()}
	}
	if len(idx.WeightMap) == 0 {
		return nil, &Error{Path: index, Kind: ErrHeaderJSON, Detail: "no weight_map"}
	}
	shardNames := map[string]bool{}
	for _, f := range idx.WeightMap {
		if f == "" || filepath.Base(f) != f {
			return nil, &Error{Path: index, Kind: ErrName, Detail: fmt.Sprintf("shard file %s is not a file name in the index's directory", quote(f))}
		}
		shardNames[f] = true
	}
	names := make([]string, 0, len(shardNames))
	for f := range shardNames {
		names = append(names, f)
	}
	sort.Strings(names)
	dir := filepath.Dir(index)
	out := &File{Tensors: map[string]*tensor.Tensor{}}
	for i, name := range names {
		p := filepath.Join(dir, name)
		f, err := Load(p, opts...)
		if err != nil {
			return nil, err
		}
		for _, ti := range f.Header.Tensors {
			if want := idx.WeightMap[ti.Name]; want != name {
				return nil, &Error{Path: p, Tensor: ti.Name, Kind: ErrDuplicate, Detail: fmt.Sprintf("the index puts it in %s", quote(want))}
			}
		}
		if i == 0 {
			out.Header = f.Header
			out.Header.Tensors = slices.Clone(f.Header.Tensors)
			out.Metadata = f.Metadata
		} else {
			out.Header.Tensors = append(out.Header.Tensors, f.Header.Tensors...)
			if !mapsEqual(out.Metadata, f.Metadata) {
				return nil, &Error{Path: p, Kind: ErrMetadata, Detail: fmt.Sprintf("differs from that of %s", names[0])}
			}
		}
		for k, t := range f.Tensors {
			out.Tensors[k] = t
		}
		out.Skipped = append(out.Skipped, f.Skipped...)
	}
	for name := range idx.WeightMap {
		if _, ok := out.Tensors[name]; !ok && !slices.Contains(out.Skipped, name) {
			return nil, &Error{Path: index, Tensor: name, Kind: ErrTruncated, Detail: fmt.Sprintf("not in %s", quote(idx.WeightMap[name]))}
		}
	}
	if out.Metadata == nil {
		for k, v := range idx.Metadata {
			if s, ok := v.(string); ok {
				if out.Metadata == nil {
					out.Metadata = map[string]string{}
				}
				out.Metadata[k] = s
			}
		}
	}
	return out, nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
