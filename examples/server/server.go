package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"lgflow/flow"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/graph/mol"
	"lgflow/graph/render"
)

// Output formats of POST /sample.
const (
	formatGraph6 = "graph6" // one graph6 (digraph6 for DAGs) line per graph
	formatJSON   = "json"   // {"model", "seed", "steps", "graphs": [node-link objects]}
	formatSMILES = "smiles" // one canonical SMILES per line, "None" where a graph is no valid molecule
	formatSVG    = "svg"    // a grid drawing of the graphs
)

var formats = []string{formatGraph6, formatJSON, formatSMILES, formatSVG}

// model is a named pair of shipped models the server samples from.
type model struct {
	name string
	flow *flow.Model
	// opts are the sampler options of every request (with the seed and
	// steps of the request after them); settings name them for logs.
	opts     []flow.SampleOption
	settings []string
	// mol is the molecule encoding the LG-VAE's node and edge classes
	// match (nil for plain graphs): it turns sampled graphs into SMILES,
	// with the decode options molOpts.
	mol     *mol.Encoding
	molOpts []mol.DecodeOption
}

// newModel names m and finds its molecule encoding, if any: an LG-VAE
// with an encoding's atom types as node classes and its bond types as edge
// classes samples molecules of that encoding, decoded with inferNH
// (mol.InferAromaticNH; 0: the paper's decoding).
func newModel(name string, m *flow.Model, inferNH int) *model {
	md := &model{name: name, flow: m}
	c := m.VAE.Cfg
	for _, e := range []*mol.Encoding{mol.MOSES, mol.GuacaMol} {
		if !c.Directed && c.NodeClasses == e.NumAtomTypes() && c.EdgeClasses+1 == e.NumBondTypes() {
			md.mol = e
			md.molOpts = []mol.DecodeOption{mol.InferAromaticNH(inferNH)}
			break
		}
	}
	return md
}

// limits are what the server accepts and how much work it takes on.
type limits struct {
	// MaxN is the most graphs one request may ask for.
	MaxN int
	// MaxSteps is the most integration steps one request may ask for.
	MaxSteps int
	// MaxBody is the largest request body in bytes.
	MaxBody int64
	// Slots is the number of sampling calls that run at once.
	Slots int
	// MaxQueue is the number of requests that may wait for a slot; more
	// are turned away at once with 503.
	MaxQueue int
	// QueueWait is how long a request waits for a slot before 503.
	QueueWait time.Duration
	// BodyTimeout bounds the time to read a request body.
	BodyTimeout time.Duration
}

// defaultLimits suit the shipped cpu-preset models on a small machine.
func defaultLimits(slots int) limits {
	return limits{MaxN: 256, MaxSteps: 1000, MaxBody: 1 << 14, Slots: max(slots, 1), MaxQueue: 64,
		QueueWait: 30 * time.Second, BodyTimeout: 10 * time.Second}
}

// server is the sampling service. Its handler is safe for concurrent use.
type server struct {
	lim       limits
	models    map[string]*model
	byDefault string
	sem       chan struct{} // one token per running sampling call
	log       *slog.Logger

	waiting  atomic.Int64 // requests waiting for a slot
	running  atomic.Int64 // sampling calls in progress
	draining atomic.Bool  // shutting down: /healthz reports 503

	// onDone, when set, is called after each sampling call returns, with
	// its error (tests watch cancellation through it).
	onDone func(err error)
}

