package audit

import (
	"os"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// TestMain stops the ClickHouse server the tests share (and any other
// test service) after the run. With childEnv set the binary is instead
// the SIGKILL test's child.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	code := m.Run()
	testsvc.StopAll()
	os.Exit(code)
}
