package autograd

import "math"

// expf returns e^x in float32 arithmetic (Cephes expf: range reduction by
// ln 2 and a degree-6 polynomial), within 2 ulp of the exact result for
// x ≤ 88; it is 0 below −87.3. Softmax rows use it for float32.
func expf(x float32) float32 {
	if x < -87.33654 {
		return 0
	}
	if x > 88.72283 {
		return float32(math.Inf(1))
	}
	n := float32(math.Floor(float64(x*1.442695040888963 + 0.5)))
	r := x - n*0.693359375 + n*2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	ni := int32(n)
	if ni < -126 { // subnormal result: scale in two steps
		return y * math.Float32frombits(uint32(ni+126+127)<<23) * math.Float32frombits(1<<23)
	}
	return y * math.Float32frombits(uint32(ni+127)<<23)
}
