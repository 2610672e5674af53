//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lgflow/nn"
	"lgflow/optim"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// childEnv, set to 1, makes the test binary run lgflow's main with its
// arguments instead of the tests: the usual way for a test to start the
// command as a subprocess without building it.
const childEnv = "LGFLOW_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// child returns the command "lgflow args..." run by the test binary.
func child(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

// tinyVAE is train-vae on 16 tree graphs with a model of a few thousand
// parameters: about 20 steps per second on a loaded core. It logs every
// step (the kill schedule follows the log), validates every 10 steps (so
// vae.safetensors is rewritten too) and checkpoints every 3, so a resumed
// run replays up to two steps.
func tinyVAE(dir string, steps int, extra ...string) []string {
	return append([]string{"train-vae", "-dataset", "tree", "-train-split", "val", "-val-split", "test", "-max-train", "16",
		"-config", "k=4,latent=4,phi_width=8,width=8,layers=1,deepset=4,batch_size=4,lr=0.05",
		"-config", "steps=" + strconv.Itoa(steps) + ",val_every=10,checkpoint_every=3,log_every=1,seed=3",
		"-out", dir}, extra...)
}

// isTemp reports whether name is an atomicfile temporary file (".NAME.tmpXXXX").
func isTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".safetensors.tmp")
}

// loadVAEState reads a train-vae state checkpoint through trainer.LoadState
// into a model and optimiser built from its own configuration, and returns
// its step. It fails the test if a weight is not finite.
func loadVAEState(t *testing.T, path string) int {
	t.Helper()
	f, err := safetensors.Load(path)
	if err != nil {
		t.Fatalf("checkpoint unreadable: %v", err)
	}
	var cfg vae.Config
	if err := trainer.UnmarshalMeta(f.Metadata, trainer.MetaConfig, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m, err := vae.New(cfg, 0)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ps := trainer.OptimParams(m)
	opt, err := optim.NewAdamW(ps, optim.DefaultAdamWConfig())
	if err != nil {
		t.Fatal(err)
	}
	st, err := trainer.LoadState(path, m, opt)
	if err != nil {
		t.Fatalf("checkpoint unreadable: %v", err)
	}
	for _, p := range ps {
		if !finite(p.Value) {
			t.Fatalf("%s (step %d): weight %q is not finite", path, st.Step, p.Name)
		}
	}
	return st.Step
}

func finite(x *tensor.Tensor) bool {
	s := tensor.SumAll(x)
	return !math.IsNaN(s) && !math.IsInf(s, 0)
}

// checkRunDir asserts what a kill may leave in a train-vae directory: every
// *.safetensors loads (the model through vae.Load, the state through
// trainer.LoadState) with finite weights, and anything else is an atomic
// write's temporary file, whose name no *.safetensors glob matches. It
// returns the state's step (-1 without one) and the temporary files.
func checkRunDir(t *testing.T, dir string) (step int, temps []string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	step = -1
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		switch {
		case isTemp(e.Name()):
			if ok, _ := filepath.Match("*.safetensors", e.Name()); ok {
				t.Errorf("temporary file %s looks like a checkpoint", e.Name())
			}
			temps = append(temps, e.Name())
		case e.Name() == vae.StateFile:
			step = loadVAEState(t, path)
		case e.Name() == vae.ModelFile:
			m, err := vae.Load(path)
			if err != nil {
				t.Fatalf("model unreadable: %v", err)
			}
			for _, p := range m.Params() {
				if !finite(p.V.Value) {
					t.Fatalf("%s: weight %q is not finite", path, p.Name)
				}
			}
		default:
			t.Errorf("unexpected file %s in the run directory", e.Name())
		}
	}
	return step, temps
}

