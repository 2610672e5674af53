package bundle

import "testing"

// TestChoose checks the point Tune chooses: the highest V.U.N. whose every
// MMD stays within MMDTolerance of the start's, V.U.N. counted in samples,
// ties to the score.
func TestChoose(t *testing.T) {
	pt := func(vun, score float64, mmd ...float64) *TunePoint {
		return &TunePoint{Score: score, Figures: Figures{VUN: vun, MMD: map[string]float64{"degree": mmd[0], "orbit": mmd[1]}}}
	}
	start := pt(0.5, 50, 1, 1)
	for _, c := range []struct {
		name string
		ps   []*TunePoint
		want int
	}{
		{"only the start", []*TunePoint{start}, 0},
		{"higher V.U.N., MMDs better", []*TunePoint{start, pt(0.8, 90, 0.5, 0.5)}, 1},
		{"higher V.U.N., one MMD 11% worse", []*TunePoint{start, pt(0.9, 95, 1.11, 0.1)}, 0},
		{"higher V.U.N., MMDs 10% worse", []*TunePoint{start, pt(0.9, 95, 1.1, 1.1)}, 1},
		// The score prefers the second point; V.U.N. decides among
		// the points within the tolerance.
		{"V.U.N. over score", []*TunePoint{start, pt(0.8, 99, 0.2, 0.2), pt(0.9, 91, 1, 1)}, 2},
		// 0.8984 and 0.8985 are the same count of 256 samples (230).
		{"a tie in samples goes to the score", []*TunePoint{start, pt(0.8985, 91, 1, 1), pt(0.8984, 95, 0.5, 0.5)}, 2},
		{"a full tie keeps the earlier", []*TunePoint{start, pt(0.9, 95, 1, 1), pt(0.9, 95, 1, 1)}, 1},
		{"lower V.U.N. never", []*TunePoint{start, pt(0.4, 99, 0.1, 0.1)}, 0},
	} {
		if got := choose(c.ps, 256); got != c.ps[c.want] {
			t.Errorf("%s: chose %+v, want point %d", c.name, *got, c.want)
		}
	}
}
