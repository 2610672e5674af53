package mpi_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"lgflow/dist/mpi"
	"lgflow/internal/mpitest"
)

// caseBench: every rank runs LGFLOW_DIST_BENCH_N all-reduces of
// LGFLOW_DIST_BENCH_FLOATS float32 after a warm-up; rank 0 prints the
// mean time.
func caseBench() error {
	n, err := strconv.Atoi(os.Getenv("LGFLOW_DIST_BENCH_N"))
	if err != nil || n < 1 {
		return fmt.Errorf("LGFLOW_DIST_BENCH_N=%q", os.Getenv("LGFLOW_DIST_BENCH_N"))
	}
	floats, err := strconv.Atoi(os.Getenv("LGFLOW_DIST_BENCH_FLOATS"))
	if err != nil || floats < 1 {
		return fmt.Errorf("LGFLOW_DIST_BENCH_FLOATS=%q", os.Getenv("LGFLOW_DIST_BENCH_FLOATS"))
	}
	c, err := mpi.Open(mpi.Options{Timeout: time.Minute})
	if err != nil {
		return err
	}
	buf := fill32(c.Rank(), floats)
	for range 3 {
		if err := c.AllReduceSum32(buf); err != nil {
			return err
		}
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	start := time.Now()
	for range n {
		if err := c.AllReduceSum32(buf); err != nil {
			return err
		}
	}
	took := time.Since(start)
	if c.Rank() == 0 {
		fmt.Printf("BENCH ns/op %d n %d\n", took.Nanoseconds()/int64(n), n)
	}
	return c.Close()
}

var benchLine = regexp.MustCompile(`BENCH ns/op (\d+) n (\d+)`)

// BenchmarkAllReduce32 measures all-reduces of float32 buffers on 2 ranks
// under mpirun: of the flow cpu preset's gradient (1.2M float32), and of
// one float (the latency of a collective, the MPI thread's hand-off
// included). The test binary runs b.N all-reduces on each rank, and ns/op
// is rank 0's time per all-reduce, without mpirun's start-up. The
// framework starts one mpirun per b.N it tries; -benchtime 200x runs
// exactly one per size:
//
//	go test -run '^$' -bench AllReduce32 -benchtime 200x ./dist/mpi
func BenchmarkAllReduce32(b *testing.B) {
	for _, floats := range []int{1_200_000, 1} {
		b.Run(fmt.Sprintf("floats=%d", floats), func(b *testing.B) {
			mpitest.Skip(b)
			r := mpitest.Run(b, mpitest.Job{NP: 2, Case: "bench", Limit: 5 * time.Minute,
				Env: []string{fmt.Sprintf("LGFLOW_DIST_BENCH_N=%d", b.N), fmt.Sprintf("LGFLOW_DIST_BENCH_FLOATS=%d", floats)}})
			if r.Err != nil {
				b.Fatalf("mpirun: %v\n%s", r.Err, r.Output)
			}
			m := benchLine.FindStringSubmatch(r.Output)
			if m == nil {
				b.Fatalf("no BENCH line in\n%s", r.Output)
			}
			ns, _ := strconv.ParseFloat(m[1], 64)
			b.ReportMetric(ns, "ns/op")
			b.ReportMetric(ns/1e3, "µs/allreduce")
			b.ReportMetric(float64(floats)*4/ns, "GB/s") // buffer bytes per second
		})
	}
}
