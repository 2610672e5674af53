//go:build !windows

package mpitest

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd (mpirun) in a process group of its own, which its
// ranks join, and makes the limit's cancellation send it SIGTERM, on which
// mpirun ends the job.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
}

// killGroup kills what is left of cmd's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
