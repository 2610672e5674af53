package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Settings is a flag.Value of KEY=VALUE pairs that set fields of
// configuration structs by their JSON names, the names the fields have in
// sampler.json and in checkpoints (nested structs' fields dotted:
// time_offsets.step, dit.width). A flag value holds one pair or several
// separated by commas, and the flag may be given several times; a later
// pair of a key replaces an earlier one. Set checks each key and parses
// each value for its field's type, so that a misspelt key or a value of
// the wrong type is a usage error at once; Apply sets the fields given.
// What the values mean together is for the struct's own Validate.
//
// Values: numbers and booleans as Go writes them (inf for +Inf), strings
// as they are, null for a pointer field's nil (flow.Sampler.EdgeMargin:
// the LG-VAE's own margin), comma-separated words for a list of strings
// (constraints=planar,connected), and JSON for anything else
// (experts=[{"file":"e.safetensors","from":0.95}]).
type Settings struct {
	roots []reflect.Type
	keys  map[string]settingField
	names []string // the keys, in declaration order
	pairs []setting
}

// settingField is where a key's value goes: the root struct and the
// field index path within it.
type settingField struct {
	root  int
	index []int
	typ   reflect.Type
}

// setting is one parsed KEY=VALUE pair.
type setting struct {
	key   string
	value reflect.Value
}

// NewSettings returns the settings of the structs roots point to (their
// types; the values are not used), whose JSON names must differ. Fields
// without a JSON name, or named "-", are not settable; exclude lists keys
// left out on purpose (set by flags of their own).
func NewSettings(exclude []string, roots ...any) *Settings {
	s := &Settings{keys: map[string]settingField{}}
	for i, r := range roots {
		t := reflect.TypeOf(r)
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			panic(fmt.Sprintf("cli: settings of %T, not a pointer to a struct", r))
		}
		s.roots = append(s.roots, t.Elem())
		s.collect(i, t.Elem(), nil, "", exclude)
	}
	return s
}

// collect adds the settable fields of t (under prefix) to s.
func (s *Settings) collect(root int, t reflect.Type, index []int, prefix string, exclude []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		key := prefix + name
		idx := append(slices.Clone(index), i)
		if f.Type.Kind() == reflect.Struct {
			s.collect(root, f.Type, idx, key+".", exclude)
			continue
		}
		if slices.Contains(exclude, key) {
			continue
		}
		if _, dup := s.keys[key]; dup {
			panic("cli: the setting " + key + " is in two structs")
		}
		s.keys[key] = settingField{root: root, index: idx, typ: f.Type}
		s.names = append(s.names, key)
	}
}

// Keys returns the settable keys, in the structs' order.
func (s *Settings) Keys() []string { return slices.Clone(s.names) }

// String returns the pairs given, comma-separated.
func (s *Settings) String() string {
	if s == nil {
		return ""
	}
	parts := make([]string, len(s.pairs))
	for i, p := range s.pairs {
		parts[i] = p.key + "=" + formatValue(p.value)
	}
	return strings.Join(parts, ",")
}

func formatValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return "null"
	}
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String {
		return strings.Join(v.Interface().([]string), ",")
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return fmt.Sprint(v.Interface())
	}
	return strings.Trim(string(b), `"`)
}

// keyPattern is what a key looks like: where a comma is followed by one,
// a new pair starts.
var keyPattern = regexp.MustCompile(`^[a-z][a-z0-9_.]*=`)

// Set parses one flag value: KEY=VALUE pairs separated by commas (a comma
// not followed by a key belongs to the value before it).
func (s *Settings) Set(text string) error {
	var parts []string
	for _, p := range strings.Split(text, ",") {
		if len(parts) > 0 && !keyPattern.MatchString(strings.TrimSpace(p)) {
			parts[len(parts)-1] += "," + p
			continue
		}
		parts = append(parts, p)
	}
	for _, p := range parts {
		key, value, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || key == "" {
			return fmt.Errorf("%q: want KEY=VALUE", p)
		}
		f, known := s.keys[key]
		if !known {
			return fmt.Errorf("unknown key %q (keys: %s)", key, strings.Join(s.names, ", "))
		}
		v, err := parseValue(f.typ, strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%s=%s: %v", key, value, err)
		}
		s.pairs = slices.DeleteFunc(s.pairs, func(q setting) bool { return q.key == key })
		s.pairs = append(s.pairs, setting{key, v})
	}
	return nil
}

// parseValue parses text as a value of type t.
func parseValue(t reflect.Type, text string) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return v, fmt.Errorf("not true or false")
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, t.Bits())
		if err != nil {
			return v, fmt.Errorf("not an integer")
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(text, 10, t.Bits())
		if err != nil {
			return v, fmt.Errorf("not a non-negative integer")
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(text, t.Bits())
		if err != nil || math.IsNaN(x) {
			return v, fmt.Errorf("not a number")
		}
		v.SetFloat(x)
	case reflect.Pointer:
		if text == "null" {
			return v, nil
		}
		e, err := parseValue(t.Elem(), text)
		if err != nil {
			return v, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(e)
		v.Set(p)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String && !strings.HasPrefix(text, "[") {
			var words []string
			for w := range strings.SplitSeq(text, ",") {
				if w = strings.TrimSpace(w); w != "" {
					words = append(words, w)
				}
			}
			v.Set(reflect.ValueOf(words).Convert(t))
			return v, nil
		}
		fallthrough
	default:
		if err := json.Unmarshal([]byte(text), v.Addr().Interface()); err != nil {
			return v, fmt.Errorf("not JSON of a %s: %v", t, err)
		}
	}
	return v, nil
}

// Given reports whether any pair was given.
func (s *Settings) Given() bool { return len(s.pairs) > 0 }

// Has reports whether key was given.
func (s *Settings) Has(key string) bool {
	return slices.ContainsFunc(s.pairs, func(p setting) bool { return p.key == key })
}

// Apply sets the fields given in the structs dst points to, which must be
// of the types NewSettings was given, in the same order (nil: skip that
// struct).
func (s *Settings) Apply(dst ...any) {
	for _, p := range s.pairs {
		f := s.keys[p.key]
		if f.root >= len(dst) || dst[f.root] == nil {
			continue
		}
		v := reflect.ValueOf(dst[f.root])
		if v.Type().Elem() != s.roots[f.root] {
			panic(fmt.Sprintf("cli: settings applied to %s, want *%s", v.Type(), s.roots[f.root]))
		}
		field := v.Elem().FieldByIndex(f.index)
		val := reflect.New(f.typ).Elem()
		val.Set(p.value)
		if f.typ.Kind() == reflect.Slice && !val.IsNil() {
			val = reflect.AppendSlice(reflect.MakeSlice(f.typ, 0, val.Len()), val) // the field's own copy
		}
		if f.typ.Kind() == reflect.Pointer && !val.IsNil() {
			c := reflect.New(f.typ.Elem())
			c.Elem().Set(val.Elem())
			val = c
		}
		field.Set(val)
	}
}
