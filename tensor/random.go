package tensor

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// RNG is a seeded pseudo-random generator whose output is the same on every
// machine and Go release: it draws 64-bit words from math/rand/v2's PCG
// (PCG-DXSM, a fixed algorithm) and derives every other quantity with code
// in this package — uniform floats by bit shifting, bounded integers by
// Lemire's method, normals by Marsaglia's polar method with a portable
// logarithm that the compiler may not fuse into FMAs. An RNG is not safe for
// concurrent use; give each goroutine its own via Split.
type RNG struct {
	src      *rand.PCG
	spare    float64
	hasSpare bool
}

// NewRNG returns a generator seeded with seed.
func NewRNG(seed uint64) *RNG {
	return &RNG{src: rand.NewPCG(seed, 0x9e3779b97f4a7c15)}
}

// Uint64 returns a uniformly distributed 64-bit word.
func (r *RNG) Uint64() uint64 { return r.src.Uint64() }

// Uniform returns a float64 uniformly distributed in [0, 1), a multiple of
// 2⁻⁵³.
func (r *RNG) Uniform() float64 {
	return float64(r.src.Uint64()>>11) * 0x1p-53
}

// Intn returns an int uniformly distributed in [0, n); it panics if n <= 0.
func (r *RNG) Intn(n int) int {
	if n <= 0 {
		panic("tensor.RNG.Intn: n <= 0")
	}
	return int(r.uint64n(uint64(n)))
}

// uint64n is Lemire's nearly divisionless bounded draw.
func (r *RNG) uint64n(n uint64) uint64 {
	hi, lo := bits.Mul64(r.src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.src.Uint64(), n)
		}
	}
	return hi
}

// Perm returns a uniformly random permutation of [0, n) (Fisher–Yates).
func (r *RNG) Perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := r.Intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// Shuffle permutes the n items that swap exchanges uniformly at random.
func (r *RNG) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.Intn(i+1))
	}
}

// Normal returns a standard normal variate (mean 0, variance 1). Variates
// come in pairs from the polar method; the second is kept for the next call.
func (r *RNG) Normal() float64 {
	if r.hasSpare {
		r.hasSpare = false
		return r.spare
	}
	for {
		u := 2*r.Uniform() - 1
		v := 2*r.Uniform() - 1
		s := float64(u*u) + float64(v*v)
		if s >= 1 || s == 0 {
			continue
		}
		f := math.Sqrt(-2 * portableLog(s) / s)
		r.spare, r.hasSpare = float64(v*f), true
		return float64(u * f)
	}
}

// Split returns a new generator seeded from r's stream, statistically
// independent of r's further output. Splitting is deterministic: the same
// sequence of calls on r yields the same children.
func (r *RNG) Split() *RNG {
	return &RNG{src: rand.NewPCG(r.src.Uint64(), r.src.Uint64())}
}

// portableLog returns ln x for finite x > 0 with the same result on every
// platform: the FreeBSD/Go algorithm written with explicit roundings so that
// no fused multiply-add can change the last bit.
func portableLog(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01
		ln2Lo = 1.90821492927058770002e-10
		l1    = 6.666666666666735130e-01
		l2    = 3.999999999940941908e-01
		l3    = 2.857142874366239149e-01
		l4    = 2.222219843214978396e-01
		l5    = 1.818357216161805012e-01
		l6    = 1.531383769920937332e-01
		l7    = 1.479819860511658591e-01
	)
	f1, ki := math.Frexp(x)
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * (l1 + float64(s4*(l3+float64(s4*(l5+float64(s4*l7)))))))
	t2 := float64(s4 * (l2 + float64(s4*(l4+float64(s4*l6)))))
	rr := t1 + t2
	hfsq := float64(0.5 * float64(f*f))
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+rr)) + float64(k*ln2Lo))) - f)
}

