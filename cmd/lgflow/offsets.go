package main

import (
	"flag"

	"lgflow/flow"
)

// offsetFlags holds the flags of flow.TimeOffsets.
type offsetFlags struct {
	step, from, jump *float64
}

// addOffsetFlags registers -step-offset, -step-offset-from and
// -jump-offset on fs.
func addOffsetFlags(fs *flag.FlagSet) offsetFlags {
	return offsetFlags{
		step: fs.Float64("step-offset", 0, "time offset of the denoiser at the steps from -step-offset-from on, before the final one (flow.TimeOffsets; positive: the states are taken to be less noisy than the grid says; 0: none, the reference)"),
		from: fs.Float64("step-offset-from", 0, "first time -step-offset and -jump-offset apply at (a final step that starts earlier is not shifted)"),
		jump: fs.Float64("jump-offset", 0, "time offset of the denoiser at the final step, the jump to the data (flow.TimeOffsets; negative: the state is taken to be noisier; 0: none)"),
	}
}

// offsets returns the offsets the flags give.
func (f offsetFlags) offsets() flow.TimeOffsets {
	return flow.TimeOffsets{Step: *f.step, From: *f.from, Jump: *f.jump}
}
