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

// The training commands resume by one rule: a run into a directory that
// holds a training state continues it, with the configuration stored in
// its checkpoint; a setting overrides it only when the user gives it, and
// the run lists what it overrides. Presets and defaults do not apply to a
// resumed run.

// resumeConfig applies that rule. Without a state at path, it returns cfg
// (the preset with the settings applied). Otherwise it reads the state's
// configuration, lets check refuse it (an explicit -preset of another
// architecture), applies override (the settings the user gave) to it,
// lists the differences on stderr and returns the result.
func resumeConfig[C any](cfg C, path string, read func(string) (C, error), check func(saved C) error, override func(*C)) (C, error) {
	if _, err := os.Stat(path); err != nil {
		return cfg, nil
	}
	saved, err := read(path)
	if err != nil {
		return cfg, err
	}
	if err := check(saved); err != nil {
		return cfg, err
	}
	resumed := saved
	override(&resumed)
	reportResume(stderr, path, saved, resumed)
	return resumed, nil
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
