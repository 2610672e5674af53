package mol

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDebugFeat(t *testing.T) {
	f, _ := os.Open("/tmp/feat.tsv")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	bad, n := 0, 0
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		m, err := ParseSMILESWith(fs[0], ParseOptions{Sanitize: true})
		if err != nil {
			t.Fatal(err)
		}
		ft, err := MOSES.Featurize(m)
		if err != nil {
			t.Fatal(err)
		}
		var nodes []string
		for _, v := range ft.Nodes {
			s := fmt.Sprint(v[:])
			nodes = append(nodes, strings.ReplaceAll(strings.Trim(s, "[]"), " ", ","))
		}
		var edges []string
		for k, e := range ft.Graph.Edges() {
			v := ft.Edges[k]
			s := fmt.Sprint(append([]int{e.From, e.To}, v[:]...))
			edges = append(edges, strings.ReplaceAll(strings.Trim(s, "[]"), " ", ","))
		}
		n++
		if strings.Join(nodes, " ") != fs[1] || strings.Join(edges, " ") != fs[2] {
			bad++
			if bad < 4 {
				t.Log(fs[0], "\n", strings.Join(nodes, " "), "\n", fs[1], "\n", strings.Join(edges, " "), "\n", fs[2])
			}
		}
	}
	t.Log(n, bad)
}
