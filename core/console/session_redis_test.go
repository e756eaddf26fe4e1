package console

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// Sessions in a real Redis: shared by every replica, expiring with the
// record (the TTL is the session's end).
func TestRedisSessions(t *testing.T) {
	r := testsvc.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: r.DB})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	a, b := RedisSessions(rdb), RedisSessions(rdb) // two replicas
	ss := &sessions{st: a, exp: Expiry{Idle: time.Hour, Max: 8 * time.Hour}, now: time.Now}
	tok, err := ss.create(ctx, &Session{UserID: 9, Via: viaOIDC})
	if err != nil {
		t.Fatal(err)
	}
	other := &sessions{st: b, exp: ss.exp, now: time.Now}
	s, err := other.get(ctx, tok)
	if err != nil || s.UserID != 9 {
		t.Fatalf("the other replica: %+v, %v", s, err)
	}
	ttl, err := rdb.TTL(ctx, redisKey(hashToken(tok))).Result()
	if err != nil || ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("TTL %s (%v), want the idle hour", ttl, err)
	}
	if err := other.end(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.get(ctx, tok); !errors.Is(err, errNoSession) {
		t.Fatalf("after sign-out on the other replica: %v", err)
	}
	if err := a.Put(ctx, []byte("x"), []byte("{}"), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, []byte("x")); !errors.Is(err, errNoSession) {
		t.Fatalf("a record put past its end: %v", err)
	}
}