// newServer returns a server for the models; byDefault names the one a
// request without "model" gets. log may be nil (no access log).
func newServer(models []*model, byDefault string, lim limits, log *slog.Logger) (*server, error) {
	if len(models) == 0 {
		return nil, errors.New("no models to serve")
	}
	if lim.MaxN <= 0 || lim.MaxSteps <= 0 || lim.MaxBody <= 0 || lim.Slots <= 0 || lim.MaxQueue < 0 || lim.QueueWait < 0 {
		return nil, fmt.Errorf("invalid limits %+v", lim)
	}
	s := &server{lim: lim, models: map[string]*model{}, byDefault: byDefault, sem: make(chan struct{}, lim.Slots), log: log}
	for _, m := range models {
		if _, dup := s.models[m.name]; dup {
			return nil, fmt.Errorf("model %q given twice", m.name)
		}
		s.models[m.name] = m
	}
	if _, ok := s.models[byDefault]; !ok {
		return nil, fmt.Errorf("default model %q is not among the models", byDefault)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// handler routes POST /sample and GET /healthz.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sample", s.sample)
	mux.HandleFunc("GET /healthz", s.healthz)
	return mux
}

// request is the JSON body of POST /sample.
type request struct {
	// Model names the model (default: the server's default model).
	Model string `json:"model"`
	// N is the number of graphs (default 1).
	N *int `json:"n"`
	// Seed makes the sample reproducible (default 0).
	Seed uint64 `json:"seed"`
	// Steps is the number of integration steps, on a uniform grid
	// (default: the model's grid, the tuned one of a model sampling with
	// its dataset's settings, else flow.Sample's 100 steps; MaxSteps if
	// that is below 100).
	Steps *int `json:"steps"`
	// Format is graph6 (default), json, smiles or svg.
	Format string `json:"format"`
	// Condition is the condition of a conditional model's graphs: a
	// string as cond.Schema.Parse reads it ("label=tree",
	// "prop=170", "label=planar,edges=170"; "null": none), or an object
	// ({"label": "tree", "edges": 170}). Absent or null: none, the
	// model's unconditional distribution.
	Condition json.RawMessage `json:"condition"`
	// Guidance is the classifier-free guidance scale (flow.WithGuidanceScale;
	// default: the model's recipe's, else 1), in [0, flow.MaxGuidanceScale];
	// other than 1 only for a conditional model.
	Guidance *float64 `json:"guidance"`
}

// job is a validated request.
type job struct {
	model  *model
	n      int
	seed   uint64
	steps  int // 0: the model's grid
	format string
	// cond is the graphs' condition (nil: none), guidance the guidance
	// scale (nil: the model's).
	cond     *cond.Value
	guidance *float64
}

// httpError is an error with the status it is answered with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// parse validates a request body.
func (s *server) parse(body []byte) (job, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return job{}, badRequest(`empty body: send a JSON object such as {"n": 4, "seed": 1}`)
	}
	var req request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return job{}, badRequest("invalid JSON body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return job{}, badRequest("invalid JSON body: data after the request object")
	}
	j := job{n: 1, seed: req.Seed, format: formatGraph6}
	if s.lim.MaxSteps < 100 {
		j.steps = s.lim.MaxSteps
	}
	name := req.Model
	if name == "" {
		name = s.byDefault
	}
	var ok bool
	if j.model, ok = s.models[name]; !ok {
		return job{}, badRequest("unknown model %q (have %v)", name, s.modelNames())
	}
	if req.N != nil {
		j.n = *req.N
	}
	if j.n < 1 || j.n > s.lim.MaxN {
		return job{}, badRequest("n must be between 1 and %d, got %d", s.lim.MaxN, j.n)
	}
	if req.Steps != nil {
		j.steps = *req.Steps
		if j.steps < 1 || j.steps > s.lim.MaxSteps {
			return job{}, badRequest("steps must be between 1 and %d, got %d", s.lim.MaxSteps, j.steps)
		}
	}
	if req.Format != "" {
		j.format = req.Format
	}
	switch j.format {
	case formatGraph6, formatJSON, formatSVG:
	case formatSMILES:
		if j.model.mol == nil {
			return job{}, badRequest("format smiles needs a molecule model; %q samples plain graphs", name)
		}
	default:
		return job{}, badRequest("unknown format %q (want one of %v)", j.format, formats)
	}
	fm := j.model.flow
	if text, ok, err := conditionText(req.Condition); err != nil {
		return job{}, err
	} else if ok {
		c, err := fm.Cond.Parse(text)
		if err != nil {
			return job{}, badRequest("condition: %s", strings.TrimPrefix(err.Error(), "cond: "))
		}
		if !c.IsZero() {
			j.cond = &c
		}
	}
	if w := req.Guidance; w != nil {
		switch {
		case !(*w >= 0 && *w <= flow.MaxGuidanceScale):
			return job{}, badRequest("guidance must be between 0 and %d (1: plain conditional sampling, 0: unconditional), got %g", flow.MaxGuidanceScale, *w)
		case fm.Cond == nil && *w != 1:
			return job{}, badRequest("guidance: model %q was trained without conditions; classifier-free guidance needs a conditional model", name)
		}
		j.guidance = w
	}
	return j, nil
}