// sameFile asserts that two safetensors files hold the same metadata and
// bit-identical tensors.
func sameFile(t *testing.T, want, got string) {
	t.Helper()
	a, err := safetensors.Load(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := safetensors.Load(got)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range a.Metadata {
		if b.Metadata[k] != v {
			t.Errorf("%s: metadata %q = %q, uninterrupted run has %q", got, k, b.Metadata[k], v)
		}
	}
	if len(a.Metadata) != len(b.Metadata) {
		t.Errorf("%s: %d metadata entries, uninterrupted run has %d", got, len(b.Metadata), len(a.Metadata))
	}
	if len(a.Tensors) != len(b.Tensors) {
		t.Errorf("%s: %d tensors, uninterrupted run has %d", got, len(b.Tensors), len(a.Tensors))
	}
	diff := 0
	for k, x := range a.Tensors {
		y, ok := b.Tensors[k]
		switch {
		case !ok:
			t.Errorf("%s: tensor %q missing", got, k)
		case x.DType() != y.DType() || !slices.Equal(x.Shape(), y.Shape()):
			t.Errorf("%s: tensor %q is %v%v, uninterrupted run has %v%v", got, k, y.DType(), y.Shape(), x.DType(), x.Shape())
		default:
			xb, yb := bits(x), bits(y)
			for i := range xb {
				if xb[i] != yb[i] {
					if diff++; diff <= 5 {
						t.Errorf("%s: %q[%d] = %v, uninterrupted run has %v", got, k, i, y.To(tensor.Float64).Data64()[i], x.To(tensor.Float64).Data64()[i])
					}
					break
				}
			}
		}
	}
	if diff > 5 {
		t.Errorf("%s: %d tensors differ in all", got, diff)
	}
}

// bits returns the bit patterns of a float tensor's elements.
func bits(x *tensor.Tensor) []uint64 {
	x = x.Contiguous()
	var out []uint64
	if x.DType() == tensor.Float32 {
		for _, v := range x.Data32() {
			out = append(out, uint64(math.Float32bits(v)))
		}
		return out
	}
	for _, v := range x.Data64() {
		out = append(out, math.Float64bits(v))
	}
	return out
}

// killMode says when a kill happens.
type killMode int

const (
	// afterStep kills a random delay (up to a step's length) after the
	// child logs a step: anywhere in a step, validation or checkpoint.
	afterStep killMode = iota
	// inWrite kills the moment a checkpoint's temporary file appears
	// (after the child logs a step), usually in the middle of the write;
	// if the writes of giveUp steps go by unseen, it kills anyway.
	inWrite
)

// giveUp is the number of steps after its target step in which an inWrite
// kill waits for a temporary file: with a state checkpoint every 3 steps,
// at least one write begins in them.
const giveUp = 4

func (k killMode) String() string { return [...]string{"after step", "in write"}[k] }

// runAndKill starts args, waits for the trigger (the child must log step
// at or after step, then for afterStep the delay passes, for inWrite a
// temporary file not in old appears or step+giveUp is logged) and kills it
// with SIGKILL. It returns the name of the temporary file it reacted to
// (inWrite) and the last step the child logged.
func runAndKill(t *testing.T, dir string, args []string, mode killMode, step int, delay time.Duration) (tmp string, logged int) {
	t.Helper()
	old := map[string]bool{}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			old[e.Name()] = true
		}
	}
	cmd := child(t, args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps := make(chan int, 1024)
	go func() {
		defer close(steps)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var s, n int
			if _, err := fmt.Sscanf(sc.Text(), "step %d/%d", &s, &n); err == nil {
				steps <- s
			}
		}
	}()
	exited := false
	for logged < step && !exited {
		s, ok := <-steps
		exited = !ok
		logged = max(logged, s)
	}
	if !exited {
		switch mode {
		case afterStep:
			time.Sleep(delay)
		case inWrite:
		poll:
			for {
				select {
				case s, ok := <-steps:
					if !ok {
						break poll
					}
					logged = max(logged, s)
				default:
				}
				if logged >= step+giveUp {
					break poll
				}
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if isTemp(e.Name()) && !old[e.Name()] {
						tmp = e.Name()
						break poll
					}
				}
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Logf("SIGKILL: %v", err) // the run ended first: reported below
		}
	}
	for s := range steps {
		logged = max(logged, s)
	}
	err = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the run was not killed (%v, last step logged %d, waiting for step %d then %v): it ended early or failed; stderr:\n%s",
			err, logged, step, mode, tail(errOut.String()))
	}
	return tmp, logged
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// runToEnd runs args to completion and returns its exit status and stderr.
func runToEnd(t *testing.T, args []string) (int, string) {
	t.Helper()
	cmd := child(t, args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), errOut.String()
}

