package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/mol"
	"lgflow/graph/planar"
	"lgflow/vae"
)

var (
	loadOnce     sync.Once
	planarModel  *model
	mosesModel   *model
	errLoadModel error
)

// testModels loads the shipped planar and MOSES models once per test
// binary.
func testModels(t testing.TB) (planar, moses *model) {
	t.Helper()
	loadOnce.Do(func() {
		load := func(name string) (*model, error) {
			ae, err := vae.Load("../../pretrained/" + name + "/vae.safetensors")
			if err != nil {
				return nil, err
			}
			fm, err := flow.Load("../../pretrained/"+name+"/flow.safetensors", ae)
			if err != nil {
				return nil, err
			}
			return newModel(name, fm, mol.DefaultInferNH), nil
		}
		if planarModel, errLoadModel = load("planar"); errLoadModel == nil {
			mosesModel, errLoadModel = load("moses")
		}
	})
	if errLoadModel != nil {
		t.Fatal(errLoadModel)
	}
	return planarModel, mosesModel
}

// newTestServer serves the shipped models on a loopback httptest server.
func newTestServer(t testing.TB, lim limits) (*server, *httptest.Server) {
	t.Helper()
	planar, moses := testModels(t)
	s, err := newServer([]*model{planar, moses}, "planar", lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// post sends body to /sample and returns the response and its body.
func post(t testing.TB, ctx context.Context, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/sample", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestModelKinds(t *testing.T) {
	planar, moses := testModels(t)
	if planar.mol != nil {
		t.Errorf("planar model taken for molecules (%s)", planar.mol.Name)
	}
	if moses.mol != mol.MOSES {
		t.Errorf("moses model: encoding %v, want mol.MOSES", moses.mol)
	}
}

func TestValidation(t *testing.T) {
	lim := defaultLimits(1)
	lim.MaxN, lim.MaxSteps, lim.MaxBody = 8, 50, 256
	_, ts := newTestServer(t, lim)
	cases := []struct {
		name, body string
		status     int
		errPart    string // part of the JSON error message
	}{
		{"empty body", "", 400, "empty body"},
		{"not JSON", "n=4", 400, "invalid JSON"},
		{"array", "[1, 2]", 400, "invalid JSON"},
		{"unknown field", `{"n": 1, "temperature": 0.5}`, 400, `unknown field "temperature"`},
		{"n not an integer", `{"n": 1.5}`, 400, "invalid JSON"},
		{"n as a string", `{"n": "4"}`, 400, "invalid JSON"},
		{"negative seed", `{"seed": -1}`, 400, "invalid JSON"},
		{"trailing data", `{"n": 1} {"n": 2}`, 400, "data after the request object"},
		{"n zero", `{"n": 0}`, 400, "n must be between 1 and 8, got 0"},
		{"n negative", `{"n": -3}`, 400, "n must be between 1 and 8, got -3"},
		{"n too large", `{"n": 9}`, 400, "n must be between 1 and 8, got 9"},
		{"steps zero", `{"steps": 0}`, 400, "steps must be between 1 and 50, got 0"},
		{"steps too many", `{"steps": 51}`, 400, "steps must be between 1 and 50, got 51"},
		{"unknown model", `{"model": "ego"}`, 400, `unknown model "ego" (have [moses planar])`},
		{"unknown format", `{"format": "png"}`, 400, `unknown format "png"`},
		{"smiles of plain graphs", `{"format": "smiles"}`, 400, "format smiles needs a molecule model"},
		{"body too large", `{"model": "` + strings.Repeat("x", 300) + `"}`, 413, "larger than 256 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, context.Background(), ts.URL, c.body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, c.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var e struct{ Error string }
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("error body %q is not JSON: %v", body, err)
			}
			if !strings.Contains(e.Error, c.errPart) {
				t.Errorf("error %q does not contain %q", e.Error, c.errPart)
			}
		})
	}
}

func TestMethodsAndPaths(t *testing.T) {
	_, ts := newTestServer(t, defaultLimits(1))
	cases := []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/sample", http.StatusMethodNotAllowed},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed},
		{http.MethodGet, "/nothing", http.StatusNotFound},
		{http.MethodGet, "/healthz", http.StatusOK},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, ts.URL+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
	}
}

