package cli

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"lgflow/flow"
	"lgflow/vae"
)

// flagSet returns a flag set that reports errors instead of exiting.
func flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// TestFlagDefaults pins every shared flag's name and default: the groups
// declare them, so every command that takes one has these.
func TestFlagDefaults(t *testing.T) {
	fs := flagSet()
	AddData(fs, true)
	AddDevice(fs)
	AddSampler(fs, true)
	AddMaxTrain(fs)
	AddConfig(fs, "a run", nil, &vae.TrainConfig{})
	want := map[string]string{"dataset": "", "data": "", "data-seed": "0", "device": "cpu", "recipe": "", "sampler": "", "max-train": "0", "config": ""}
	got := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { got[f.Name] = f.DefValue })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flags and defaults %v, want %v", got, want)
	}
	// The groups that leave a flag out.
	fs = flagSet()
	AddData(fs, false)
	AddSampler(fs, false)
	for _, name := range []string{"dataset", "recipe"} {
		if fs.Lookup(name) != nil {
			t.Errorf("-%s registered where it was left out", name)
		}
	}
}

// TestFlagMeanings parses command lines of each group and checks what the
// values mean: the fields set, the datasets.Load options, the sampler's
// settings and the flow.Sample options.
func TestFlagMeanings(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		check func(t *testing.T, d *Data, dev *Device, s *Sampler, maxTrain int)
	}{
		{"defaults", nil, func(t *testing.T, d *Data, dev *Device, s *Sampler, maxTrain int) {
			if o := d.Options(); o.Dir != "" || o.Seed != 0 || d.Dataset != "" || dev.Name != "cpu" || maxTrain != 0 {
				t.Errorf("data %+v, device %q, max-train %d", d, dev.Name, maxTrain)
			}
			if len(s.Options()) != 0 {
				t.Errorf("%d sample options without sampler flags, want none (the recipe as it is)", len(s.Options()))
			}
			var got flow.Sampler
			s.Edit(&got)
			if !reflect.DeepEqual(got, flow.Sampler{}) {
				t.Errorf("no -sampler edits %+v", got)
			}
		}},
		{"data", []string{"-dataset", "tree", "-data", "/d", "-data-seed", "7", "-max-train", "16"}, func(t *testing.T, d *Data, dev *Device, s *Sampler, maxTrain int) {
			if o := d.Options(); d.Dataset != "tree" || o.Dir != "/d" || o.Seed != 7 || maxTrain != 16 {
				t.Errorf("dataset %q, options %+v, max-train %d", d.Dataset, d.Options(), maxTrain)
			}
		}},
		{"recipe", []string{"-recipe", "constrained"}, func(t *testing.T, d *Data, dev *Device, s *Sampler, maxTrain int) {
			if s.Recipe != "constrained" || len(s.Options()) != 1 {
				t.Errorf("recipe %q, %d options", s.Recipe, len(s.Options()))
			}
		}},
		{"sampler settings", []string{"-sampler", "steps=70,time_shift=1.43,constraints=planar,connected,fill=-4", "-sampler", "edge_margin=null,time_offsets.jump=-0.02,steps=100",
			"-sampler", `experts=[{"file":"e.safetensors","from":0.95}]`}, func(t *testing.T, d *Data, dev *Device, s *Sampler, maxTrain int) {
			got := flow.Sampler{EdgeMargin: new(float64), Temperature: 0.8}
			s.Edit(&got)
			fill := -4.0
			want := flow.Sampler{Steps: 100, TimeShift: 1.43, Constraints: []string{"planar", "connected"}, Fill: &fill, Temperature: 0.8,
				Offsets: flow.TimeOffsets{Jump: -0.02}, Experts: []flow.Expert{{File: "e.safetensors", From: 0.95}}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("edited %+v, want %+v", got, want)
			}
			if len(s.Options()) != 1 {
				t.Errorf("%d options, want the settings", len(s.Options()))
			}
		}},
		{"device", []string{"-device", "cuda"}, func(t *testing.T, d *Data, dev *Device, s *Sampler, maxTrain int) {
			if dev.Name != "cuda" || dev.Describe() != "" || dev.Stats() != "" {
				t.Errorf("device %q, before Backend: %q %q", dev.Name, dev.Describe(), dev.Stats())
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flagSet()
			d, dev, s, maxTrain := AddData(fs, true), AddDevice(fs), AddSampler(fs, true), AddMaxTrain(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			c.check(t, d, dev, s, *maxTrain)
		})
	}
	fs := flagSet()
	dev := AddDevice(fs)
	if err := fs.Parse([]string{"-device", "tpu"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Backend(io.Discard, false); err == nil || !strings.Contains(err.Error(), "unknown device") {
		t.Errorf("-device tpu: %v", err)
	}
}

// TestSettings checks -sampler's and -config's KEY=VALUE parsing: keys by
// their JSON names (nested ones dotted), each value parsed for its field's
// type, later pairs replacing earlier ones, and clear errors.
func TestSettings(t *testing.T) {
	type run struct {
		Every time.Duration `json:"every"`
		Tag   string        `json:"tag"`
		Flag  bool          `json:"flag"`
		Hide  int           `json:"-"`
		Inner struct {
			N uint64 `json:"n"`
		} `json:"inner"`
	}
	s := NewSettings([]string{"seed"}, &vae.TrainConfig{}, &run{})
	for _, c := range []struct {
		text, err string
	}{
		{"steps=10,lr=3e-4", ""},
		{"bucket_by_size=true, tag=a b", ""},
		{"inner.n=5", ""},
		{"every=1500000000", ""},
		{"steps=20", ""},
		{"steps=x", "steps=x: not an integer"},
		{"lr=NaN", "lr=NaN: not a number"},
		{"flag=maybe", "flag=maybe: not true or false"},
		{"inner.n=-1", "not a non-negative integer"},
		{"seed=3", `unknown key "seed"`},
		{"Hide=1", `unknown key "Hide"`},
		{"steps", "want KEY=VALUE"},
	} {
		err := s.Set(c.text)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %v, want %q", c.text, err, c.err)
		}
	}
	tc, r := vae.TrainConfig{Steps: 1, LR: 1, WeightDecay: 0.5}, run{}
	s.Apply(&tc, &r)
	if tc.Steps != 20 || tc.LR != 3e-4 || !tc.BucketBySize || tc.WeightDecay != 0.5 {
		t.Errorf("train config %+v", tc)
	}
	if r.Tag != "a b" || r.Inner.N != 5 || r.Every != 1500*time.Millisecond || r.Flag {
		t.Errorf("run %+v", r)
	}
	if !s.Has("steps") || s.Has("beta1") || !s.Given() {
		t.Errorf("Has(steps) %v, Has(beta1) %v, Given %v", s.Has("steps"), s.Has("beta1"), s.Given())
	}
	// Applied to one struct of two: the other's keys are skipped.
	tc = vae.TrainConfig{}
	s.Apply(&tc)
	if tc.Steps != 20 {
		t.Errorf("steps %d", tc.Steps)
	}
	// Pointer and list values are the field's own copies.
	ss := NewSettings(nil, &flow.Sampler{})
	if err := ss.Set("fill=-4,complete=planar,connected"); err != nil {
		t.Fatal(err)
	}
	var a, b flow.Sampler
	ss.Apply(&a)
	ss.Apply(&b)
	*a.Fill, a.Complete[0] = 1, "dag"
	if *b.Fill != -4 || b.Complete[0] != "planar" {
		t.Errorf("the second sampler shares the first's values: %v %v", *b.Fill, b.Complete)
	}
	if got := ss.String(); got != "fill=-4,complete=planar,connected" {
		t.Errorf("String() = %q", got)
	}
}
