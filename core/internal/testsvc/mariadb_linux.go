package testsvc

import (
	"errors"
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the test binary dies,
// so that a forgotten StopAll leaves no server running. (The signal comes
// when the OS thread that started it exits; Go ends threads only for
// goroutines locked to them, which the test code starting it is not.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processAlive reports whether pid exists (a zombie counts).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
