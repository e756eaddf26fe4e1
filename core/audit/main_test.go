package audit

import (
	"os"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// TestMain stops the ClickHouse server the tests share (and any other
// test service) after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.StopAll()
	os.Exit(code)
}
