package accounts

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Channel is the Redis pub/sub channel invalidations travel on. Messages:
// "a" (everything), "u:<user id>", "k:<hex sha256>[,<hex sha256>…]".
const Channel = "mindrouter:auth:invalidate"

const (
	// pingEvery paces the subscription's heartbeat; liveFor is how long
	// after the last word from Redis the subscription still counts as
	// live (a PONG also proves that every message published before its
	// PING has arrived); deadAfter is when a silent connection is
	// replaced.
	pingEvery = 250 * time.Millisecond
	liveFor   = 750 * time.Millisecond // + a round trip: within the second
	deadAfter = 3 * time.Second

	flushEvery  = 5 * time.Second
	sweepEvery  = 30 * time.Second
	retryEvery  = 200 * time.Millisecond
	maxPending  = 64 // failed publishes kept; beyond, one "a" replaces them
	maxBackoff  = time.Second
	stopTimeout = 5 * time.Second
)

// Invalidate drops the cached keys with these SHA-256 hashes here and, via
// Redis, on every replica. The admin API calls it after revoking or
// deleting a key (and after creating one, which forgets a recent "unknown"
// answer). A publish that fails is logged and retried by Run.
func (a *Authenticator) Invalidate(ctx context.Context, keyHashes ...[]byte) {
	a.dropKeys(keyHashes)
	var b strings.Builder
	b.WriteString("k:")
	n := 0
	for _, h := range keyHashes {
		if len(h) != 32 {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(hex.EncodeToString(h))
		n++
	}
	if n > 0 {
		a.publish(ctx, b.String())
	}
}

// InvalidateUser drops every cached key of a user, here and on every
// replica: after a user is changed, deactivated or deleted.
func (a *Authenticator) InvalidateUser(ctx context.Context, userID int64) {
	a.dropUser(userID)
	a.publish(ctx, "u:"+strconv.FormatInt(userID, 10))
}

// InvalidateAll empties every replica's cache: after a group changes,
// which touches all its users.
func (a *Authenticator) InvalidateAll(ctx context.Context) {
	a.dropAll()
	a.publish(ctx, "a")
}

// The drops move gen before removing, so a load that read the store
// before the change cannot put its entry back afterwards.

func (a *Authenticator) dropKeys(hashes [][]byte) {
	a.gen.Add(1)
	for _, h := range hashes {
		if len(h) != 32 {
			continue
		}
		k := [32]byte(h)
		a.cache.remove(&k)
		a.neg.remove(&k)
	}
}

func (a *Authenticator) dropUser(id int64) {
	a.gen.Add(1)
	a.cache.removeIf(func(e *entry) bool { return e.p.UserID == id })
}

func (a *Authenticator) dropAll() {
	a.gen.Add(1)
	a.cache.clear()
	a.neg.clear()
}

// apply carries out an invalidation received from Redis. A message it
// cannot read empties the cache: safe whatever it meant.
func (a *Authenticator) apply(msg string) {
	switch {
	case msg == "a":
		a.dropAll()
	case strings.HasPrefix(msg, "u:"):
		id, err := strconv.ParseInt(msg[2:], 10, 64)
		if err != nil {
			a.dropAll()
			return
		}
		a.dropUser(id)
	case strings.HasPrefix(msg, "k:"):
		var hashes [][]byte
		for x := range strings.SplitSeq(msg[2:], ",") {
			h, err := hex.DecodeString(x)
			if err != nil || len(h) != 32 {
				a.dropAll()
				return
			}
			hashes = append(hashes, h)
		}
		a.dropKeys(hashes)
	default:
		a.dropAll()
	}
}

func (a *Authenticator) publish(ctx context.Context, msg string) {
	if a.rdb == nil {
		return
	}
	if err := a.rdb.Publish(ctx, Channel, msg).Err(); err != nil {
		a.log.LogAttrs(ctx, slog.LevelWarn, "publish key invalidation failed; retrying",
			slog.String("err", err.Error()))
		a.pubMu.Lock()
		if len(a.pending) < maxPending {
			a.pending = append(a.pending, msg)
		} else {
			a.pending = append(a.pending[:0], "a")
		}
		a.pubMu.Unlock()
	}
}

// retryPublish sends the invalidations whose publish failed, in order,
// until one fails again. A replica that missed them while Redis was down
// flushed its cache on resubscribing anyway; this is for a publish that
// failed while subscribers stayed connected.
func (a *Authenticator) retryPublish(ctx context.Context) {
	a.pubMu.Lock()
	defer a.pubMu.Unlock()
	for len(a.pending) > 0 {
		if err := a.rdb.Publish(ctx, Channel, a.pending[0]).Err(); err != nil {
			return
		}
		a.pending = a.pending[1:]
	}
}

// Run keeps the revocation subscription (when Redis is set), flushes key
// use counts to the store every few seconds, and sweeps the cache. It
// returns when ctx is done, after a last flush of the use counts (bounded
// by 5 s). Call it once.
func (a *Authenticator) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if a.rdb != nil {
		wg.Go(func() { a.subscribeLoop(ctx) })
	}
	flush := time.NewTicker(flushEvery)
	defer flush.Stop()
	sweep := time.NewTicker(sweepEvery)
	defer sweep.Stop()
	retry := time.NewTicker(retryEvery)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
			defer cancel()
			if err := a.FlushUses(sctx); err != nil {
				a.log.LogAttrs(sctx, slog.LevelWarn, "key use counts lost at shutdown", slog.String("err", err.Error()))
			}
			return
		case <-flush.C:
			if err := a.FlushUses(ctx); err != nil {
				a.log.LogAttrs(ctx, slog.LevelWarn, "flush key use counts", slog.String("err", err.Error()))
			}
		case <-sweep.C:
			a.sweep()
		case <-retry.C:
			if a.rdb != nil {
				a.retryPublish(ctx)
			}
		}
	}
}

