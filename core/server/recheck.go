package server

import (
	"context"
	"errors"
	"time"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// A stream outlives the check of its key: a key revoked, expired or
// whose user was disabled while its stream runs would otherwise keep
// receiving tokens until the answer ends (hundreds of thousands of them).
// So the relay asks again every accounts.stream_recheck (1 s by default),
// at the first backend read after that time, and ends the stream in the
// client's dialect when the key is refused. The check is a cache hit
// until a revocation drops the key's entry (on every replica within a
// second, through Redis), so it costs a SHA-256 a second per stream. A
// key that cannot be checked (the store down and the key not cached) is
// not a reason to cut a stream: that outage is the gateway's.
//
// A backend that sends nothing is not read, so its stream ends at its
// next event or at the stream idle timeout, not within the interval.

// rechecker is an Authenticator that can check a key again without
// counting a use (core/accounts).
type rechecker interface {
	Recheck(ctx context.Context, key []byte) error
	// RecheckCached answers from the cache alone (hit false: ask
	// Recheck): the usual recheck needs no timer.
	RecheckCached(key []byte) (hit bool, err error)
}

// noteKey keeps a copy of the request's key for the rechecks: the
// request's headers are gone by the time a stream is relayed.
func (ex *exchange) noteKey(key []byte) {
	ex.key = append(ex.key[:0], key...)
	if every := ex.s.cfg.Accounts.StreamRecheck.D(); every > 0 {
		ex.recheckAt = time.Now().Add(every)
	}
}

// forgetKey wipes the copy (the exchange is pooled).
func (in *inbound) forgetKey() {
	clear(in.key)
	in.key, in.recheckAt = in.key[:0], time.Time{}
}

// keyRefused reports, at most once per interval, whether the stream's
// key is now refused (revoked, expired, its user inactive).
func (ex *exchange) keyRefused(now time.Time) bool {
	if ex.recheckAt.IsZero() || len(ex.key) == 0 || now.Before(ex.recheckAt) {
		return false
	}
	ex.recheckAt = now.Add(ex.s.cfg.Accounts.StreamRecheck.D())
	rc, ok := ex.s.authn.(rechecker)
	if ok {
		if hit, err := rc.RecheckCached(ex.key); hit {
			return errors.Is(err, auth.ErrBadKey)
		}
	}
	// The relay waits for the answer: a store read (a cache entry past
	// its time) must not stall the stream for long.
	ctx, cancel := context.WithTimeout(ex.s.baseCtx, recheckTimeout)
	defer cancel()
	var err error
	if ok {
		err = rc.Recheck(ctx, ex.key)
	} else {
		_, err = ex.s.authn.Authenticate(ctx, ex.key)
	}
	return errors.Is(err, auth.ErrBadKey)
}

// recheckTimeout bounds one recheck; one that runs out lets the stream go
// on until the next.
const recheckTimeout = 500 * time.Millisecond

// errKeyRefused ends a stream whose key was refused while it ran: 401 in
// the audit, an authentication error event in the client's dialect.
func errKeyRefused() error {
	return apierr.New(canon.ErrAuthentication, "api_key_revoked",
		"the API key was revoked or expired, or its user disabled, while this stream ran")
}
