package cuda

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"lgflow/tensor"
)

// These tests run the allocator's policy on a fake device: no GPU needed.

const mib = 1 << 20

// fakeMem is a devMem that hands out made-up addresses from a device of
// capacity bytes (0: unlimited) and checks what comes back.
type fakeMem struct {
	t         *testing.T
	capacity  uint64
	used      uint64
	next      uintptr
	live      map[uintptr]uint64
	allocs    int
	fails     int // memAlloc calls that found the device full
	rounds    int // memFree calls (each waits for the device)
	reclaims  int
	onReclaim func()
}

func newFakeMem(t *testing.T, capacity uint64) *fakeMem {
	return &fakeMem{t: t, capacity: capacity, next: 1 << 32, live: map[uintptr]uint64{}}
}

func (f *fakeMem) memAlloc(size uint64) (uintptr, error) {
	if f.capacity > 0 && f.used+size > f.capacity {
		f.fails++
		return 0, &Error{Op: "cuMemAlloc_v2", Code: 2, Msg: "CUDA_ERROR_OUT_OF_MEMORY: out of memory"}
	}
	p := f.next
	f.next += uintptr(size)
	f.live[p] = size
	f.used += size
	f.allocs++
	return p, nil
}

func (f *fakeMem) memFree(ps []uintptr) {
	f.rounds++
	for _, p := range ps {
		size, ok := f.live[p]
		if !ok {
			f.t.Fatalf("memFree of %#x, not allocated", p)
		}
		delete(f.live, p)
		f.used -= size
	}
}

func (f *fakeMem) totalMem() uint64 { return f.capacity }

func (f *fakeMem) reclaim() {
	f.reclaims++
	if f.onReclaim != nil {
		f.onReclaim()
	}
}

func newTestAllocator(limit uint64) *allocator {
	return &allocator{free: map[uint64][]uintptr{}, limit: limit}
}

// checkAlloc verifies a's accounting against the fake device.
func checkAlloc(t *testing.T, a *allocator, f *fakeMem) {
	t.Helper()
	var cached uint64
	for size, list := range a.free {
		cached += size * uint64(len(list))
		for _, p := range list {
			if f.live[p] != size {
				t.Fatalf("cached block %#x in bucket %d: the device holds %d bytes there", p, size, f.live[p])
			}
		}
	}
	if cached != a.cached {
		t.Fatalf("free lists hold %d bytes; cached %d", cached, a.cached)
	}
	if a.reserved != a.inUse+a.cached || a.reserved != f.used {
		t.Fatalf("reserved %d, in use %d + cached %d, the device holds %d", a.reserved, a.inUse, a.cached, f.used)
	}
}

func TestAllocReuse(t *testing.T) {
	const (
		m3  = 3 * mib
		k   = 128 << 10 // bucket step between 2 and 4 MiB
		big = 1 << 30
	)
	cases := []struct {
		name   string
		cached []uint64 // sizes returned to the cache, in order
		n      uint64   // request
		want   uint64   // size of the block handed out; 0: from the driver
	}{
		{"exact small", []uint64{1024}, 1000, 1024},
		{"small: no larger bucket", []uint64{1536}, 1000, 0},
		{"below 1 MiB: no larger bucket", []uint64{mib}, mib - 512, 0},
		{"1 MiB: larger bucket", []uint64{mib + mib/4}, mib, mib + mib/4},
		{"exact large", []uint64{m3}, m3, m3},
		{"next bucket", []uint64{m3 + k}, m3, m3 + k},
		{"1/4 larger", []uint64{m3 + 6*k}, m3, m3 + 6*k},
		{"more than 1/4 larger", []uint64{m3 + 7*k}, m3, 0},
		{"smallest fit", []uint64{m3 + 3*k, m3 + k, m3 + 2*k}, m3, m3 + k},
		{"exact before larger", []uint64{m3 + k, m3}, m3, m3},
		{"never smaller", []uint64{m3 - k}, m3, 0},
		{"1 GiB, 1/4 larger", []uint64{big + big/4}, big, big + big/4},
		{"1 GiB, more than 1/4 larger", []uint64{big + big/4 + big/16}, big, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, f := newTestAllocator(0), newFakeMem(t, 0)
			var held []*block
			for _, s := range c.cached {
				held = append(held, a.get(s, f))
			}
			for _, blk := range held {
				a.putBlock(blk)
			}
			before := f.allocs
			blk := a.get(c.n, f)
			checkAlloc(t, a, f)
			if c.want == 0 {
				if f.allocs != before+1 || blk.size != bucket(c.n) {
					t.Fatalf("got a %d-byte block, %d driver allocations; want a new %d-byte block", blk.size, f.allocs-before, bucket(c.n))
				}
				return
			}
			if f.allocs != before || blk.size != c.want {
				t.Fatalf("got a %d-byte block, %d driver allocations; want the cached %d-byte block", blk.size, f.allocs-before, c.want)
			}
			if a.inUse != blk.size || a.requests != uint64(len(c.cached)+1) {
				t.Fatalf("in use %d, requests %d", a.inUse, a.requests)
			}
		})
	}
}

