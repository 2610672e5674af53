package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"lgflow/metrics/moses"
)

func init() {
	register("mol", "canonicalise SMILES, report invalid ones and MOSES metrics", runMol)
}

// runMol implements "lgflow mol": one output line per input line, the
// canonical SMILES or "invalid: <reason>", and with -stats the MOSES
// metrics of the set.
func runMol(ctx context.Context, args []string) error {
	fs := newFlagSet("mol", "lgflow mol -i IN.smi [-o OUT] [-stats] [-train FILE] [-ref FILE] [-filters DIR]")
	in := fs.String("i", "", "input: one SMILES per line (.smi/.txt/.csv, optionally .gz; a header line 'SMILES' is skipped; 'None' lines are invalid)")
	out := fs.String("o", "", "write the per-line results to this file (written atomically) instead of stdout")
	stats := fs.Bool("stats", false, "print validity, uniqueness and (with -train) novelty to stderr")
	quiet := fs.Bool("q", false, "do not print the per-line results")
	train := fs.String("train", "", "training SMILES for novelty (same formats as -i)")
	ref := fs.String("ref", "", "reference SMILES for SNN and scaffold similarity (with -stats)")
	filters := fs.String("filters", "", "directory holding mcf.csv and wehi_pains.csv: adds the MOSES Filters metric (with -stats)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return usagef("-i is required")
	}
	smiles, err := readSMILESFile(*in)
	if err != nil {
		return err
	}
	p, err := moses.Parse(ctx, smiles, nil)
	if err != nil {
		return err
	}
	if !*quiet {
		var sb strings.Builder
		for i := range smiles {
			if p.Mols[i] != nil {
				sb.WriteString(p.Canonical[i])
			} else if smiles[i] == "None" {
				sb.WriteString("invalid: None (no molecule was generated)")
			} else {
				sb.WriteString("invalid: ")
				sb.WriteString(strings.ReplaceAll(p.Errs[i].Error(), "\n", " "))
			}
			sb.WriteByte('\n')
		}
		if *out != "" {
			if err := writeFileAtomic(*out, []byte(sb.String())); err != nil {
				return err
			}
		} else if _, err := io.WriteString(stdout, sb.String()); err != nil {
			return err
		}
	}
	if !*stats {
		return nil
	}
	opt := moses.Options{UniqueK: []int{1000, 10000}}
	if *train != "" {
		if opt.Train, err = readSMILESFile(*train); err != nil {
			return err
		}
	}
	if *ref != "" {
		if opt.Ref, err = readSMILESFile(*ref); err != nil {
			return err
		}
	}
	if *filters != "" {
		if opt.Filters, err = moses.LoadFilters(*filters); err != nil {
			return err
		}
	}
	rep, err := moses.EvaluateParsed(ctx, p, opt)
	if err != nil {
		return err
	}
	w := stderr
	fmt.Fprintf(w, "molecules   %d\n", rep.N)
	fmt.Fprintf(w, "valid       %.4f (%d)\n", rep.Valid, rep.NValid)
	ks := make([]int, 0, len(rep.Unique))
	for k := range rep.Unique {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		fmt.Fprintf(w, "unique@%-5d %s\n", k, fmtMetric(rep.Unique[k]))
	}
	_, canon := p.Valid()
	fmt.Fprintf(w, "unique      %s\n", fmtMetric(moses.UniqueAt(canon, 0)))
	if opt.Train != nil {
		fmt.Fprintf(w, "novelty     %s\n", fmtMetric(rep.Novelty))
	}
	if opt.Filters != nil {
		fmt.Fprintf(w, "filters     %s\n", fmtMetric(rep.Filters))
	}
	if opt.Ref != nil {
		fmt.Fprintf(w, "snn         %s\n", fmtMetric(rep.SNN))
		fmt.Fprintf(w, "scaf        %s\n", fmtMetric(rep.Scaf))
	}
	return nil
}

func fmtMetric(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.4f", x)
}

// readSMILESFile reads one SMILES per line: the first whitespace- or
// comma-separated field. A first line whose field is "SMILES" (any case)
// is a header; "None" (DiGress) is kept and is invalid.
func readSMILESFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if i := strings.IndexAny(s, " \t,"); i >= 0 {
			s = s[:i]
		}
		if line == 1 && strings.EqualFold(s, "smiles") {
			continue
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s line %d: %w", path, line+1, err)
	}
	return out, nil
}

// writeFileAtomic writes data to path through a temporary file in the
// same directory, synced and renamed into place.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return err
	}
	return os.Rename(name, path)
}
