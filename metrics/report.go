package metrics

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// columns lists the report's columns in the paper's order: header, value,
// and whether the value is an MMD (printed ×1e3) or a rate (printed in %).
func (r *Report) columns() []struct {
	head string
	v    *float64
	mmd  bool
} {
	type col = struct {
		head string
		v    *float64
		mmd  bool
	}
	cols := []col{
		{"Deg.", r.Degree, true},
		{"Out Deg.", r.OutDegree, true},
		{"In Deg.", r.InDegree, true},
		{"Orbit", r.Orbit, true},
		{"Clust.", r.Clustering, true},
		{"Spec.", r.Spectral, true},
		{"Wave.", r.Wavelet, true},
		{"Ratio", r.Ratio, false},
		{"Valid %", r.Valid, false},
		{"Unique %", r.Unique, false},
		{"Novel %", r.Novel, false},
		{"V.U.N. %", r.VUN, false},
	}
	if r.Kind == DAG { // the paper's DAG column order
		cols = []col{cols[1], cols[2], cols[4], cols[5], cols[6], cols[8], cols[9], cols[10], cols[11]}
	}
	out := cols[:0]
	for _, c := range cols {
		if c.v != nil {
			out = append(out, c)
		}
	}
	return out
}

// WriteTable writes the report as a table in the style of the paper: MMD²
// values ×1e3 and rates in percent with the given number of decimals
// (the paper uses 1), the Ego ratio as a plain number.
func (r *Report) WriteTable(w io.Writer, decimals int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	cols := r.columns()
	fmt.Fprintf(w, "%s: %d generated vs %d reference graphs", r.Kind, r.Generated, r.Reference)
	if r.Train > 0 {
		fmt.Fprintf(w, " (%d training)", r.Train)
	}
	fmt.Fprintln(w, "; MMD² ×1e3, rates in %")
	var head, vals strings.Builder
	for _, c := range cols {
		head.WriteString(c.head + "\t")
		x := *c.v
		if c.mmd {
			x *= 1e3
		} else if c.head != "Ratio" {
			x *= 100
		}
		if math.Abs(x) < 0.5*math.Pow(10, -float64(decimals)) {
			x = 0 // no "-0.0" for rounding noise around zero
		}
		fmt.Fprintf(&vals, "%.*f\t", decimals, x)
	}
	fmt.Fprintln(tw, head.String())
	fmt.Fprintln(tw, vals.String())
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.IsoTimeouts > 0 {
		_, err := fmt.Fprintf(w, "%d isomorphism look-ups timed out (counted as not isomorphic)\n", r.IsoTimeouts)
		return err
	}
	return nil
}

// String returns the table of WriteTable with one decimal.
func (r *Report) String() string {
	var b strings.Builder
	_ = r.WriteTable(&b, 1)
	return b.String()
}