// TestAllocReuseNewest checks that a bucket hands out its most recently
// cached block, and that putting it back makes it the newest again.
func TestAllocReuseNewest(t *testing.T) {
	a, f := newTestAllocator(0), newFakeMem(t, 0)
	x, y := a.get(4*mib, f), a.get(4*mib, f)
	px, py := x.ptr, y.ptr
	a.putBlock(x)
	a.putBlock(y)
	z := a.get(4*mib, f)
	if z.ptr != py {
		t.Fatalf("got %#x, want the newest %#x", z.ptr, py)
	}
	a.putBlock(z)
	if got := a.free[4*mib]; !slices.Equal(got, []uintptr{px, py}) {
		t.Fatalf("free list %v, want [%#x %#x]", got, px, py)
	}
	checkAlloc(t, a, f)
}

func TestAllocEvictOrder(t *testing.T) {
	// Cached in this order: A (1 MiB), B (4 MiB), C (2 MiB), D (1 MiB),
	// E (4 MiB). Largest first, the least recently cached first among
	// blocks of one size: B E C A D.
	sizes := []uint64{mib, 4 * mib, 2 * mib, mib, 4 * mib}
	const total = 12 * mib
	cases := []struct {
		target uint64
		want   string // evicted, in evict's order
	}{
		{total, ""},
		{total + mib, ""},
		{total - 1, "B"},
		{8 * mib, "B"},
		{8*mib - 1, "BE"},
		{4 * mib, "BE"},
		{4*mib - 1, "BEC"},
		{mib, "BECA"},
		{mib - 1, "BECAD"},
		{0, "BECAD"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.target), func(t *testing.T) {
			a, f := newTestAllocator(0), newFakeMem(t, 0)
			var held []*block
			names := map[uintptr]string{}
			for i, s := range sizes {
				blk := a.get(s, f)
				held = append(held, blk)
				names[blk.ptr] = string(rune('A' + i))
			}
			for _, blk := range held {
				a.putBlock(blk)
			}
			out := a.evict(c.target)
			got := ""
			for _, p := range out {
				got += names[p]
			}
			if got != c.want {
				t.Fatalf("evict(%d) gave %q, want %q", c.target, got, c.want)
			}
			f.memFree(out)
			checkAlloc(t, a, f)
			if a.cached > c.target || a.frees != uint64(len(out)) {
				t.Fatalf("cached %d > target %d, or frees %d", a.cached, c.target, a.frees)
			}
			// The rest stays in its buckets, in caching order.
			left := ""
			for _, size := range []uint64{mib, 2 * mib, 4 * mib} {
				for _, p := range a.free[size] {
					left += names[p]
				}
			}
			want := ""
			for _, name := range "ADCBE" { // by size, then caching order
				if !strings.ContainsRune(c.want, name) {
					want += string(name)
				}
			}
			if left != want {
				t.Fatalf("cached after evict(%d): %q, want %q", c.target, left, want)
			}
		})
	}
}

// stepSizes returns the request sizes of one training step of a small DiT
// (width 192, 8 blocks) on a batch of 1024 graphs padded to maxN nodes:
// activations proportional to maxN, attention to maxN², gradients,
// scratch.
func stepSizes(maxN int) []uint64 {
	const b, d = 1024, 192
	var s []uint64
	for range 8 {
		for _, w := range []int{d, d, 3 * d, d, d, 4 * d, 4 * d, d, d, d, 6 * d} {
			s = append(s, uint64(b*maxN*w*4))
		}
		s = append(s, uint64(b*3*maxN*maxN*4), uint64(b*3*maxN*maxN*4), uint64(b*maxN*8), uint64(b*d*4), uint64(b*6*d*4), 4096, uint64(b*maxN*4))
	}
	for range 40 {
		s = append(s, uint64(b*maxN*d*4))
	}
	return s
}

// runSteps runs a training loop on the allocator, one step per entry of
// shapes (the batch's node count): each step allocates stepSizes, then
// returns them all (an autograd tape's Release). check runs after every
// request.
func runSteps(a *allocator, f *fakeMem, shapes []int, check func()) {
	for _, maxN := range shapes {
		var held []*block
		for _, s := range stepSizes(maxN) {
			held = append(held, a.get(s, f))
			check()
		}
		for _, blk := range held {
			a.putBlock(blk)
		}
	}
}

