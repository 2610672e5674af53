//go:build loadtest

package main

// The load test of the sampling service, on loopback:
//
//	go test -tags loadtest -run Load -v -timeout 10m ./examples/server
//
// Environment (defaults in brackets): LGFLOW_LOAD_CLIENTS [16],
// LGFLOW_LOAD_DURATION [60s], LGFLOW_LOAD_N graphs per request [4],
// LGFLOW_LOAD_STEPS [20], LGFLOW_LOAD_HANGUP duration of the hang-up
// scenario [15s].

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func envInt(t *testing.T, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return def
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	return def
}

// procStatus returns a field of /proc/self/status in MB (VmRSS, VmHWM).
func procStatus(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return -1
}

func TestLoad(t *testing.T) {
	clients := envInt(t, "LGFLOW_LOAD_CLIENTS", 16)
	dur := envDuration(t, "LGFLOW_LOAD_DURATION", 60*time.Second)
	n := envInt(t, "LGFLOW_LOAD_N", 4)
	steps := envInt(t, "LGFLOW_LOAD_STEPS", 20)
	hangDur := envDuration(t, "LGFLOW_LOAD_HANGUP", 15*time.Second)

	lim := defaultLimits(runtime.GOMAXPROCS(0))
	s, ts := newTestServer(t, lim)
	var cancelled atomic.Int64
	s.onDone = func(err error) {
		if errors.Is(err, context.Canceled) {
			cancelled.Add(1)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	// Warm up (worker pools, first buffers), then take the baselines.
	if resp, body := post(t, context.Background(), ts.URL, `{"steps": 2}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up: %d %s", resp.StatusCode, body)
	}
	runtime.GC()
	goBefore := settledGoroutines(0)
	rssBefore := procStatus("VmRSS")
	hwmReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil

	t.Logf("load: %d clients for %s, requests of n=%d steps=%d, %d sampling slots, GOMAXPROCS %d",
		clients, dur, n, steps, lim.Slots, runtime.GOMAXPROCS(0))
	body := fmt.Sprintf(`{"n": %d, "steps": %d, "seed": %%d}`, n, steps)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		rejected  int
		failures  []string
	)
	var rss []float64
	stopRSS := make(chan struct{})
	rssDone := make(chan struct{})
	go func() { // RSS every 5 s
		defer close(rssDone)
		tk := time.NewTicker(5 * time.Second)
		defer tk.Stop()
		for {
			select {
			case <-stopRSS:
				return
			case <-tk.C:
				rss = append(rss, procStatus("VmRSS"))
			}
		}
	}()
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/sample", strings.NewReader(fmt.Sprintf(body, c*100000+i)))
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat := time.Since(t0)
				mu.Lock()
				switch resp.StatusCode {
				case http.StatusOK:
					latencies = append(latencies, lat)
				case http.StatusServiceUnavailable:
					rejected++
				default:
					failures = append(failures, resp.Status)
				}
				mu.Unlock()
				if resp.StatusCode == http.StatusServiceUnavailable {
					time.Sleep(time.Second) // as Retry-After asks, roughly
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopRSS)
	<-rssDone
	hwm := procStatus("VmHWM")
	client.CloseIdleConnections()
	goAfter := settledGoroutines(goBefore)

	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	ok := len(latencies)
	t.Logf("load: %d ok, %d rejected (503), %d failed in %.1f s: %.2f requests/s, %.2f graphs/s",
		ok, rejected, len(failures), elapsed.Seconds(), float64(ok)/elapsed.Seconds(), float64(ok*n)/elapsed.Seconds())
	t.Logf("load: latency p50 %.2f s, p99 %.2f s, max %.2f s", pct(0.5).Seconds(), pct(0.99).Seconds(), pct(1).Seconds())
	rssText := make([]string, len(rss))
	for i, v := range rss {
		rssText[i] = fmt.Sprintf("%.0f", v)
	}
	t.Logf("load: RSS before %.0f MB, every 5 s [%s] MB, peak (VmHWM, reset at the start: %v) %.0f MB", rssBefore,
		strings.Join(rssText, " "), hwmReset, hwm)
	t.Logf("load: goroutines %d before, %d after", goBefore, goAfter)
	if len(failures) > 0 {
		t.Errorf("%d failed requests, first: %s", len(failures), failures[0])
	}
	if ok == 0 {
		t.Error("no request succeeded")
	}
	if goAfter > goBefore {
		t.Errorf("goroutines: %d after, %d before", goAfter, goBefore)
	}

	// Hang-ups: every client sends long requests and hangs up after 0.1
	// to 0.6 s, again and again.
	t.Logf("hang-up: %d clients for %s, requests of n=16 steps=1000 dropped after 0.1-0.6 s", clients, hangDur)
	cancelled.Store(0)
	var sent atomic.Int64
	deadline = time.Now().Add(hangDur)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(100+(c*37+i*101)%500)*time.Millisecond)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/sample", strings.NewReader(`{"n": 16, "steps": 1000}`))
				sent.Add(1)
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	lastHangUp := time.Now()
	for s.running.Load() > 0 || s.waiting.Load() > 0 {
		if time.Since(lastHangUp) > 10*time.Second {
			t.Fatalf("10 s after the last hang-up: %d sampling calls running, %d waiting", s.running.Load(), s.waiting.Load())
		}
		time.Sleep(time.Millisecond)
	}
	stopped := time.Since(lastHangUp)
	client.CloseIdleConnections()
	goHang := settledGoroutines(goBefore)
	t.Logf("hang-up: %d requests sent, %d sampling calls cancelled; all sampling stopped %.0f ms after the last hang-up; goroutines %d (before the load: %d); RSS %.0f MB",
		sent.Load(), cancelled.Load(), float64(stopped.Microseconds())/1e3, goHang, goBefore, procStatus("VmRSS"))
	if goHang > goBefore {
		t.Errorf("goroutines after the hang-ups: %d, before: %d", goHang, goBefore)
	}
	if cancelled.Load() == 0 {
		t.Error("no sampling call was cancelled")
	}
}
