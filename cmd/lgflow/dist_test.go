//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lgflow/flow"
	"lgflow/internal/mpitest"
	"lgflow/safetensors"
	"lgflow/vae"
)

// Data-parallel training under mpirun: the test binary runs lgflow's main
// (childEnv) as the ranks of an Open MPI job on loopback. The tests are
// skipped where Open MPI is not installed (LGFLOW_DIST_NO_MPI=1 skips them
// too), as dist's are.

// runRanks runs "lgflow args..." on np ranks under mpirun (one thread
// each) and fails t unless every rank exits 0 within a minute.
func runRanks(t *testing.T, np int, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := mpitest.Command(t, ctx, np, append([]string{exe}, args...), childEnv+"=1", "GOMAXPROCS=1")
	defer mpitest.KillGroup(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun -np %d lgflow %s: %v\n%s", np, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dpVAE is train-vae on 16 planar graphs with a tiny model, a global batch
// of 8 graphs and a constant learning rate (so a run of 10 steps resumed
// to 20 follows the schedule of a run of 20), validating and checkpointing
// every 10 steps.
func dpVAE(dir string, steps int) []string {
	return []string{"train-vae", "-dataset", "planar", "-train-split", "val", "-val-split", "test", "-max-train", "16",
		"-config", "k=4,latent=4,phi_width=8,width=8,layers=2,deepset=4,batch_size=8,lr=0.01,min_lr=0.01,warmup=0",
		"-config", fmt.Sprintf("steps=%d,val_every=10,checkpoint_every=10,log_every=5,seed=3", steps),
		"-out", dir}
}

// noiseGrad is the root-mean-square gradient below which a weight counts
// as moved by rounding noise alone: a tenth of the AdamW epsilon (1e-8) of
// train-vae and train-flow. The weights without gradient of these models
// measure 1e-11 to 5e-10; every other weight is above 3e-9.
const noiseGrad = 1e-9

// maxRelDiff returns the largest relative difference between the weights
// of two training states (their "model." tensors and, for a flow, the EMA's
// "extra." ones), each tensor's measured against its own scale:
// max|a-b| / max|a|, with the tensor it is in; it fails t unless both hold
// the same tensors. A weight whose gradient is zero by construction (a
// bias that a softmax cancels: the LG-VAE's DeepSet output bias, the key
// part of a DiT's qkv bias) moves only by rounding noise, which AdamW
// scales up to steps of the order of the learning rate, whatever the order
// of summation: elements whose second moment in the first state is below
// noiseGrad squared are left out, and those that differ counted in
// skipped.
func maxRelDiff(t *testing.T, pathA, pathB string) (worst float64, where string, skipped int) {
	t.Helper()
	a, err := safetensors.Load(pathA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := safetensors.Load(pathB)
	if err != nil {
		t.Fatal(err)
	}
	names := 0
	for name, ta := range a.Tensors {
		param, ok := strings.CutPrefix(name, "model.")
		if !ok {
			if param, ok = strings.CutPrefix(name, "extra."); !ok {
				continue
			}
		}
		names++
		tb, ok := b.Tensors[name]
		if !ok || !slices.Equal(ta.Shape(), tb.Shape()) {
			t.Fatalf("%s: %s missing or of another shape in %s", pathA, name, pathB)
		}
		var v []float64
		if m, ok := a.Tensors["optim."+param+".exp_avg_sq"]; ok {
			v = m.Float64s()
		}
		xb := tb.Float64s()
		diff, scale := 0.0, 0.0
		for i, x := range ta.Float64s() {
			scale = math.Max(scale, math.Abs(x))
			if v != nil && v[i] < noiseGrad*noiseGrad {
				if x != xb[i] {
					skipped++
				}
				continue
			}
			diff = math.Max(diff, math.Abs(x-xb[i]))
		}
		r := 0.0
		if diff > 0 {
			r = diff / scale
		}
		if !(r <= worst) {
			worst, where = r, name
		}
	}
	if names == 0 {
		t.Fatalf("%s holds no weights", pathA)
	}
	return worst, where, skipped
}

// TestDataParallelVAE checks that train-vae on 2 ranks writes the weights
// one process writes with the same global batch (to 1e-5 relative in every
// weight after 20 steps, each tensor against its scale), and that a run of 10 steps on 2 ranks resumed to
// 20 on 1 rank ends where 20 steps on 1 rank do.
func TestDataParallelVAE(t *testing.T) {
	mpitest.Skip(t)
	const tol = 1e-5
	one := t.TempDir()
	code, _, errOut := run(t, dpVAE(one, 20)...)
	if code != 0 {
		t.Fatalf("train-vae on 1 process: exit %d\n%s", code, errOut)
	}
	two := t.TempDir()
	out := runRanks(t, 2, dpVAE(two, 20)...)
	if !strings.Contains(out, "data parallel on 2 ranks") {
		t.Errorf("the ranks did not train data parallel:\n%s", out)
	}
	if n := strings.Count(out, "step     20/20"); n != 1 {
		t.Errorf("%d progress lines for step 20 (want rank 0's alone):\n%s", n, out)
	}
	d, where, skipped := maxRelDiff(t, filepath.Join(one, vae.StateFile), filepath.Join(two, vae.StateFile))
	t.Logf("2 ranks vs 1 process, 20 steps: max relative weight difference %.3g (%s); %d differing elements without gradient left out", d, where, skipped)
	if d > tol {
		t.Errorf("2 ranks vs 1 process: relative weight difference %.3g in %s, want <= %g", d, where, tol)
	}
	if _, err := vae.Load(filepath.Join(two, vae.ModelFile)); err != nil {
		t.Errorf("the 2-rank run's model: %v", err)
	}

	resumed := t.TempDir()
	runRanks(t, 2, dpVAE(resumed, 10)...)
	code, _, errOut = run(t, dpVAE(resumed, 20)...)
	if code != 0 {
		t.Fatalf("resuming on 1 process: exit %d\n%s", code, errOut)
	}
	d, where, skipped = maxRelDiff(t, filepath.Join(one, vae.StateFile), filepath.Join(resumed, vae.StateFile))
	t.Logf("2 ranks to step 10, 1 process to 20, vs 1 process: max relative weight difference %.3g (%s); %d differing elements without gradient left out", d, where, skipped)
	if d > tol {
		t.Errorf("resumed on another world size: relative weight difference %.3g in %s, want <= %g", d, where, tol)
	}
}

// dpFlow is train-flow of the tiny preset on the 256 planar graphs of the
// val split in the latent space of the LG-VAE v, with a global batch of 8
// graphs and a constant learning rate (no cooldown), validating and
// checkpointing every 10 steps.
func dpFlow(v, dir string, steps int) []string {
	return []string{"train-flow", "-vae", v, "-dataset", "planar", "-train-split", "val", "-preset", "tiny",
		"-config", fmt.Sprintf("steps=%d,batch_size=8,lr=0.003,cooldown=0,val_every=10,checkpoint_every=10,log_every=5,seed=5", steps),
		"-out", dir}
}

// TestDataParallelFlow is TestDataParallelVAE for train-flow: the
// weights and the EMA's after 20 steps on 2 ranks, and after 10 steps on 2
// ranks resumed to 20 on 1, equal those of 20 steps on 1 process.
func TestDataParallelFlow(t *testing.T) {
	mpitest.Skip(t)
	const tol = 1e-5
	vdir := t.TempDir()
	if code, _, errOut := run(t, dpVAE(vdir, 20)...); code != 0 {
		t.Fatalf("train-vae: exit %d\n%s", code, errOut)
	}
	v := filepath.Join(vdir, vae.ModelFile)
	one := t.TempDir()
	if code, _, errOut := run(t, dpFlow(v, one, 20)...); code != 0 {
		t.Fatalf("train-flow on 1 process: exit %d\n%s", code, errOut)
	}
	two := t.TempDir()
	out := runRanks(t, 2, dpFlow(v, two, 20)...)
	if !strings.Contains(out, "data parallel on 2 ranks") {
		t.Errorf("the ranks did not train data parallel:\n%s", out)
	}
	d, where, skipped := maxRelDiff(t, filepath.Join(one, flow.StateFile), filepath.Join(two, flow.StateFile))
	t.Logf("2 ranks vs 1 process, 20 steps: max relative weight difference %.3g (%s); %d differing elements without gradient left out", d, where, skipped)
	if d > tol {
		t.Errorf("2 ranks vs 1 process: relative weight difference %.3g in %s, want <= %g", d, where, tol)
	}
	ae, err := vae.Load(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{flow.ModelFile, flow.LastFile} {
		if _, err := flow.Load(filepath.Join(two, f), ae); err != nil {
			t.Errorf("the 2-rank run's %s: %v", f, err)
		}
	}

	resumed := t.TempDir()
	runRanks(t, 2, dpFlow(v, resumed, 10)...)
	if code, _, errOut := run(t, dpFlow(v, resumed, 20)...); code != 0 {
		t.Fatalf("resuming on 1 process: exit %d\n%s", code, errOut)
	}
	d, where, skipped = maxRelDiff(t, filepath.Join(one, flow.StateFile), filepath.Join(resumed, flow.StateFile))
	t.Logf("2 ranks to step 10, 1 process to 20, vs 1 process: max relative weight difference %.3g (%s); %d differing elements without gradient left out", d, where, skipped)
	if d > tol {
		t.Errorf("resumed on another world size: relative weight difference %.3g in %s, want <= %g", d, where, tol)
	}
}

// rankPID returns the process id of the given rank of the MPI job whose
// mpirun has process id launcher (a child whose environment says
// OMPI_COMM_WORLD_RANK=rank), or 0 when there is none yet.
func rankPID(launcher, rank int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(launcher) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if slices.Contains(strings.Split(string(env), "\x00"), fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d", rank)) {
			return pid
		}
	}
	return 0
}

// TestDataParallelRankKilled kills rank 1 of a 2-rank train-vae with
// SIGKILL in the middle of training: the job must exit non-zero within 60
// s, every checkpoint left must load, and a resume on 1 process must end
// where an uninterrupted 1-process run does.
func TestDataParallelRankKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the ranks through /proc")
	}
	dir := t.TempDir()
	// Far more steps than the kill leaves it: with a constant learning
	// rate, the resumed run to step 30 follows a run of 30 steps.
	err, errOut, after := signalRank1(t, dir, syscall.SIGKILL)
	if err == nil {
		t.Fatalf("the job exited 0 after rank 1 was killed\n%s", errOut)
	}
	t.Logf("job ended %.1f s after rank 1 was killed: %v", after.Seconds(), err)
	step, _ := checkRunDir(t, dir)
	if step < 9 || step >= 30 {
		t.Fatalf("the checkpoint left is of step %d, want 9 to 29", step)
	}
	if code, _, out := run(t, dpVAE(dir, 30)...); code != 0 {
		t.Fatalf("resuming on 1 process: exit %d\n%s", code, out)
	}
	one := t.TempDir()
	if code, _, out := run(t, dpVAE(one, 30)...); code != 0 {
		t.Fatalf("train-vae on 1 process: exit %d\n%s", code, out)
	}
	d, where, skipped := maxRelDiff(t, filepath.Join(one, vae.StateFile), filepath.Join(dir, vae.StateFile))
	t.Logf("killed at step >= 10 (checkpoint of step %d), resumed on 1 process to 30, vs 1 process: max relative weight difference %.3g (%s); %d differing elements without gradient left out", step, d, where, skipped)
	if d > 1e-5 {
		t.Errorf("resumed after the kill: relative weight difference %.3g in %s, want <= 1e-5", d, where)
	}
}

// TestTorchrunLaunch checks what a torchrun-style launch (RANK and
// WORLD_SIZE set, no mpirun) does without a GPU: lgflow train, a
// one-process pipeline, refuses it; train-flow on -device cuda needs the
// GPU of its local rank before it meets the other ranks, and says so when
// there is none (no rank waits for a rendezvous that cannot happen).
func TestTorchrunLaunch(t *testing.T) {
	t.Setenv("RANK", "1")
	t.Setenv("WORLD_SIZE", "2")
	t.Setenv("LOCAL_RANK", "1")
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("MASTER_PORT", "1")
	t.Setenv("LGFLOW_CUDA_DISABLE", "1")
	dir := t.TempDir()
	g6 := filepath.Join(dir, "g.g6")
	if err := os.WriteFile(g6, []byte("Bw\nBw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "train", "-graphs", g6, "-out", filepath.Join(dir, "m"), "-budget", "1s")
	if code == 0 || !strings.Contains(errOut, "one process") || !strings.Contains(errOut, "WORLD_SIZE=2") {
		t.Errorf("lgflow train under torchrun: exit %d, %q", code, errOut)
	}
	start := time.Now()
	code, _, errOut = run(t, "train-flow", "-vae", filepath.Join(dir, "none.safetensors"), "-dataset", "planar", "-out", filepath.Join(dir, "f"), "-device", "cuda")
	if code == 0 || !strings.Contains(errOut, "cuda") {
		t.Errorf("train-flow -device cuda under torchrun without a GPU: exit %d, %q", code, errOut)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("train-flow took %v to fail", d)
	}
}

// TestDataParallelRankHung stops rank 1 (SIGSTOP) in the middle of a
// data-parallel run: rank 0 must give up within the watchdog
// ($LGFLOW_DIST_TIMEOUT, 3 s here) with an error naming the rank it
// waited for, the job must end non-zero, and the checkpoint left must
// load.
func TestDataParallelRankHung(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the ranks through /proc")
	}
	dir := t.TempDir()
	err, errOut, after := signalRank1(t, dir, syscall.SIGSTOP, "LGFLOW_DIST_TIMEOUT=3s")
	if err == nil {
		t.Fatalf("the job exited 0 after rank 1 hung\n%s", errOut)
	}
	if !strings.Contains(errOut, "rank 1") || !strings.Contains(errOut, "3s") && !strings.Contains(errOut, "timed out") {
		t.Errorf("rank 0's error does not name rank 1 and the timeout:\n%s", errOut)
	}
	t.Logf("job ended %.1f s after rank 1 was stopped: %v", after.Seconds(), err)
	if step, _ := checkRunDir(t, dir); step < 9 {
		t.Errorf("the checkpoint left is of step %d, want >= 9", step)
	}
}

// signalRank1 runs a long data-parallel train-vae into dir on 2 ranks
// (env added to theirs), sends rank 1 sig once rank 0 reports step 10 (a
// checkpoint at step 9), and returns how the job ended, its stderr and
// how long after the signal; it fails t if the job outlives the signal
// by 60 s.
func signalRank1(t *testing.T, dir string, sig syscall.Signal, env ...string) (error, string, time.Duration) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := dpVAE(dir, 100000)
	args = append(args[:len(args)-2], "-config", "log_every=1,checkpoint_every=3", "-out", dir)
	cmd := mpitest.Command(t, context.Background(), 2, append([]string{exe}, args...), append([]string{childEnv + "=1", "GOMAXPROCS=1"}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer mpitest.KillGroup(cmd)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "step     10/") {
			break
		}
	}
	pid := rankPID(cmd.Process.Pid, 1)
	if pid == 0 {
		t.Fatalf("rank 1 not found among mpirun's children\n%s", errOut.String())
	}
	sent := time.Now()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	go io.Copy(io.Discard, stdout)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the job still runs 60 s after rank 1 got %v\n%s", sig, errOut.String())
	}
	return err, errOut.String(), time.Since(sent)
}
