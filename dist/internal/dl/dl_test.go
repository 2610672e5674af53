package dl

import (
	"slices"
	"strings"
	"testing"
)

func TestCandidates(t *testing.T) {
	defaults := []string{"liba.so.1", "liba.so"}
	t.Setenv("DL_TEST_LIB", "")
	for _, tc := range []struct {
		lib, env string
		want     []string
	}{
		{"", "", defaults},
		{"", "/opt/liba.so", []string{"/opt/liba.so"}},
		{"x.so", "/opt/liba.so", []string{"x.so"}},
	} {
		t.Setenv("DL_TEST_LIB", tc.env)
		if got := Candidates(tc.lib, "DL_TEST_LIB", defaults); !slices.Equal(got, tc.want) {
			t.Errorf("Candidates(%q) with DL_TEST_LIB=%q = %v, want %v", tc.lib, tc.env, got, tc.want)
		}
	}
}

func TestOpenFirst(t *testing.T) {
	h, file, err := OpenFirst([]string{"/nonexistent/liba.so", "/nonexistent/libb.so"}, Local)
	if err == nil || h != 0 || file != "" || !strings.Contains(err.Error(), "libb.so") && !strings.Contains(err.Error(), "Windows") {
		t.Errorf("OpenFirst of missing files: %v, %q, %v (want the last failure)", h, file, err)
	}
	if h, _, err := OpenFirst(nil, Local); err == nil || h != 0 {
		t.Errorf("OpenFirst of no names: %v, %v", h, err)
	}
}
