//go:build !linux

package testsvc

import "os/exec"

// dieWithParent: only Linux has a parent-death signal; elsewhere StopAll
// is the only stop.
func dieWithParent(*exec.Cmd) {}

// processAlive cannot tell here, so no directory is swept.
func processAlive(int) bool { return true }