// conditionText returns a request's condition as cond.Schema.Parse
// reads it: a string as it is, an object's keys and values as
// comma-separated key=value pairs; ok is false for none (absent, null).
func conditionText(raw json.RawMessage) (text string, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", false, badRequest("condition: %v", err)
		}
		return text, true, nil
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", false, badRequest("condition: %v", err)
		}
		if len(obj) == 0 {
			return "", false, badRequest(`condition: an empty object (want {"label": "NAME"} and/or {"PROPERTY": NUMBER, ...})`)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			v := bytes.TrimSpace(obj[k])
			var s string
			var num json.Number
			switch {
			case len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil:
			case len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') && json.Unmarshal(v, &num) == nil:
				s = num.String()
			default:
				return "", false, badRequest("condition: %q is %s, neither a string (the label) nor a number (a property)", k, v)
			}
			if strings.ContainsAny(k+s, ",=") {
				return "", false, badRequest("condition: %q: %q: names and values hold no ',' or '='", k, s)
			}
			parts[i] = k + "=" + s
		}
		return strings.Join(parts, ","), true, nil
	}
	return "", false, badRequest(`condition must be a string such as "label=tree" or an object such as {"label": "tree"}, got %s`, raw)
}

func (s *server) modelNames() []string {
	names := make([]string, 0, len(s.models))
	for n := range s.models {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// sample serves POST /sample.
func (s *server) sample(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	j, out, err := s.serveSample(w, r)
	status := http.StatusOK
	if err != nil {
		status = http.StatusInternalServerError
		var he *httpError
		if errors.As(err, &he) {
			status = he.status
		}
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter()))
		}
		if r.Context().Err() != nil {
			// The client hung up: there is nobody to answer.
			s.log.Info("sample", "status", "client gone", "n", j.n, "seconds", time.Since(start).Seconds())
			return
		}
		writeJSON(w, status, map[string]string{"error": err.Error()})
	} else {
		w.Header().Set("Content-Type", contentType(j.format))
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(http.StatusOK)
		w.Write(out)
	}
	model := ""
	if j.model != nil {
		model = j.model.name
	}
	cond := ""
	if j.cond != nil {
		cond = j.model.flow.Cond.Format(*j.cond)
	}
	s.log.Info("sample", "status", status, "model", model, "n", j.n, "steps", j.steps, "format", j.format, "condition", cond,
		"seconds", time.Since(start).Seconds(), "error", err)
}

// serveSample reads and validates the request, waits for a slot, samples
// and encodes the graphs.
func (s *server) serveSample(w http.ResponseWriter, r *http.Request) (job, []byte, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return job{}, nil, err
	}
	j, err := s.parse(body)
	if err != nil {
		return j, nil, err
	}
	release, err := s.acquire(r.Context())
	if err != nil {
		return j, nil, err
	}
	defer release()
	out, err := s.run(r.Context(), j)
	return j, out, err
}

// readBody reads the request body within the size and time limits.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	if s.lim.BodyTimeout > 0 {
		// Not http.Server.ReadTimeout: its deadline would end a long
		// sampling call by cancelling the request's context.
		rc.SetReadDeadline(time.Now().Add(s.lim.BodyTimeout))
		defer rc.SetReadDeadline(time.Time{})
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.lim.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", s.lim.MaxBody)}
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return body, nil
}

