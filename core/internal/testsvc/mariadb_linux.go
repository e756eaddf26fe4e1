package testsvc

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the test binary dies,
// so that a forgotten StopAll leaves no server running.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
