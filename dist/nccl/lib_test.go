package nccl

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeVersion(t *testing.T) {
	for _, tc := range []struct {
		code int
		want Version
	}{
		{22105, Version{2, 21, 5}},
		{21903, Version{2, 19, 3}},
		{20906, Version{2, 9, 6}},
		{2708, Version{2, 7, 8}},
		{2408, Version{2, 4, 8}},
		{30000, Version{3, 0, 0}},
	} {
		if got := DecodeVersion(tc.code); got != tc.want {
			t.Errorf("DecodeVersion(%d) = %v, want %v", tc.code, got, tc.want)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		v  Version
		ok bool
	}{
		{Version{2, 4, 0}, true},
		{Version{2, 21, 5}, true},
		{Version{2, 3, 7}, false},
		{Version{1, 9, 0}, false},
		{Version{3, 0, 0}, false},
	} {
		err := checkVersion("libnccl.so.2", tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("checkVersion(%v) = %v, want ok %v", tc.v, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), tc.v.String()) || !strings.Contains(err.Error(), "from 2.4")) {
			t.Errorf("checkVersion(%v): %v: want ErrUnsupportedVersion naming the version and the supported range", tc.v, err)
		}
	}
}

// TestLoadErrors checks the loader's errors: a missing file (given, from
// LGFLOW_NCCL_LIB, or the default names on a machine without NCCL), a
// library that is not NCCL, an NCCL of an unsupported version.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, lib, env, version string
		want                    error
		says                    []string
	}{
		{name: "missing file", lib: "/nonexistent/libnccl.so.2", want: ErrLibrary,
			says: []string{"cannot load NCCL", "/nonexistent/libnccl.so.2", "LGFLOW_NCCL_LIB"}},
		{name: "LGFLOW_NCCL_LIB", env: "/nonexistent/other/libnccl.so", want: ErrLibrary,
			says: []string{"/nonexistent/other/libnccl.so"}},
		{name: "not NCCL", lib: "libc.so.6", want: ErrUnsupportedVersion, says: []string{"lacks symbol ncclGetVersion"}},
		{name: "NCCL 3", lib: "fake", version: "30000", want: ErrUnsupportedVersion, says: []string{"NCCL 3.0.0", "2.x from 2.4"}},
		{name: "NCCL 2.3", lib: "fake", version: "2307", want: ErrUnsupportedVersion, says: []string{"NCCL 2.3.7"}},
		{name: "NCCL 2.4.8", lib: "fake", version: "2408"},
		{name: "NCCL 2.21.5", lib: "fake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := tc.lib
			if lib == "fake" {
				lib = fakeLib(t)
			}
			t.Setenv("LGFLOW_NCCL_LIB", tc.env)
			if tc.version != "" {
				t.Setenv("FAKE_NCCL_VERSION", tc.version)
			}
			v, file, err := LibraryVersion(lib)
			if tc.want == nil {
				if err != nil || file != lib {
					t.Fatalf("LibraryVersion(%s) = %v, %q, %v", lib, v, file, err)
				}
				t.Logf("loaded %s: NCCL %v", file, v)
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("LibraryVersion(%q) error %v, want %v", lib, err, tc.want)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestDefaultLibsHere checks the error a machine without NCCL gives (this
// one, unless libnccl.so.2 is installed).
func TestDefaultLibsHere(t *testing.T) {
	t.Setenv("LGFLOW_NCCL_LIB", "")
	v, file, err := LibraryVersion("")
	if err == nil {
		t.Skipf("NCCL %v is installed here (%s)", v, file)
	}
	t.Logf("without NCCL: %v", err)
	if !errors.Is(err, ErrLibrary) && !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("error %v matches neither ErrLibrary nor ErrUnsupportedVersion", err)
	}
	if !strings.Contains(err.Error(), "libnccl.so.2") {
		t.Errorf("error %q does not name libnccl.so.2", err)
	}
}

func TestNewUniqueIDFake(t *testing.T) {
	lib := fakeLib(t)
	a, err := NewUniqueID(lib)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewUniqueID(lib)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a[0] != 'N' {
		t.Errorf("ids %x and %x: want two distinct fake ids", a[:4], b[:4])
	}
}
