package flow_test

import (
	"lgflow/flow"
	"lgflow/vae"
)

// The single-setting edits the tests sample with, each a flow.WithSettings.

func withSteps(n int) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.Steps = n })
}

func withTemperature(tau float64) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.Temperature = tau })
}

func withFinalJump(t float64) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.FinalJump = t })
}

func withTimeShift(shift float64) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.TimeShift = shift })
}

func withOffsets(o flow.TimeOffsets) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.Offsets = o })
}

func withEdgeRule(r vae.EdgeRule) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.EdgeRule = r.String() })
}

func withEdgeMargin(m float64) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.EdgeMargin = &m })
}

// withDecode adds decode options to the sampler's.
func withDecode(opts ...vae.DecodeOption) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.Decode = append(s.Decode, opts...) })
}

// withExpert replaces the sampler's experts by e from time from on.
func withExpert(e *flow.Model, from float64) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.Experts = []flow.Expert{{Model: e, From: from}} })
}

// withExperts replaces the sampler's experts by es.
func withExperts(es ...flow.Expert) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.Experts = es })
}

// withGrid sets the sampler's time grid, "uniform" or "random".
func withGrid(g string) flow.SampleOption {
	return flow.WithSettings(func(s *flow.Sampler) { s.Grid = g })
}
