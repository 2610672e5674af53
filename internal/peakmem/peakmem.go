// Package peakmem measures a process's peak memory for benchmarks: the
// resident set high-water mark on Linux (VmHWM, reset through
// /proc/self/clear_refs when a Meter starts) and the Go runtime's mapped
// memory sampled every millisecond.
package peakmem

import (
	"bufio"
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// Meter follows a process's peak memory from its start.
type Meter struct {
	hwm  bool // VmHWM was reset and measures from the start
	quit chan struct{}
	wg   sync.WaitGroup
	peak uint64 // Go runtime memory, sampled
}

// Start resets the resident set high-water mark (Linux) and starts
// sampling the Go runtime's memory.
func Start() *Meter {
	p := &Meter{quit: make(chan struct{})}
	p.hwm = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	read := func() {
		metrics.Read(samples)
		p.peak = max(p.peak, samples[0].Value.Uint64()-samples[1].Value.Uint64())
	}
	read()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return p
}

// Stop returns the peak resident set size (the sampled Go runtime memory
// where VmHWM is not available) and the sampled Go runtime peak, in bytes.
func (p *Meter) Stop() (rss, goMem float64) {
	close(p.quit)
	p.wg.Wait()
	goMem = float64(p.peak)
	if p.hwm {
		if kb, ok := vmHWM(); ok {
			return float64(kb) * 1024, goMem
		}
	}
	return goMem, goMem
}

// vmHWM reads the VmHWM line of /proc/self/status, in kB.
func vmHWM() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := bytes.Fields(sc.Bytes()); len(f) >= 2 && string(f[0]) == "VmHWM:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}