// TestTrainVAEKilled kills train-vae with SIGKILL at seeded random moments,
// several times in the middle of a checkpoint write, resuming it with
// -resume each time. After every kill each checkpoint on disk must load
// (a temporary file of an interrupted write is never taken for one) and the
// state must not go back; in the end the run must have written exactly the
// weights, optimiser state and metadata of an uninterrupted run. With
// -short it kills three times instead of eight.
func TestTrainVAEKilled(t *testing.T) {
	const steps = 40
	kills := 8
	if testing.Short() {
		kills = 3
	}
	seed := uint64(18)
	if s := os.Getenv("LGFLOW_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("LGFLOW_KILL_SEED: %v", err)
		}
	}
	t.Logf("kill schedule seed %d (LGFLOW_KILL_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))

	ref, dir := t.TempDir(), t.TempDir()
	start := time.Now()
	if code, errOut := runToEnd(t, tinyVAE(ref, steps)); code != 0 {
		t.Fatalf("uninterrupted run: exit status %d\n%s", code, tail(errOut))
	}
	perRun := time.Since(start)

	// A truncated copy of a checkpoint under an atomic write's temporary
	// name, as a kill during a write leaves one: the run must ignore it.
	raw, err := os.ReadFile(filepath.Join(ref, vae.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "."+vae.StateFile+".tmp0000"), raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}

	state, midWrite := -1, 0 // -1: no state file yet
	for i := range kills {
		// Every other kill waits for a write; the first kill may come before
		// any checkpoint exists. Targets stay 12 steps short of the end, so
		// the run is still going when the kill comes.
		mode := killMode(i % 2)
		target := min(max(state, 0)+1+rng.IntN(4), steps-12)
		delay := time.Duration(rng.IntN(60)) * time.Millisecond
		tmp, logged := runAndKill(t, dir, tinyVAE(dir, steps), mode, target, delay)
		after, temps := checkRunDir(t, dir)
		if after < state {
			t.Fatalf("kill %d: state went back from step %d to %d", i, state, after)
		}
		hit := tmp != "" && slices.Contains(temps, tmp)
		if hit {
			midWrite++
		}
		t.Logf("kill %d (%v, step %d, delay %v): logged step %d, state at step %d, temporary file %q left behind: %v",
			i, mode, target, delay, logged, after, tmp, hit)
		state = after
	}
	if code, errOut := runToEnd(t, tinyVAE(dir, steps)); code != 0 {
		t.Fatalf("final resumed run: exit status %d\n%s", code, tail(errOut))
	}
	if step, _ := checkRunDir(t, dir); step != steps {
		t.Fatalf("final state at step %d, want %d", step, steps)
	}
	sameFile(t, filepath.Join(ref, vae.StateFile), filepath.Join(dir, vae.StateFile))
	sameFile(t, filepath.Join(ref, vae.ModelFile), filepath.Join(dir, vae.ModelFile))
	a, err := vae.Load(filepath.Join(ref, vae.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := vae.Load(filepath.Join(dir, vae.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if fa, fb := nn.Fingerprint(a), nn.Fingerprint(b); fa != fb {
		t.Errorf("model fingerprint %s after kills, %s uninterrupted", fb, fa)
	}
	t.Logf("%d kills, %d of them during a write; one uninterrupted run took %v", kills, midWrite, perRun.Round(time.Millisecond))
}

// TestTrainVAENonFinite resumes a healthy run with a learning rate so
// large that training breaks down: once the weights overflow in the next
// forward pass (the loss turns NaN), once the update itself is infinite
// (caught right after the step). train-vae must exit with status 1 and an
// error that names the step and the problem, and leave the last good
// checkpoints: a state that loads, with finite weights, from no later
// than the failing step, and a model file that loads with finite weights.
func TestTrainVAENonFinite(t *testing.T) {
	const healthy = 6
	base := t.TempDir()
	if code, errOut := runToEnd(t, tinyVAE(base, healthy)); code != 0 {
		t.Fatalf("healthy run: exit status %d\n%s", code, tail(errOut))
	}
	stepRE := regexp.MustCompile(`lgflow train-vae: vae: step (\d+): edge `)
	for _, tc := range []struct {
		name, lr string
		want     *regexp.Regexp
	}{
		{"weights overflow in the forward pass", "1e30", regexp.MustCompile(`: loss is NaN`)},
		{"infinite update", "1e300", regexp.MustCompile(`: the optimiser step made weight "[a-z0-9_.]+" \(shape \[[0-9 ]+\]\) (NaN|[+-]Inf) at flat index \d+ \(learning rate [0-9.e+]+ too large\?\)`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{vae.StateFile, vae.ModelFile} {
				raw, err := os.ReadFile(filepath.Join(base, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Every step validates and checkpoints from here on.
			code, errOut := runToEnd(t, tinyVAE(dir, 40, "-config", "lr="+tc.lr+",val_every=1,checkpoint_every=1"))
			if code != 1 {
				t.Fatalf("exit status %d, want 1; stderr:\n%s", code, tail(errOut))
			}
			m := stepRE.FindStringSubmatch(errOut)
			if m == nil || !tc.want.MatchString(errOut) {
				t.Fatalf("error does not name the step and match %q:\n%s", tc.want, tail(errOut))
			}
			t.Logf("stderr ends: %s", strings.TrimSpace(errOut[strings.LastIndex(strings.TrimSpace(errOut), "\n")+1:]))
			failed, _ := strconv.Atoi(m[1])
			state, _ := checkRunDir(t, dir)
			if state < healthy || state > failed {
				t.Errorf("state at step %d; want the last good one, from step %d to %d (the failing step)", state, healthy, failed)
			}
		})
	}
}
