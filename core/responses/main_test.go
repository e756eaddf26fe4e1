package responses

import (
	"os"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// TestMain stops the MariaDB server the store-fault tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.StopAll()
	os.Exit(code)
}
