// Package redisconn opens the gateway's Redis client from its config: one
// server (redis.addr) or a primary found through Redis Sentinel
// (redis.sentinel), whose failovers the client follows. Every part of the
// gateway (quotas, accounts, the fleet) and the admin CLI share it, so
// they agree on where Redis is.
package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/config"
)

// Timeouts are a client's: dial, and each command's read and write.
type Timeouts struct {
	Dial, Command time.Duration
	// Retries: -1 none (the gateway: a request never waits on Redis
	// retries), 0 go-redis's default.
	Retries int
}

// New returns the client for r; nil when r names no Redis.
func New(r config.Redis, t Timeouts) *redis.Client {
	// One dial retry: the default five made each call wait ~0.5 s while
	// Redis was down.
	const dialRetries = 1
	if st := r.Sentinel; st.Master != "" {
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: st.Master, SentinelAddrs: st.Addrs, SentinelUsername: st.Username, SentinelPassword: st.Password,
			Username: r.Username, Password: r.Password, DB: r.DB,
			DialTimeout: t.Dial, ReadTimeout: t.Command, WriteTimeout: t.Command, PoolTimeout: t.Command,
			MaxRetries: t.Retries, DialerRetries: dialRetries,
		})
	}
	if r.Addr == "" {
		return nil
	}
	return redis.NewClient(&redis.Options{Addr: r.Addr, Username: r.Username, Password: r.Password, DB: r.DB,
		DialTimeout: t.Dial, ReadTimeout: t.Command, WriteTimeout: t.Command, PoolTimeout: t.Command,
		MaxRetries: t.Retries, DialerRetries: dialRetries})
}

// UseLogger sends go-redis's own messages (Sentinel's primary changes,
// pool errors), which it otherwise prints as plain text on stderr, to l
// as JSON lines like every other log line. go-redis has one process-wide
// logger: the last call wins.
func UseLogger(l *slog.Logger) {
	redis.SetLogger(slogPrintf{l.With("component", "redis")})
}

type slogPrintf struct{ l *slog.Logger }

func (s slogPrintf) Printf(ctx context.Context, format string, v ...any) {
	s.l.InfoContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)))
}
