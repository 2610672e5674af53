package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"lgflow/safetensors"
)

func init() {
	register("convert", "rewrite a checkpoint in half precision and/or in shards (or print one metadata value)", runConvert)
}

// runConvert reads a checkpoint in any form safetensors.LoadModel reads
// and writes it again with safetensors.SaveSharded: the way to bring a
// model back through a channel that limits file sizes, and the way
// vae.Load and flow.Load read it afterwards.
func runConvert(ctx context.Context, args []string) error {
	fs := newFlagSet("convert", "lgflow convert -i IN.safetensors -o OUT.safetensors [-dtype keep|f32|f16|bf16] [-shard-size 15MiB] | lgflow convert -i IN -meta KEY")
	in := fs.String("i", "", "checkpoint to read (a .safetensors file, or a sharded checkpoint: its path or its .index.json)")
	out := fs.String("o", "", "checkpoint to write: OUT itself if it fits in one file, else OUT's shards and OUT.index.json")
	dtype := fs.String("dtype", "keep", "storage precision: keep, f32, f16 or bf16 (half precision only for LG-Flow sampling models: it changes an LG-VAE's weights, and so the fingerprint its flows are bound to)")
	shard := fs.String("shard-size", "15MiB", "largest file to write, e.g. 15MiB, 500KiB, 16000000")
	meta := fs.String("meta", "", "print the metadata value KEY of -i (e.g. step) and exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return usagef("need -i")
	}
	f, err := safetensors.LoadModel(*in)
	if err != nil {
		return err
	}
	if *meta != "" {
		v, ok := f.Metadata[*meta]
		if !ok {
			return fmt.Errorf("%s has no metadata %q", *in, *meta)
		}
		fmt.Fprintln(stdout, v)
		return nil
	}
	if *out == "" {
		return usagef("need -o (or -meta)")
	}
	limit, err := parseBytes(*shard)
	if err != nil || limit <= 0 {
		return usagef("-shard-size %q: want a positive size such as 15MiB", *shard)
	}
	var opts []safetensors.WriteOption
	switch strings.ToLower(*dtype) {
	case "keep":
	case "f32", "f64", "f16", "bf16":
		dt := safetensors.DType(strings.ToUpper(*dtype))
		kind := f.Metadata["kind"]
		if (dt == safetensors.F16 || dt == safetensors.BF16) && kind != "lgflow.flow" {
			return fmt.Errorf("%s is a %q checkpoint, not an LG-Flow sampling model: half precision would change its weights (an LG-VAE's fingerprint binds the flows trained with it); use -dtype f32 with shards", *in, kind)
		}
		opts = append(opts, safetensors.StoreAs(dt))
	default:
		return usagef("-dtype %q: want keep, f32, f16 or bf16", *dtype)
	}
	// As train-vae and train-flow do with -out, make the output's folder.
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	files, err := safetensors.SaveSharded(*out, f.Tensors, f.Metadata, limit, opts...)
	if err != nil {
		return err
	}
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s (%.2f MiB)\n", p, float64(st.Size())/(1<<20))
	}
	return nil
}

// parseBytes parses a size such as "15MiB", "500KiB", "2GiB", "16M" or
// "16000000" (bytes); K, M and G mean the binary units too.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return int64(v * float64(mult)), nil
}
