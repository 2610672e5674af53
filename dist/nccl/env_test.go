package nccl

import (
	"strings"
	"testing"
)

func TestParseEnv(t *testing.T) {
	full := map[string]string{"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Env
		err  string // a substring of the error; "" for none
	}{
		{"torchrun", full, Env{1, 4, 1, "node0", 29500}, ""},
		{"Open MPI local rank", with("LOCAL_RANK", "-", "OMPI_COMM_WORLD_LOCAL_RANK", "3"), Env{1, 4, 3, "node0", 29500}, ""},
		{"one process", map[string]string{"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "localhost", "MASTER_PORT": "1234"}, Env{0, 1, 0, "localhost", 1234}, ""},
		{"IPv6", with("MASTER_ADDR", "[::1]"), Env{1, 4, 1, "::1", 29500}, ""},
		{"no RANK", with("RANK", "-"), Env{}, "RANK is not set"},
		{"no WORLD_SIZE", with("WORLD_SIZE", "-"), Env{}, "WORLD_SIZE is not set"},
		{"bad WORLD_SIZE", with("WORLD_SIZE", "four"), Env{}, `WORLD_SIZE="four"`},
		{"zero WORLD_SIZE", with("WORLD_SIZE", "0"), Env{}, `WORLD_SIZE="0"`},
		{"RANK too large", with("RANK", "4"), Env{}, `RANK="4" is not a whole number from 0 to 3`},
		{"negative RANK", with("RANK", "-1"), Env{}, `RANK="-1"`},
		{"no LOCAL_RANK", with("LOCAL_RANK", "-"), Env{}, "LOCAL_RANK is not set"},
		{"bad LOCAL_RANK", with("LOCAL_RANK", "x"), Env{}, `LOCAL_RANK="x"`},
		{"no MASTER_ADDR", with("MASTER_ADDR", "-"), Env{}, "MASTER_ADDR is not set"},
		{"empty MASTER_ADDR", with("MASTER_ADDR", " "), Env{}, "MASTER_ADDR is not set"},
		{"no MASTER_PORT", with("MASTER_PORT", "-"), Env{}, "MASTER_PORT is not set"},
		{"bad MASTER_PORT", with("MASTER_PORT", "70000"), Env{}, `MASTER_PORT="70000"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseEnv = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ParseEnv error %v, want one saying %q", err, tc.err)
			}
		})
	}
	if a := (Env{MasterAddr: "::1", MasterPort: 80}).Addr(); a != "[::1]:80" {
		t.Errorf("Addr = %q", a)
	}
}

func TestLocalRank(t *testing.T) {
	vars := []string{"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}
	for _, tc := range []struct {
		name string
		set  map[string]string
		want int
		ok   bool
		err  bool
	}{
		{"none", nil, 0, false, false},
		{"torchrun", map[string]string{"LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "5"}, 2, true, false},
		{"Open MPI", map[string]string{"OMPI_COMM_WORLD_LOCAL_RANK": "5"}, 5, true, false},
		{"Hydra", map[string]string{"MPI_LOCALRANKID": "1"}, 1, true, false},
		{"Slurm", map[string]string{"SLURM_LOCALID": "3"}, 3, true, false},
		{"bad", map[string]string{"LOCAL_RANK": "-2"}, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv(v, tc.set[v])
			}
			got, ok, err := LocalRank()
			if (err != nil) != tc.err || got != tc.want || ok != tc.ok {
				t.Errorf("LocalRank() = %d, %v, %v; want %d, %v, error %v", got, ok, err, tc.want, tc.ok, tc.err)
			}
		})
	}
}