// subscribeLoop keeps a subscription to Channel, reconnecting with
// backoff, and logs only when it comes up or goes down.
func (a *Authenticator) subscribeLoop(ctx context.Context) {
	backoff := retryEvery
	var st subState
	for ctx.Err() == nil {
		err := a.session(ctx, &st)
		a.liveUntil.Store(0)
		if ctx.Err() != nil {
			return
		}
		switch {
		case st.up:
			st.up, st.warned, backoff = false, true, retryEvery
			a.log.LogAttrs(ctx, slog.LevelWarn, "key revocation subscription down; verified keys are trusted for 1s until it is back",
				slog.String("err", err.Error()))
		case !st.warned:
			st.warned = true
			a.log.LogAttrs(ctx, slog.LevelWarn, "cannot subscribe to key revocations; verified keys are trusted for 1s until it can",
				slog.String("err", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// subState is what subscribeLoop has logged.
type subState struct{ up, warned bool }

// session is one subscription: it marks the subscription live while Redis
// answers and empties the cache at every (re)subscription, since messages
// may have been missed before it. It returns why it ended.
func (a *Authenticator) session(ctx context.Context, st *subState) error {
	ps := a.rdb.Subscribe(ctx, Channel)
	defer ps.Close()
	var lastPing time.Time
	lastHeard := time.Now()
	confirmed := false
	for ctx.Err() == nil {
		if time.Since(lastPing) >= pingEvery {
			lastPing = time.Now()
			if err := ps.Ping(ctx); err != nil {
				return err
			}
		}
		msg, err := ps.ReceiveTimeout(ctx, pingEvery)
		if err != nil {
			if !isTimeout(err) {
				return err
			}
			if time.Since(lastHeard) > deadAfter {
				return errors.New("no answer from redis for " + deadAfter.String())
			}
			continue
		}
		lastHeard = time.Now()
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == Channel {
				a.dropAll()
				a.subscribes.Add(1)
				confirmed = true
				if !st.up {
					st.up, st.warned = true, false
					a.log.LogAttrs(ctx, slog.LevelInfo, "key revocation subscription live")
				}
			}
		case *redis.Message:
			a.apply(m.Payload)
		}
		if confirmed {
			a.liveUntil.Store(a.mono(a.now()) + int64(liveFor))
		}
	}
	return ctx.Err()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
