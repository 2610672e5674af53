package mol

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

func TestDebugScaf(t *testing.T) {
	f, _ := os.Open("/tmp/scaf.tsv")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	bad, n, exact := 0, 0, 0
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		m, err := ParseSMILES(fs[0])
		if err != nil {
			t.Fatal(err)
		}
		n++
		s, err := m.MurckoScaffold()
		got := "ERR"
		if err == nil {
			got = s.SMILES()
		}
		want := fs[1]
		if want != "ERR" && want != "" {
			if w, err := CanonicalSMILES(want); err == nil {
				want = w
			} else {
				want = "UNPARSEABLE " + want
			}
		}
		if got == fs[1] {
			exact++
		}
		if got != want {
			bad++
			if bad < 10 {
				t.Log(fs[0], "got", got, "want", want, fs[1])
			}
		}
	}
	t.Log(n, bad, exact)
}