// acquire waits for a sampling slot for at most QueueWait and returns the
// function that gives it back, or a 503 error when none freed up in time
// or too many requests are waiting already.
func (s *server) acquire(ctx context.Context) (func(), error) {
	release := func() { <-s.sem }
	select {
	case s.sem <- struct{}{}:
		return release, nil
	default:
	}
	if s.waiting.Add(1) > int64(s.lim.MaxQueue) {
		s.waiting.Add(-1)
		return nil, &httpError{http.StatusServiceUnavailable, "server busy: too many requests waiting"}
	}
	defer s.waiting.Add(-1)
	t := time.NewTimer(s.lim.QueueWait)
	defer t.Stop()
	select {
	case s.sem <- struct{}{}:
		return release, nil
	case <-t.C:
		return nil, &httpError{http.StatusServiceUnavailable, fmt.Sprintf("server busy: no sampling slot freed up within %s", s.lim.QueueWait)}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// retryAfter is the Retry-After advice in seconds: the queue wait, at
// least one second.
func (s *server) retryAfter() int {
	return max(1, int(math.Ceil(s.lim.QueueWait.Seconds())))
}

// run samples the job's graphs and encodes them. ctx is the request's
// context: flow.Sample returns as soon as it is cancelled.
func (s *server) run(ctx context.Context, j job) ([]byte, error) {
	s.running.Add(1)
	opts := append(append([]flow.SampleOption(nil), j.model.opts...), flow.WithSeed(j.seed))
	if j.steps > 0 {
		// A request's steps replace the model's grid by a uniform one.
		opts = append(opts, flow.WithSettings(func(s *flow.Sampler) { s.Steps, s.TimeShift = j.steps, 1 }))
	}
	if j.cond != nil {
		opts = append(opts, flow.WithCondition(*j.cond))
	}
	if j.guidance != nil {
		opts = append(opts, flow.WithGuidanceScale(*j.guidance))
	}
	gs, err := flow.Sample(ctx, j.model.flow, j.n, opts...)
	s.running.Add(-1)
	if s.onDone != nil {
		s.onDone(err)
	}
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := encode(&b, j, gs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encode writes gs in the job's format.
func encode(w *bytes.Buffer, j job, gs []*graph.Graph) error {
	switch j.format {
	case formatGraph6:
		return graph.WriteGraphs(w, gs)
	case formatJSON:
		out := struct {
			Model     string            `json:"model"`
			Seed      uint64            `json:"seed"`
			Steps     int               `json:"steps,omitempty"`     // absent: the model's grid
			Condition string            `json:"condition,omitempty"` // absent: none
			Guidance  *float64          `json:"guidance,omitempty"`  // absent: the model's
			Graphs    []json.RawMessage `json:"graphs"`
		}{Model: j.model.name, Seed: j.seed, Steps: j.steps, Guidance: j.guidance, Graphs: make([]json.RawMessage, len(gs))}
		if j.cond != nil {
			out.Condition = j.model.flow.Cond.Format(*j.cond)
		}
		for i, g := range gs {
			var b bytes.Buffer
			if err := graph.WriteNodeLink(&b, g); err != nil {
				return err
			}
			out.Graphs[i] = bytes.TrimSpace(b.Bytes())
		}
		return json.NewEncoder(w).Encode(out)
	case formatSMILES:
		for _, g := range gs {
			s, err := j.model.mol.DecodeDatasetGraph(g, j.model.molOpts...)
			if err != nil {
				s = "None"
			}
			w.WriteString(s)
			w.WriteByte('\n')
		}
		return nil
	case formatSVG:
		return render.GridSVG(w, gs, 0, render.Options{Width: 200, Height: 200, Seed: j.seed})
	}
	return fmt.Errorf("unknown format %q", j.format)
}

func contentType(format string) string {
	switch format {
	case formatJSON:
		return "application/json"
	case formatSVG:
		return "image/svg+xml"
	}
	return "text/plain; charset=utf-8"
}

// healthz serves GET /healthz: 200 with the models and the load, or 503
// while the server shuts down.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	status, state := http.StatusOK, "ok"
	if s.draining.Load() {
		status, state = http.StatusServiceUnavailable, "shutting down"
	}
	out := map[string]any{
		"status": state, "models": s.modelNames(), "default": s.byDefault,
		"slots": s.lim.Slots, "running": s.running.Load(), "waiting": s.waiting.Load(),
	}
	conds := map[string]string{}
	for name, m := range s.models {
		if m.flow.Cond != nil {
			conds[name] = m.flow.Cond.Describe()
		}
	}
	if len(conds) > 0 {
		out["conditions"] = conds
	}
	writeJSON(w, status, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
