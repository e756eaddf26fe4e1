package redisconn

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

func TestNewNoRedis(t *testing.T) {
	if c := New(config.Redis{}, Timeouts{}); c != nil {
		t.Fatal("a client for no Redis")
	}
}

// TestSentinelFailover: through redis.sentinel the client finds the
// primary, and after the primary dies and Sentinel promotes the replica it
// writes again on the new one, with what was written before still there.
func TestSentinelFailover(t *testing.T) {
	s := testsvc.StartSentinel(t)
	log, logs := testutil.CaptureLogger(slog.LevelInfo)
	UseLogger(log)
	defer UseLogger(slog.Default())
	c := New(config.Redis{Sentinel: config.RedisSentinel{Master: s.Master, Addrs: []string{s.Sentinel}}},
		Timeouts{Dial: time.Second, Command: time.Second})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "mr:k", "before", 0).Err(); err != nil {
		t.Fatalf("write through sentinel: %v", err)
	}
	testutil.WaitFor(t, "the replica acknowledging the write", 20*time.Second, func() bool {
		n, err := c.Do(ctx, "WAIT", 1, 500).Int()
		return err == nil && n == 1
	})
	s.Primary.Stop()
	testutil.WaitFor(t, "a write on the promoted replica", 30*time.Second, func() bool {
		return c.Incr(ctx, "mr:after").Err() == nil
	})
	if addr, err := s.PrimaryAddr(); err != nil || addr != s.Secondary.Addr {
		t.Errorf("sentinel names %s (%v) as primary, want %s", addr, err, s.Secondary.Addr)
	}
	if v, err := c.Get(ctx, "mr:k").Result(); err != nil || v != "before" {
		t.Errorf("after failover: %q %v", v, err)
	}
	if !strings.Contains(logs.String(), `"component":"redis"`) || !strings.Contains(logs.String(), "new master") {
		t.Errorf("go-redis's failover messages are not JSON log lines: %s", logs.String())
	}
}