func TestAllocVaryingBatches(t *testing.T) {
	// Batches padded to 18-30 nodes in random order, as size-bucketed
	// batches of molecules come (trainer.BatchesBySize), after one of the
	// largest.
	r := rand.New(rand.NewPCG(1, 2))
	shapes := []int{30}
	for range 1000 {
		shapes = append(shapes, 18+r.IntN(13))
	}
	// Without a bound the cache keeps blocks for every shape: the growth
	// the bound prevents must show in this workload.
	t.Run("unbounded", func(t *testing.T) {
		a, f := newTestAllocator(1<<62), newFakeMem(t, 0)
		runSteps(a, f, shapes, func() {})
		checkAlloc(t, a, f)
		if a.reserved < 2*a.peak+a.peak/4 || a.frees != 0 {
			t.Fatalf("reserved %d, peak %d, frees %d: the workload does not make the cache grow", a.reserved, a.peak, a.frees)
		}
		t.Logf("reserved %.0f MiB, peak %.0f MiB, allocs %d of %d requests", float64(a.reserved)/mib, float64(a.peak)/mib, a.allocs, a.requests)
	})
	for _, c := range []struct {
		name      string
		capacity  uint64                   // of the device; 0: unlimited
		limit     func(peak uint64) uint64 // SetCacheLimit's after the first step; nil: the default
		maxAllocs uint64                   // most driver allocations, per 1000 requests
	}{
		{"default", 0, nil, 10},
		{"small device", 16 << 30, nil, 400},
		{"peak", 0, func(peak uint64) uint64 { return peak }, 400},
		{"1 GiB", 0, func(uint64) uint64 { return 1 << 30 }, 600},
		{"1 byte", 0, func(uint64) uint64 { return 1 }, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, f := newTestAllocator(0), newFakeMem(t, c.capacity)
			var maxReserved uint64
			check := func() {
				if limit := a.cacheLimit(f.capacity); a.reserved > a.peak+limit {
					t.Fatalf("after request %d: reserved %d > peak %d + limit %d", a.requests, a.reserved, a.peak, limit)
				}
				maxReserved = max(maxReserved, a.reserved)
			}
			runSteps(a, f, shapes[:1], check)
			if c.limit != nil {
				a.limit = c.limit(a.peak)
			}
			runSteps(a, f, shapes[1:], check)
			checkAlloc(t, a, f)
			t.Logf("limit %.0f MiB: reserved at most %.0f MiB, peak %.0f MiB; %d allocs, %d frees in %d rounds, for %d requests in %d steps",
				float64(a.cacheLimit(f.capacity))/mib, float64(maxReserved)/mib, float64(a.peak)/mib, a.allocs, a.frees, f.rounds, a.requests, len(shapes))
			if a.frees == 0 {
				t.Fatalf("no block went back to the driver")
			}
			if f.fails != 0 {
				t.Errorf("the device was full %d times", f.fails)
			}
			if a.allocs > a.requests*c.maxAllocs/1000 {
				t.Errorf("%d driver allocations for %d requests: the cache serves too few", a.allocs, a.requests)
			}
		})
	}
	// Batches of one shape: after the first step the cache serves every
	// request, and nothing goes back to the driver.
	t.Run("same shape", func(t *testing.T) {
		a, f := newTestAllocator(0), newFakeMem(t, 0)
		runSteps(a, f, []int{24}, func() {})
		allocs := a.allocs
		runSteps(a, f, slices.Repeat([]int{24}, 50), func() {})
		checkAlloc(t, a, f)
		if a.allocs != allocs || a.frees != 0 || f.rounds != 0 {
			t.Fatalf("allocs %d -> %d, frees %d, rounds %d: the cache should serve every step", allocs, a.allocs, a.frees, f.rounds)
		}
	})
}

