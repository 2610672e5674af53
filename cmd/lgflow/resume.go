package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
)

// The training commands resume by one rule: a resumed run continues with
// the configuration stored in its checkpoint, a flag overrides it only when
// the user sets it, and the run lists what it overrides. Presets and flag
// defaults do not apply to a resumed run.

// stateExists reports whether a resumable state exists at path.
func stateExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// configDiff lists the fields in which b differs from a, both structs
// with JSON tags, as "name: a → b" with nested fields dotted ("dit.width").
func configDiff(a, b any) []string {
	var out []string
	diffJSON("", toJSON(a), toJSON(b), &out)
	slices.Sort(out)
	return out
}

func toJSON(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("configDiff: %v", err))
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(fmt.Sprintf("configDiff: %v", err))
	}
	return out
}

func diffJSON(prefix string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			diffJSON(name, am[k], bm[k], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, fmt.Sprintf("%s: %s → %s", prefix, jsonText(a), jsonText(b)))
	}
}

func jsonText(v any) string {
	if v == nil {
		return "unset"
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// reportResume tells the user that a run resumes from path with the
// checkpoint's configuration, and which fields their flags override.
func reportResume(w io.Writer, path string, saved, resumed any) {
	diff := configDiff(saved, resumed)
	if len(diff) == 0 {
		fmt.Fprintf(w, "resuming %s with the configuration it was written with\n", path)
		return
	}
	fmt.Fprintf(w, "resuming %s with the configuration it was written with, except (set by flags):\n  %s\n", path, strings.Join(diff, "\n  "))
}
