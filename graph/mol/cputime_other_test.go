//go:build !unix

package mol

func processCPUSeconds() float64 { return 0 }
