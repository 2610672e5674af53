package testgraphs

import "testing"

// TestLadders checks the sizes of the ladders and that a seed gives the
// same graphs.
func TestLadders(t *testing.T) {
	a, b := Ladders(8, 3), Ladders(8, 3)
	for i, g := range a {
		k := 3 + i%4
		if g.N() != 2*k || g.M() != 3*k-2 {
			t.Errorf("ladder %d: %d nodes, %d edges, want %d and %d", i, g.N(), g.M(), 2*k, 3*k-2)
		}
		if g.String() != b[i].String() {
			t.Errorf("ladder %d differs between two calls with one seed", i)
		}
	}
}
