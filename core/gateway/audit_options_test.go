package gateway

import (
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
)

// TestRecorderOptions: audit.commit_delay and audit.sync_every reach the
// recorder; unset, they stay 0 (the recorder's defaults).
func TestRecorderOptions(t *testing.T) {
	for in, want := range map[string][2]time.Duration{
		"":                            {0, 0},
		"audit: {commit_delay: 10ms}": {10 * time.Millisecond, 0},
		"audit: {sync_every: 250ms}":  {0, 250 * time.Millisecond},
		"audit: {commit_delay: 1ms, sync_every: 1s}": {time.Millisecond, time.Second},
	} {
		cfg, err := config.Parse([]byte(in+"\n"), t.TempDir())
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		o, err := recorderOptions(cfg, "r1", nil)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := [2]time.Duration{o.CommitDelay, o.SyncEvery}; got != want || o.Replica != "r1" {
			t.Errorf("%q: commit delay, sync every %v (replica %q), want %v", in, got, o.Replica, want)
		}
	}
}