func TestFormats(t *testing.T) {
	_, ts := newTestServer(t, defaultLimits(1))
	planar, moses := testModels(t)
	const n, seed, steps = 3, 5, 4
	// The graphs a request must return: those of flow.Sample with the same
	// seed and steps.
	want := map[string][]*graph.Graph{}
	for _, m := range []*model{planar, moses} {
		gs, err := flow.Sample(context.Background(), m.flow, n, flow.WithSeed(seed), flow.WithSettings(func(s *flow.Sampler) { s.Steps = steps }))
		if err != nil {
			t.Fatal(err)
		}
		want[m.name] = gs
	}
	cases := []struct {
		model, format, contentType string
		check                      func(t *testing.T, body []byte, want []*graph.Graph)
	}{
		{"planar", "", "text/plain; charset=utf-8", checkGraph6},
		{"planar", "graph6", "text/plain; charset=utf-8", checkGraph6},
		{"moses", "graph6", "text/plain; charset=utf-8", checkGraph6},
		{"planar", "json", "application/json", checkNodeLink},
		{"moses", "json", "application/json", checkNodeLink},
		{"moses", "smiles", "text/plain; charset=utf-8", checkSMILES},
		{"planar", "svg", "image/svg+xml", checkSVG},
	}
	for _, c := range cases {
		t.Run(c.model+"/"+c.format, func(t *testing.T) {
			body := `{"model": "` + c.model + `", "n": 3, "seed": 5, "steps": 4, "format": "` + c.format + `"}`
			resp, out := post(t, context.Background(), ts.URL, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			if ct := resp.Header.Get("Content-Type"); ct != c.contentType {
				t.Errorf("Content-Type %q, want %q", ct, c.contentType)
			}
			c.check(t, out, want[c.model])
		})
	}
}

func checkGraph6(t *testing.T, body []byte, want []*graph.Graph) {
	var b bytes.Buffer
	if err := graph.WriteGraphs(&b, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, b.Bytes()) {
		t.Errorf("graph6 body\n%s\nwant (flow.Sample, same seed)\n%s", body, b.Bytes())
	}
}

func checkNodeLink(t *testing.T, body []byte, want []*graph.Graph) {
	var out struct {
		Model  string
		Seed   uint64
		Steps  int
		Graphs []json.RawMessage
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Seed != 5 || out.Steps != 4 || len(out.Graphs) != len(want) {
		t.Fatalf("seed %d steps %d with %d graphs, want 5, 4 and %d", out.Seed, out.Steps, len(out.Graphs), len(want))
	}
	for i, raw := range out.Graphs {
		g, err := graph.ReadNodeLink(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		if g.N() != want[i].N() || g.M() != want[i].M() || !sameEdges(g, want[i]) {
			t.Errorf("graph %d: %d nodes %d edges, want %d and %d (or different edges)", i, g.N(), g.M(), want[i].N(), want[i].M())
		}
		for u := range want[i].NodeLabels {
			if g.NodeLabels[u] != want[i].NodeLabels[u] {
				t.Errorf("graph %d node %d: label %d, want %d", i, u, g.NodeLabels[u], want[i].NodeLabels[u])
			}
		}
	}
}

func sameEdges(a, b *graph.Graph) bool {
	ea, eb := a.Edges(), b.Edges()
	if len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if ea[i] != eb[i] {
			return false
		}
	}
	return true
}

func checkSMILES(t *testing.T, body []byte, want []*graph.Graph) {
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d: %q", len(lines), len(want), body)
	}
	for i, l := range lines {
		s, err := mol.MOSES.DecodeDatasetGraph(want[i], mol.InferAromaticNH(mol.DefaultInferNH))
		if err != nil {
			s = "None"
		}
		if l != s {
			t.Errorf("line %d: %q, want %q", i, l, s)
		}
	}
}

func checkSVG(t *testing.T, body []byte, want []*graph.Graph) {
	if !bytes.Contains(body, []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(body), []byte("</svg>")) {
		t.Fatalf("not an SVG document: %.200q", body)
	}
	if got := bytes.Count(body, []byte("<rect")); got < len(want) {
		t.Errorf("%d panels, want %d", got, len(want))
	}
}

func TestBusy(t *testing.T) {
	lim := defaultLimits(1)
	lim.QueueWait, lim.MaxQueue = 50*time.Millisecond, 1
	s, ts := newTestServer(t, lim)
	s.sem <- struct{}{} // the only slot is taken

	// One request waits for QueueWait, then gets 503.
	start := time.Now()
	resp, body := post(t, context.Background(), ts.URL, `{"steps": 1}`)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503 (%s)", resp.StatusCode, body)
	}
	if waited := time.Since(start); waited < lim.QueueWait {
		t.Errorf("answered after %s, before the queue wait of %s", waited, lim.QueueWait)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1", ra)
	}
	if !strings.Contains(string(body), "no sampling slot freed up within 50ms") {
		t.Errorf("body %s", body)
	}

	// With the queue full, a request is turned away at once.
	s.waiting.Add(1)
	resp, body = post(t, context.Background(), ts.URL, `{"steps": 1}`)
	s.waiting.Add(-1)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "too many requests waiting") {
		t.Fatalf("queue full: status %d %s, want 503", resp.StatusCode, body)
	}

	// A waiting request gets the slot when it frees up in time.
	s.lim.QueueWait = 10 * time.Second
	go func() {
		for s.waiting.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		<-s.sem
	}()
	resp, body = post(t, context.Background(), ts.URL, `{"steps": 1}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the slot freed: status %d (%s), want 200", resp.StatusCode, body)
	}
}

// TestHangUpCancelsSampling checks that a client that hangs up stops its
// sampling call promptly and leaves no goroutine behind.
func TestHangUpCancelsSampling(t *testing.T) {
	lim := defaultLimits(1)
	const steps = 20000
	lim.MaxSteps = steps
	s, ts := newTestServer(t, lim)
	done := make(chan error, 1)
	s.onDone = func(err error) { done <- err }
	// Warm up (it starts the tensor worker pools, which live on) and time
	// a step, so that the bound below holds on a slow or busy machine and
	// under the race detector.
	const warmSteps = 5
	warm := time.Now()
	if resp, body := post(t, context.Background(), ts.URL, fmt.Sprintf(`{"steps": %d}`, warmSteps)); resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up: status %d %s", resp.StatusCode, body)
	}
	<-done
	step := time.Since(warm) / warmSteps
	http.DefaultClient.CloseIdleConnections()
	before := settledGoroutines(0)

	// The call takes steps steps; the bound is a few dozen, so only
	// cancellation can end it in time.
	ctx, hangUp := context.WithCancel(context.Background())
	reqErr := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/sample", strings.NewReader(fmt.Sprintf(`{"steps": %d}`, steps)))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		reqErr <- err
	}()
	for s.running.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a few steps in
	hungUp := time.Now()
	hangUp()
	if err := <-reqErr; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v, want context.Canceled", err)
	}
	bound := 2*time.Second + 40*step
	if steps*step < 5*bound {
		t.Fatalf("a step takes %s: %d steps are too few to tell cancellation from completion", step, steps)
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("sampling ended with %v, want context.Canceled", err)
		}
		t.Logf("sampling stopped %s after the client hung up (a step takes about %s)", time.Since(hungUp).Round(time.Millisecond), step.Round(time.Millisecond))
	case <-time.After(bound):
		t.Fatalf("sampling still running %s after the client hung up", bound)
	}
	if n := s.running.Load(); n != 0 {
		t.Errorf("%d sampling calls still counted as running", n)
	}
	http.DefaultClient.CloseIdleConnections()
	if after := settledGoroutines(before); after > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the hang-up, %d before:\n%s", after, before, buf[:runtime.Stack(buf, true)])
	}
}

// settledGoroutines waits up to 5 s for the number of goroutines to drop
// to at most target (or to stop changing when target is 0) and returns it.
func settledGoroutines(target int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if (target > 0 && m <= target) || (target == 0 && m == n) {
			return m
		}
		n = m
	}
	return n
}

func TestHealthz(t *testing.T) {
	s, ts := newTestServer(t, defaultLimits(2))
	get := func() (int, map[string]any) {
		resp, err := http.Get(ts.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, h
	}
	status, h := get()
	if status != http.StatusOK || h["status"] != "ok" || h["default"] != "planar" || h["slots"] != 2.0 {
		t.Errorf("healthz: %d %v", status, h)
	}
	s.draining.Store(true)
	if status, h = get(); status != http.StatusServiceUnavailable || h["status"] != "shutting down" {
		t.Errorf("healthz while draining: %d %v", status, h)
	}
}

func TestNewServerErrors(t *testing.T) {
	planar, _ := testModels(t)
	cases := []struct {
		name      string
		models    []*model
		byDefault string
		lim       limits
	}{
		{"no models", nil, "planar", defaultLimits(1)},
		{"unknown default", []*model{planar}, "tree", defaultLimits(1)},
		{"duplicate", []*model{planar, planar}, "planar", defaultLimits(1)},
		{"zero max n", []*model{planar}, "planar", limits{MaxSteps: 1, MaxBody: 1, Slots: 1}},
	}
	for _, c := range cases {
		if _, err := newServer(c.models, c.byDefault, c.lim, nil); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func TestRunShutdown(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		timeout time.Duration
		wantOK  bool // the running request completes
	}{
		{"running requests finish", `{"steps": 30}`, 2 * time.Minute, true},
		{"timeout cancels them", `{"n": 16, "steps": 1000}`, 100 * time.Millisecond, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := options{addr: "127.0.0.1:0", name: "planar", vaePath: "../../pretrained/planar/vae.safetensors",
				flowPath: "../../pretrained/planar/flow.safetensors", lim: defaultLimits(1), shutdownTimeout: c.timeout}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			ready, runErr := make(chan string, 1), make(chan error, 1)
			go func() { runErr <- run(ctx, o, nil, ready) }()
			var url string
			select {
			case addr := <-ready:
				url = "http://" + addr
			case err := <-runErr:
				t.Fatal(err)
			}
			status := make(chan int, 1)
			go func() {
				resp, err := http.Post(url+"/sample", "application/json", strings.NewReader(c.body))
				if err != nil {
					status <- 0
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status <- resp.StatusCode
			}()
			for running(t, url) == 0 {
				time.Sleep(2 * time.Millisecond)
			}
			stop()
			select {
			case err := <-runErr:
				if err != nil {
					t.Fatalf("run: %v", err)
				}
			case <-time.After(c.timeout + 20*time.Second):
				t.Fatalf("run did not return %s after the signal", c.timeout+20*time.Second)
			}
			if got := <-status; (got == http.StatusOK) != c.wantOK {
				t.Errorf("request status %d (0: connection closed), want success %v", got, c.wantOK)
			}
			if _, err := http.Get(url + "/healthz"); err == nil {
				t.Error("server still accepts connections after shutdown")
			}
		})
	}
}

// running returns the number of running sampling calls /healthz reports.
func running(t *testing.T, url string) float64 {
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Running float64 }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.Running
}

// TestBundleRecipe checks that a bundle samples with its recipe, the
// settings examples/planar samples the shipped planar models with, a
// request's steps replacing its grid; and with flow.Sample's defaults
// under -plain. The settings are spelled out here on the flow loaded
// without its bundle.
func TestBundleRecipe(t *testing.T) {
	m, plain := loadShipped(t, "planar", "")
	if len(m.settings) != 8 || !strings.Contains(m.settings[0], `recipe "default"`) {
		t.Fatalf("settings %q, want the recipe, steps, time shift, time offsets, batch, expert, edge rule and margin", m.settings)
	}
	expert, err := flow.Load("../../pretrained/planar/flow-expert.safetensors", m.flow.VAE)
	if err != nil {
		t.Fatal(err)
	}
	tuned := func(steps int, shift float64) flow.SampleOption {
		return flow.WithSettings(func(s *flow.Sampler) {
			s.Steps, s.TimeShift = steps, shift
			s.Experts = []flow.Expert{{Model: expert, From: flow.DefaultExpertFrom}}
			s.Offsets = flow.TimeOffsets{Step: 0.01, From: 0.5, Jump: -0.02}
			s.EdgeRule, s.EdgeMargin = vae.BothDirections.String(), ptr(1.25)
		})
	}
	body := sampleOne(t, m, `{"n": 3, "seed": 7, "steps": 12}`)
	want, err := flow.Sample(context.Background(), plain, 3, flow.WithSeed(7), tuned(12, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkGraph6(t, body, want)

	// Without steps, the request samples on the recipe's grid, as examples/planar.
	body = sampleOne(t, m, `{"n": 2, "seed": 7}`)
	want, err = flow.Sample(context.Background(), plain, 2, flow.WithSeed(7), tuned(70, 1.43))
	if err != nil {
		t.Fatal(err)
	}
	checkGraph6(t, body, want)
}

// TestCompletedSettings checks -recipe complete (-complete): a planar
// model samples with the expert, the settings tuned for completion and the
// completion of its valid samples, and gives the graphs of flow.Sample
// with those options.
func TestCompletedSettings(t *testing.T) {
	m, plainFlow := loadShipped(t, "planar", "complete")
	if len(m.settings) != 10 || !strings.Contains(m.settings[0], `recipe "complete"`) || !strings.Contains(m.settings[8], "completion") {
		t.Fatalf("settings %q, want the recipe, steps, time shift, time offsets, batch, expert, edge rule, margin, completion and its bound", m.settings)
	}
	body := sampleOne(t, m, `{"n": 4, "seed": 3, "steps": 12}`)
	expert, err := flow.Load("../../pretrained/planar/flow-expert.safetensors", m.flow.VAE)
	if err != nil {
		t.Fatal(err)
	}
	valid := func(g *graph.Graph) bool { return graph.IsConnected(g) && planar.IsPlanar(g) }
	tuned := flow.WithSettings(func(s *flow.Sampler) {
		s.Steps = 12
		s.Experts = []flow.Expert{{Model: expert, From: flow.DefaultExpertFrom}}
		s.Offsets = flow.TimeOffsets{Step: 0.015, From: 0.5, Jump: -0.035}
		s.EdgeRule, s.EdgeMargin = vae.BothDirections.String(), ptr(1.5)
	})
	complete := flow.WithSettings(func(s *flow.Sampler) { s.Decode = append(s.Decode, vae.WithEdgeCompletion(valid, -4)) })
	want, err := flow.Sample(context.Background(), plainFlow, 4, flow.WithSeed(3), tuned, complete)
	if err != nil {
		t.Fatal(err)
	}
	checkGraph6(t, body, want)
	plain, err := flow.Sample(context.Background(), plainFlow, 4, flow.WithSeed(3), tuned)
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for i := range want {
		added += want[i].M() - plain[i].M()
	}
	if added <= 0 {
		// With these seeds and steps completion adds 9 edges; without any
		// the comparison above would not tell it from plain decoding.
		t.Errorf("completion added %d edges to the samples, want some", added)
	}
}

// sampleOne serves m alone and returns the body of one successful POST
// /sample with the JSON request req.
func sampleOne(t *testing.T, m *model, req string) []byte {
	t.Helper()
	s, err := newServer([]*model{m}, m.name, defaultLimits(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.handler())
	defer ts.Close()
	resp, body := post(t, context.Background(), ts.URL, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	return body
}

// TestShippedMOSESSettings checks that the MOSES bundle samples as
// examples/moses samples the shipped models (its recipe: temperature 0.8,
// and the mid-path expert from 0.4 until 0.75).
func TestShippedMOSESSettings(t *testing.T) {
	m, plainFlow := loadShipped(t, "moses", "")
	wantExpert := "expert flow-expert.safetensors from 0.4 until 0.75"
	if !slices.Contains(m.settings, "temperature 0.8") || !slices.Contains(m.settings, wantExpert) {
		t.Fatalf("settings %q, want temperature 0.8 and %q", m.settings, wantExpert)
	}
	expert, err := flow.Load("../../pretrained/moses/flow-expert.safetensors", m.flow.VAE)
	if err != nil {
		t.Fatal(err)
	}
	// 10 steps: the grid's steps from 0.4 to 0.7 are the expert's.
	body := sampleOne(t, m, `{"n": 4, "seed": 7, "steps": 10}`)
	want, err := flow.Sample(context.Background(), plainFlow, 4, flow.WithSeed(7), flow.WithSettings(func(s *flow.Sampler) {
		s.Steps, s.Temperature = 10, 0.8
		s.Experts = []flow.Expert{{Model: expert, From: 0.4, Until: 0.75}, {Model: plainFlow, From: 0.75}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	checkGraph6(t, body, want)
	plain, err := flow.Sample(context.Background(), plainFlow, 4, flow.WithSeed(7), flow.WithSettings(func(s *flow.Sampler) { s.Steps, s.Temperature = 10, 0.8 }))
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := graph.WriteGraphs(&a, want); err != nil {
		t.Fatal(err)
	}
	if err := graph.WriteGraphs(&b, plain); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the expert changed none of the 4 molecules: the check is vacuous")
	}
}

// loadShipped loads the shipped bundle of a dataset as the server does for
// -model (with -recipe recipe), checks that under -plain it samples as the
// flow loaded without its bundle does, and returns the model and that flow.
func loadShipped(t *testing.T, name, recipe string) (*model, *flow.Model) {
	t.Helper()
	dir := "../../pretrained/" + name
	o := options{name: name, dir: dir, recipe: recipe}
	models, err := loadModels(o)
	if err != nil {
		t.Fatal(err)
	}
	plainFlow, err := flow.Load(dir+"/flow.safetensors", models[0].flow.VAE)
	if err != nil {
		t.Fatal(err)
	}
	o.plain = true
	plain, err := loadModels(o)
	if err != nil {
		t.Fatal(err)
	}
	want, err := flow.Sample(context.Background(), plainFlow, 2, flow.WithSeed(1), flow.WithSettings(func(s *flow.Sampler) { s.Steps, s.TimeShift = 3, 1 }))
	if err != nil {
		t.Fatal(err)
	}
	checkGraph6(t, sampleOne(t, plain[0], `{"n": 2, "seed": 1, "steps": 3}`), want)
	return models[0], plainFlow
}

func ptr(v float64) *float64 { return &v }