// FillNormal fills t with independent normal variates of the given mean and
// standard deviation, drawn in row-major order (so the values do not depend
// on t's layout or backend), and returns t.
//
// A large CPU tensor is filled in two passes with the same result: the
// polar method's accepted pairs drawn in order on the calling goroutine,
// then their logarithms and square roots, most of the work, on all cores.
func FillNormal(t *Tensor, r *RNG, mean, std float64) *Tensor {
	if t.backend() == CPU && t.IsContiguous() {
		if t.dtype == Float32 {
			fillNormal[float32](t, r, mean, std)
		} else {
			fillNormal[float64](t, r, mean, std)
		}
		return t
	}
	host := New(t.dtype, t.shape...)
	FillNormal(host, r, mean, std)
	return Copy(t, host)
}

// normalGrain is the number of normal pairs below which FillNormal draws
// on the calling goroutine only, variate by variate.
const normalGrain = 2048

// fillNormal fills t, a contiguous CPU tensor, as FillNormal does.
func fillNormal[T float](t *Tensor, r *RNG, mean, std float64) {
	off := t.offset
	d := data[T](t)[off : off+t.Size()]
	if len(d) > 0 && r.hasSpare {
		d[0] = T(mean + float64(std*r.Normal()))
		d = d[1:]
		off++
	}
	pairs := len(d) / 2
	if pairs < normalGrain {
		for i := range d {
			d[i] = T(mean + float64(std*r.Normal()))
		}
		return
	}
	// Pass 1: the accepted (u, v) of every pair, in the order Normal
	// draws them.
	sp := getScratch(2 * pairs)
	uv := *sp
	for p := range pairs {
		for {
			u := 2*r.Uniform() - 1
			v := 2*r.Uniform() - 1
			if s := float64(u*u) + float64(v*v); s < 1 && s != 0 {
				uv[2*p], uv[2*p+1] = u, v
				break
			}
		}
	}
	// Pass 2: Normal's transform of each pair, on all cores.
	j := getJob(normalRange[T])
	j.t[0] = t
	j.s64 = uv
	j.f[0], j.f[1] = mean, std
	j.n[0] = off
	j.runRows(pairs, 64)
	putJob(j)
	putScratch(sp)
	if len(d)%2 == 1 {
		d[len(d)-1] = T(mean + float64(std*r.Normal()))
	}
}

// normalRange writes pairs [lo, hi) of fillNormal's pass 2 into j.t[0]
// from element j.n[0] on.
func normalRange[T float](j *job, lo, hi int) {
	d := data[T](j.t[0])[j.n[0]:]
	uv, mean, std := j.s64, j.f[0], j.f[1]
	for p := lo; p < hi; p++ {
		u, v := uv[2*p], uv[2*p+1]
		s := float64(u*u) + float64(v*v)
		f := math.Sqrt(-2 * portableLog(s) / s)
		d[2*p] = T(mean + float64(std*float64(u*f)))
		d[2*p+1] = T(mean + float64(std*float64(v*f)))
	}
}

// FillUniform fills t with independent variates uniform in [lo, hi), drawn
// in row-major order, and returns t.
func FillUniform(t *Tensor, r *RNG, lo, hi float64) *Tensor {
	return fillRandom(t, func() float64 { return lo + (hi-lo)*r.Uniform() })
}

func fillRandom(t *Tensor, next func() float64) *Tensor {
	if t.backend() == CPU && t.IsContiguous() {
		if t.dtype == Float32 {
			d := t.Data32()
			for i := range d {
				d[i] = float32(next())
			}
		} else {
			d := t.Data64()
			for i := range d {
				d[i] = next()
			}
		}
		return t
	}
	host := New(t.dtype, t.shape...)
	fillRandom(host, next)
	return Copy(t, host)
}

// RandN returns a new CPU tensor of standard normal variates.
func RandN(r *RNG, dt DType, shape ...int) *Tensor {
	return FillNormal(New(dt, shape...), r, 0, 1)
}

// RandU returns a new CPU tensor of variates uniform in [0, 1).
func RandU(r *RNG, dt DType, shape ...int) *Tensor {
	return FillUniform(New(dt, shape...), r, 0, 1)
}
