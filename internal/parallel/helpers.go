package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Job is parallel work that helper goroutines may join. Help runs parts of
// it that nobody has taken yet, until none are left, and returns. It must
// be safe to call at any time and concurrently: before the owner has
// started, while it runs, and after it has finished (a helper may take an
// offer just before it is withdrawn), when it must do nothing, even if the
// Job has been reused for other work since.
type Job interface{ Help() }

// Ticket identifies an offer, for Withdraw.
type Ticket struct{ id uint64 }

// SpinTime is how long a helper that has run out of work keeps polling for
// more before it dozes (see helper), and how long Count.Wait spins before
// it parks; after that, getting the goroutine back costs a wake-up (tens of
// microseconds).
//
// Half a millisecond covers most serial stretches between the kernels of a
// training step (an LG-VAE step on two cores: 77 ms with 100 us, 72 ms
// with 400 us, 71 ms with 2 ms), at the price of up to that much CPU time
// burnt after the last kernel of a burst, which other processes sharing the
// CPUs could have used.
const SpinTime = 500 * time.Microsecond

const (
	maxHelpers = 255 // helper goroutines (and so threads of one call, less one)
	maxOffers  = 64  // offers open at once (nested calls); more run unhelped
)

type offer struct {
	job  Job
	want int // helpers that may still take it
	id   uint64
}

// hub holds the open offers and the helper goroutines, which take offers
// newest first (an offer made inside a job is what the job waits for).
var hub struct {
	mu       sync.Mutex
	offers   [maxOffers]offer
	n        int // offers[:n] are open
	nextID   uint64
	started  atomic.Int32  // helpers started (only grows, under mu)
	sleeping int           // helpers parked on wake
	wake     chan struct{} // one token per helper to wake
	pending  atomic.Int64  // sum of the open offers' want
	procs    atomic.Int32  // GOMAXPROCS when last seen by Helpers
}

func init() { hub.wake = make(chan struct{}, maxHelpers) }

// Helpers returns the number of helper goroutines that may join a job now,
// GOMAXPROCS-1 (at most 255), starting more if GOMAXPROCS has grown.
// Helpers are never stopped; when GOMAXPROCS shrinks, the extra ones park.
func Helpers() int {
	p := runtime.GOMAXPROCS(0)
	hub.procs.Store(int32(p))
	want := min(p-1, maxHelpers)
	if int(hub.started.Load()) >= want {
		return want
	}
	hub.mu.Lock()
	for int(hub.started.Load()) < want {
		i := int(hub.started.Add(1))
		go helper(i)
	}
	hub.mu.Unlock()
	return want
}

// Offer lets up to n helpers join j (each calls j.Help once) and returns a
// ticket for Withdraw. The caller runs j itself too: a job must never
// depend on a helper taking the offer.
func Offer(j Job, n int) Ticket {
	if n <= 0 {
		return Ticket{}
	}
	hub.mu.Lock()
	if hub.n == maxOffers {
		hub.mu.Unlock()
		return Ticket{}
	}
	hub.nextID++
	id := hub.nextID
	hub.offers[hub.n] = offer{job: j, want: n, id: id}
	hub.n++
	hub.pending.Add(int64(n))
	for w := min(n, hub.sleeping); w > 0; w-- {
		hub.sleeping--
		hub.wake <- struct{}{}
	}
	hub.mu.Unlock()
	return Ticket{id}
}

// Withdraw closes the offer of t to helpers that have not taken it yet.
func Withdraw(t Ticket) {
	if t.id == 0 {
		return
	}
	hub.mu.Lock()
	for i := hub.n - 1; i >= 0; i-- {
		if hub.offers[i].id == t.id {
			hub.pending.Add(-int64(hub.offers[i].want))
			removeOffer(i)
			break
		}
	}
	hub.mu.Unlock()
}

// removeOffer deletes offer i, keeping the others in order. Under hub.mu.
func removeOffer(i int) {
	copy(hub.offers[i:hub.n], hub.offers[i+1:hub.n])
	hub.n--
	hub.offers[hub.n] = offer{}
}

// take returns the newest open offer's job, or nil.
func take() Job {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if hub.n == 0 {
		return nil
	}
	i := hub.n - 1
	o := &hub.offers[i]
	j := o.job
	o.want--
	hub.pending.Add(-1)
	if o.want == 0 {
		removeOffer(i)
	}
	return j
}

// helper is helper goroutine number i (1-based): it runs offered jobs,
// spins for SpinTime when there are none, then polls in sleeps of growing
// length, up to IdleTime in all, and then parks until an offer wakes it.
// Helpers numbered GOMAXPROCS or above (GOMAXPROCS shrank) do not spin,
// which would take the calling goroutine's CPU.
//
// The sleeps are there because parking is not free either: a goroutine
// parks on a runtime record (a sudog) taken from its CPU's cache and
// returns it to the cache of the CPU it wakes on, often the one that woke
// it, so a helper parked and woken at every kernel drains its CPU's cache
// and allocates.
func helper(i int) {
	for {
		if hub.pending.Load() > 0 {
			if j := take(); j != nil {
				j.Help()
				continue
			}
		}
		if i < int(hub.procs.Load()) && (spin() || doze()) {
			continue
		}
		hub.mu.Lock()
		if hub.pending.Load() > 0 {
			hub.mu.Unlock()
			continue
		}
		hub.sleeping++
		hub.mu.Unlock()
		<-hub.wake
	}
}

// IdleTime is how long a helper without work polls (see helper) before it
// parks.
const IdleTime = 20 * time.Millisecond

// doze polls for an offer in sleeps from 20 us, doubling up to 1 ms, for
// up to IdleTime, and reports whether one came.
func doze() bool {
	d := 20 * time.Microsecond
	for slept := time.Duration(0); slept < IdleTime; slept += d {
		time.Sleep(d)
		if hub.pending.Load() > 0 {
			return true
		}
		d = min(2*d, time.Millisecond)
	}
	return false
}

// spin polls for an offer for up to SpinTime and reports whether one came.
// It yields the CPU to other goroutines every few microseconds only: a
// yield takes the scheduler's lock, which the goroutines doing the work
// need too.
func spin() bool {
	start := time.Now()
	for k := 1; ; k++ {
		for range 64 {
			if hub.pending.Load() > 0 {
				return true
			}
		}
		if k%16 == 0 {
			if time.Since(start) > SpinTime {
				return false
			}
			runtime.Gosched()
		}
	}
}

// Count counts pieces of a job that are not finished yet, for the job's
// owner to wait for. The pieces still running when the owner runs out of
// work are usually a helper's last one, which finishes within
// microseconds: Wait spins for up to SpinTime before it parks, which would
// cost the owner a wake-up when that piece is done. The zero value is ready
// to use.
type Count struct {
	left atomic.Int64
	wg   sync.WaitGroup
}

// Add adds n (which may be negative) to the count.
func (c *Count) Add(n int) {
	c.wg.Add(n)
	c.left.Add(int64(n))
}

// Done subtracts one from the count.
func (c *Count) Done() {
	c.wg.Done() // first: when left reads 0, Wait does not park
	c.left.Add(-1)
}

// Wait returns when the count is zero.
func (c *Count) Wait() {
	start := time.Now()
	for k := 1; c.left.Load() > 0; k++ {
		if k%1024 == 0 {
			if time.Since(start) > SpinTime {
				break
			}
			runtime.Gosched()
		}
	}
	c.wg.Wait()
}
