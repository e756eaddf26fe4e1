package accounts

import (
	"os"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// TestMain stops the Redis server the tests share (testsvc.StartRedis).
func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.StopAll()
	os.Exit(code)
}