func TestAllocOutOfMemory(t *testing.T) {
	t.Run("empties the cache", func(t *testing.T) {
		a, f := newTestAllocator(0), newFakeMem(t, 8*mib)
		var held []*block
		for range 6 {
			held = append(held, a.get(mib, f))
		}
		for _, blk := range held {
			a.putBlock(blk)
		}
		blk := a.get(4*mib, f) // misses; under the limit, but the device is full
		checkAlloc(t, a, f)
		if blk.size != 4*mib || a.frees != 6 || a.cached != 0 || a.reserved != 4*mib || f.reclaims != 0 {
			t.Fatalf("block %d bytes, frees %d, cached %d, reserved %d, reclaims %d", blk.size, a.frees, a.cached, a.reserved, f.reclaims)
		}
	})
	t.Run("reclaims", func(t *testing.T) {
		a, f := newTestAllocator(0), newFakeMem(t, 8*mib)
		lost := a.get(4*mib, f) // an unreachable tensor's, returned by its cleanup
		f.onReclaim = func() { a.putBlock(lost) }
		blk := a.get(6*mib, f)
		checkAlloc(t, a, f)
		if blk.size != 6*mib || f.reclaims != 1 || a.frees != 1 || a.reserved != 6*mib {
			t.Fatalf("block %d bytes, reclaims %d, frees %d, reserved %d", blk.size, f.reclaims, a.frees, a.reserved)
		}
	})
	t.Run("fails", func(t *testing.T) {
		a, f := newTestAllocator(0), newFakeMem(t, 8*mib)
		keep := a.get(2*mib, f)
		a.putBlock(a.get(3*mib, f))
		var err error
		func() {
			defer func() { err, _ = recover().(error) }()
			a.get(16*mib, f)
		}()
		if !errors.Is(err, ErrOutOfMemory) || !errors.Is(err, tensor.ErrDevice) || !strings.Contains(err.Error(), "allocating 16777216 bytes; 2097152 in use, 0 cached") {
			t.Fatalf("error %v, want one matching ErrOutOfMemory and tensor.ErrDevice, with the figures", err)
		}
		checkAlloc(t, a, f)
		if f.reclaims != 1 || a.frees != 1 || a.inUse != keep.size {
			t.Fatalf("reclaims %d, frees %d, in use %d", f.reclaims, a.frees, a.inUse)
		}
		// The allocator still works.
		if blk := a.get(4*mib, f); blk.size != 4*mib {
			t.Fatalf("after the failure: block of %d bytes", blk.size)
		}
		checkAlloc(t, a, f)
	})
}

func TestAllocCacheLimit(t *testing.T) {
	const gib = 1 << 30
	cases := []struct{ set, env, peak, total, want uint64 }{
		{0, 0, 0, 0, minCacheLimit},
		{0, 0, 100 * mib, 0, minCacheLimit},
		{0, 0, 200 * mib, 0, 400 * mib},
		{0, 0, 11 * gib, 0, 22 * gib},
		{0, 0, 11 * gib, 141 * gib, 22 * gib},
		{0, 0, 11 * gib, 24 * gib, 6 * gib},
		{0, 0, 11 * gib, 512 * mib, minCacheLimit},
		{0, 2 * gib, 11 * gib, 141 * gib, 2 * gib},
		{0, 40 * gib, 11 * gib, 24 * gib, 40 * gib},
		{mib, 2 * gib, 11 * gib, 141 * gib, mib},
	}
	for _, c := range cases {
		if got := defaultCacheLimit(c.set, c.env, c.peak, c.total); got != c.want {
			t.Errorf("defaultCacheLimit(%d, %d, %d, %d) = %d, want %d", c.set, c.env, c.peak, c.total, got, c.want)
		}
	}
	for s, want := range map[string]uint64{"": 0, "0": 0, "-5": 0, "x": 0, "1.5": 0, "512": 512 * mib, "1<<20": 0} {
		if got := parseCacheLimitMiB(s); got != want {
			t.Errorf("parseCacheLimitMiB(%q) = %d, want %d", s, got, want)
		}
	}
	var b Backend
	b.alloc.envLimit = 2 << 30 // as if LGFLOW_CUDA_CACHE_LIMIT_MIB=2048
	b.SetCacheLimit(3 << 30)
	if got := b.MemStats().CacheLimit; got != 3<<30 {
		t.Errorf("after SetCacheLimit(3 GiB): CacheLimit %d", got)
	}
	for _, n := range []int64{0, -1} {
		b.SetCacheLimit(n)
		if got, want := b.MemStats().CacheLimit, uint64(2<<30); got != want {
			t.Errorf("after SetCacheLimit(%d): CacheLimit %d, want the environment's %d", n, got, want)
		}
	}
}

func TestMemStatsString(t *testing.T) {
	s := MemStats{InUse: 1 << 29, Peak: 3 << 29, Cached: 1 << 30, Reserved: 3 << 29, CacheLimit: 3 << 29,
		Requests: 18231, Allocs: 412, Releases: 17934, Frees: 6}
	const want = "reserved 1.50 GiB (in use 0.50, peak 1.50) requests 18231 allocs 412 releases 17934 frees 6"
	if got := s.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
