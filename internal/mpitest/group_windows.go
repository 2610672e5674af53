package mpitest

import "os/exec"

// ownGroup and killGroup do nothing on Windows, where Open MPI's mpirun
// does not run (Available reports why).
func ownGroup(cmd *exec.Cmd)  {}
func killGroup(cmd *exec.Cmd) {}
