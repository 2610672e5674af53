package metrics

import "fmt"

// BinEdges returns the bins+1 edges numpy.histogram uses for the range
// [lo, hi]: numpy.linspace(lo, hi, bins+1), i.e. lo + i·((hi-lo)/bins)
// with the last edge exactly hi. As numpy does, an empty range lo == hi is
// widened to [lo-0.5, hi+0.5].
func BinEdges(bins int, lo, hi float64) []float64 {
	if bins <= 0 {
		panic(fmt.Sprintf("metrics: %d histogram bins", bins))
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	e := make([]float64, bins+1)
	step := (hi - lo) / float64(bins)
	for i := range e {
		// The conversion forces rounding of the product before the sum,
		// as numpy computes it (no fused multiply-add).
		e[i] = float64(float64(i)*step) + lo
	}
	e[bins] = hi
	return e
}

// Histogram counts values into bins equal-width bins on [lo, hi] with
// numpy.histogram's semantics: bin i holds edges[i] ≤ v < edges[i+1] (see
// BinEdges), the last bin also holds v == hi, and values outside [lo, hi]
// (and NaN) are dropped. It returns a new slice of counts.
func Histogram(values []float64, bins int, lo, hi float64) []float64 {
	edges := BinEdges(bins, lo, hi)
	return histogramEdges(make([]float64, bins), values, edges)
}

// histogramEdges adds the numpy.histogram counts of values over the
// uniform edges to dst and returns it.
func histogramEdges(dst, values, edges []float64) []float64 {
	bins := len(edges) - 1
	first, last := edges[0], edges[bins]
	denom := last - first
	for _, v := range values {
		if !(v >= first && v <= last) {
			continue
		}
		i := int((v - first) / denom * float64(bins))
		if i >= bins {
			i = bins - 1
		}
		if i < 0 {
			i = 0
		}
		// numpy's corrections so that the bin agrees with the edges
		if v < edges[i] {
			i--
		}
		if i < bins-1 && v >= edges[i+1] {
			i++
		}
		dst[i]++
	}
	return dst
}
