package nccl

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"lgflow/dist"
)

// job runs fn on size ranks (goroutines) that meet by Rendezvous on a
// localhost port, and returns each rank's error.
func job(t *testing.T, size int, timeout time.Duration, fn func(c *TCPComm) error) []error {
	t.Helper()
	port := freePort(t)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Rendezvous(localEnv(r, size, port), timeout)
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			c.SetTimeout(timeout)
			errs[r] = fn(c)
		}()
	}
	wg.Wait()
	return errs
}

// TestTCPCollectives checks every collective of TCPComm on 1 to 4 ranks
// against the sums and copies they should give, on every rank.
func TestTCPCollectives(t *testing.T) {
	for _, size := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(size, " ranks"), func(t *testing.T) {
			results := make([][]float64, size)
			errs := job(t, size, 10*time.Second, func(c *TCPComm) error {
				r := c.Rank()
				if c.Size() != size {
					return fmt.Errorf("Size %d", c.Size())
				}
				f32 := []float32{float32(r), 1, 0.1 * float32(r+1)}
				if err := c.AllReduceSum32(f32); err != nil {
					return err
				}
				n := float32(size)
				if f32[0] != n*(n-1)/2 || f32[1] != n {
					return fmt.Errorf("AllReduceSum32 gave %v", f32)
				}
				f64 := make([]float64, 1000)
				for i := range f64 {
					f64[i] = float64(r*i) + 0.5
				}
				if err := dist.AllReduceMean(c, f64); err != nil {
					return err
				}
				for i, x := range f64 {
					if want := float64(i)*float64(size-1)/2 + 0.5; math.Abs(x-want) > 1e-9 {
						return fmt.Errorf("AllReduceMean[%d] = %v, want %v", i, x, want)
					}
				}
				results[r] = append([]float64{float64(f32[2])}, f64...)
				for _, root := range []int{0, size - 1} {
					b := []float64{float64(r), float64(10 * r)}
					if err := c.Broadcast64(b, root); err != nil {
						return err
					}
					if b[0] != float64(root) || b[1] != float64(10*root) {
						return fmt.Errorf("Broadcast64 from %d gave %v", root, b)
					}
					b32 := []float32{float32(r)}
					if err := c.Broadcast32(b32, root); err != nil || b32[0] != float32(root) {
						return fmt.Errorf("Broadcast32 from %d gave %v, %v", root, b32, err)
					}
				}
				var msg []byte
				if r == 0 {
					msg = []byte(strings.Repeat("configuration ", 100))
				}
				got, err := dist.BroadcastData(c, msg, 0)
				if err != nil || len(got) != 1400 || !strings.HasPrefix(string(got), "configuration") {
					return fmt.Errorf("BroadcastData: %d bytes, %v", len(got), err)
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				if err := c.AllReduceSum32(nil); err != nil {
					return err
				}
				if err := c.Broadcast32(nil, size); err == nil {
					return errors.New("a broadcast from a rank outside the job succeeded")
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
			for r := 1; r < size; r++ {
				if results[r] != nil && results[0] != nil && fmt.Sprint(results[r]) != fmt.Sprint(results[0]) {
					t.Errorf("rank %d's sums differ from rank 0's", r)
				}
			}
		})
	}
}

// TestTCPClosed checks calls after Close.
func TestTCPClosed(t *testing.T) {
	c, err := Rendezvous(localEnv(0, 1, 1), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.Barrier(); !errors.Is(err, dist.ErrClosed) {
		t.Errorf("Barrier after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRendezvousFailures checks that the rendezvous fails within its
// timeout, naming what failed: ranks that never connect, a rank 0 that
// never listens, a rank 0 that accepts but never answers, ranks of
// different job sizes, two processes claiming one rank, a bad rank.
func TestRendezvousFailures(t *testing.T) {
	const timeout = 700 * time.Millisecond
	type result struct {
		rank int
		err  error
	}
	run := func(port int, envs ...Env) []result {
		out := make([]result, len(envs))
		var wg sync.WaitGroup
		for i, e := range envs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := Rendezvous(e, timeout)
				if err == nil {
					c.Close()
				}
				out[i] = result{e.Rank, err}
			}()
		}
		wg.Wait()
		return out
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, port int) []result
		want  map[int][]string // per index of the result: substrings of its error (nil: any outcome); "{port}" stands for the port
		isTO  map[int]bool     // results that must match dist.ErrTimeout
	}{
		{
			name:  "ranks never connect",
			setup: func(t *testing.T, port int) []result { return run(port, localEnv(0, 4, port), localEnv(2, 4, port)) },
			want:  map[int][]string{0: {"rank 0", "ranks 1, 3 of 4 did not connect", "port {port}"}, 1: nil},
			isTO:  map[int]bool{0: true},
		},
		{
			name:  "rank 0 never listens",
			setup: func(t *testing.T, port int) []result { return run(port, localEnv(1, 2, port)) },
			want:  map[int][]string{0: {"rank 1", "cannot reach rank 0 at 127.0.0.1:{port}", "MASTER_ADDR:MASTER_PORT", "did not complete within 700ms"}},
			isTO:  map[int]bool{0: true},
		},
		{
			name: "rank 0 does not answer",
			setup: func(t *testing.T, port int) []result {
				ln, err := net.Listen("tcp", fmt.Sprint("127.0.0.1:", port))
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				go func() { // accept and say nothing
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						defer c.Close()
					}
				}()
				return run(port, localEnv(1, 2, port))
			},
			want: map[int][]string{0: {"rank 1", "accepted the connection but did not answer"}},
			isTO: map[int]bool{0: true},
		},
		{
			name: "different job sizes",
			setup: func(t *testing.T, port int) []result {
				return run(port, localEnv(0, 2, port), localEnv(1, 3, port))
			},
			want: map[int][]string{0: {"rank 1", "WORLD_SIZE 3, rank 0 has 2"}, 1: {"rank 1", "refused", "WORLD_SIZE 3"}},
		},
		{
			name: "bad rank",
			setup: func(t *testing.T, port int) []result {
				return run(port, localEnv(0, 2, port), Env{Rank: 5, WorldSize: 9, MasterAddr: "127.0.0.1", MasterPort: port})
			},
			want: map[int][]string{0: {"WORLD_SIZE 9"}, 1: {"refused"}},
		},
		{
			name: "rank claimed twice",
			setup: func(t *testing.T, port int) []result {
				out := make([]result, 3)
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { defer wg.Done(); _, err := Rendezvous(localEnv(0, 3, port), timeout); out[0] = result{0, err} }()
				time.Sleep(50 * time.Millisecond)
				_, err := Rendezvous(localEnv(1, 3, port), timeout)
				out[1] = result{1, err}
				_, err = Rendezvous(localEnv(1, 3, port), timeout)
				out[2] = result{1, err}
				wg.Wait()
				return out
			},
			want: map[int][]string{0: {"two processes claim rank 1"}, 1: nil, 2: {"refused", "two processes claim rank 1"}},
		},
		{
			name: "rank outside the job",
			setup: func(t *testing.T, port int) []result {
				return run(port, Env{Rank: 2, WorldSize: 2, MasterAddr: "x", MasterPort: port})
			},
			want: map[int][]string{0: {"rank 2 is not a rank of a job of 2"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			port := freePort(t)
			res := tc.setup(t, port)
			if el := time.Since(start); el > 3*timeout+time.Second {
				t.Errorf("took %v with a timeout of %v", el, timeout)
			}
			for i, says := range tc.want {
				err := res[i].err
				if says == nil {
					continue // its outcome depends on when the others failed
				}
				if err == nil {
					t.Errorf("result %d (rank %d): no error", i, res[i].rank)
					continue
				}
				t.Logf("rank %d: %v", res[i].rank, err)
				for _, s := range says {
					s = strings.ReplaceAll(s, "{port}", fmt.Sprint(port))
					if !strings.Contains(err.Error(), s) {
						t.Errorf("rank %d: error %q does not say %q", res[i].rank, err, s)
					}
				}
				if tc.isTO[i] && !errors.Is(err, dist.ErrTimeout) {
					t.Errorf("rank %d: error %v does not match dist.ErrTimeout", res[i].rank, err)
				}
			}
		})
	}
}

// TestTCPPeerFailures checks collectives when a rank dies (closes its
// connection: the others fail at once, naming it) or hangs (rank 0 times
// out naming it, and tells the other ranks, which name it too).
func TestTCPPeerFailures(t *testing.T) {
	t.Run("rank dies", func(t *testing.T) {
		start := time.Now()
		errs := job(t, 3, 20*time.Second, func(c *TCPComm) error {
			if c.Rank() == 2 {
				return c.Close() // dies before the collective
			}
			return c.AllReduceSum64([]float64{1})
		})
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("the survivors took %v to notice", el)
		}
		for r, want := range []string{"rank 2 closed its connection", "rank 2 closed its connection"} {
			if errs[r] == nil || !strings.Contains(errs[r].Error(), want) {
				t.Errorf("rank %d: %v, want an error saying %q", r, errs[r], want)
			}
		}
		if errs[1] != nil {
			var pe *PeerError
			if !errors.As(errs[1], &pe) || !strings.Contains(errs[1].Error(), "failed on rank 0") {
				t.Errorf("rank 1's error %v is not rank 0's report", errs[1])
			}
		}
	})
	t.Run("rank hangs", func(t *testing.T) {
		const timeout = 500 * time.Millisecond
		release := make(chan struct{})
		start := time.Now()
		errs := job(t, 3, timeout, func(c *TCPComm) error {
			if c.Rank() == 2 {
				<-release // hangs until the others failed
				return nil
			}
			defer func() {
				if c.Rank() == 1 {
					close(release)
				}
			}()
			err := c.AllReduceSum32([]float32{1})
			if err == nil {
				return nil
			}
			if again := c.Barrier(); again == nil || !strings.Contains(again.Error(), "unusable") {
				return fmt.Errorf("after %v, Barrier: %v", err, again)
			}
			return err
		})
		if el := time.Since(start); el > 4*timeout {
			t.Errorf("the ranks took %v with a timeout of %v", el, timeout)
		}
		for r := range 2 {
			err := errs[r]
			t.Logf("rank %d: %v", r, err)
			if err == nil || !errors.Is(err, dist.ErrTimeout) || !strings.Contains(err.Error(), "rank 2 did not answer") {
				t.Errorf("rank %d: %v, want a timeout naming rank 2", r, err)
			}
		}
	})
	t.Run("calls differ", func(t *testing.T) {
		errs := job(t, 2, 5*time.Second, func(c *TCPComm) error {
			if c.Rank() == 0 {
				return c.AllReduceSum64(make([]float64, 3))
			}
			return c.AllReduceSum64(make([]float64, 4))
		})
		if errs[0] == nil || !strings.Contains(errs[0].Error(), "the ranks' calls differ") {
			t.Errorf("rank 0: %v", errs[0])
		}
		if errs[1] == nil {
			t.Errorf("rank 1: no error")
		}
	})
}
