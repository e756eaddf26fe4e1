package accounts

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// Why a key is refused. Each wraps auth.ErrBadKey; the reason is for logs,
// the client gets one 401 whatever it is.
var (
	errMalformed = fmt.Errorf("%w: not shaped like a key", auth.ErrBadKey)
	errUnknown   = fmt.Errorf("%w: unknown key", auth.ErrBadKey)
	errRevoked   = fmt.Errorf("%w: key revoked", auth.ErrBadKey)
	errExpired   = fmt.Errorf("%w: key expired", auth.ErrBadKey)
	// errPrefixThrottled: too many wrong keys with this key's prefix
	// lately (prefixGate); not cached, so the right key works once the
	// window ends.
	errPrefixThrottled = fmt.Errorf("%w: unknown key", auth.ErrBadKey)
	errInactive        = fmt.Errorf("%w: user inactive", auth.ErrBadKey)
)

const (
	// minKeyLen and maxKeyLen bound what is worth a lookup: the bootstrap
	// admin key may be as short as auth.NewAdminKey allows, and nothing
	// issued or imported is longer than a few dozen characters.
	minKeyLen = len(auth.KeyPrefix) + 16
	maxKeyLen = 256

	// staleAfter is how long an entry is trusted when revocations cannot
	// reach this replica (no Redis, or the subscription down).
	staleAfter = time.Second
	// defaultCacheTTL is how long an entry is trusted while they can.
	defaultCacheTTL = 60 * time.Second
	// defaultStaleIfError is how long an entry bridges a store outage
	// while revocations still arrive (Options.StaleIfError).
	defaultStaleIfError = 5 * time.Minute
	// storeRetry is how long after a failed store read a stale entry is
	// served without asking the store again: a store that hangs costs
	// one request a lookup timeout, not every request.
	storeRetry = time.Second

	// maxLookups bounds concurrent store reads on cache misses, so a flood
	// of unknown keys queues here instead of in the database.
	maxLookups = 8
	// maxArgon bounds concurrent Argon2id verifications (64 MiB and tens
	// of milliseconds of a core each).
	maxArgon = 2
	// maxCandidates bounds the imported keys tried for one prefix.
	maxCandidates = 4
	// lookupTimeout bounds one cache miss, queueing included.
	lookupTimeout = 5 * time.Second
)

// Options configure an Authenticator.
type Options struct {
	Store store.Store
	// Redis carries revocations between replicas; nil for a single replica
	// (entries are then trusted for one second).
	Redis redis.UniversalClient
	// CacheTTL is how long a verified key is trusted while the revocation
	// subscription is live (default 60s, at least 1s). Without the
	// subscription it also bounds how long an entry bridges a store
	// outage.
	CacheTTL time.Duration
	// StaleIfError is how long an entry bridges a store outage while the
	// revocation subscription is live (default 5m, at least CacheTTL): a
	// key verified before the store went down keeps working, and a
	// revocation made meanwhile still reaches every replica through
	// Redis and stops it there. An outage longer than CacheTTL no longer
	// stops all inference.
	StaleIfError time.Duration
	Log          *slog.Logger
	// Now replaces time.Now in tests.
	Now func() time.Time
}

// Authenticator verifies API keys against the store, caching what it
// learns. It implements auth.Authenticator and is safe for concurrent use.
// Run must be running for revocations to arrive from other replicas and
// for key use counts to reach the store.
type Authenticator struct {
	st    store.Store
	rdb   redis.UniversalClient
	ttl   int64 // CacheTTL in nanoseconds
	stale int64 // StaleIfError in nanoseconds
	log   *slog.Logger
	now   func() time.Time
	epoch time.Time // a.mono counts from here

	cache *cache
	neg   negCache
	// gen moves at every invalidation, so a load that began before one
	// does not put what it read into the cache.
	gen atomic.Uint64
	// liveUntil is the a.mono until which the revocation subscription
	// counts as live (0: down).
	liveUntil  atomic.Int64
	subscribes atomic.Int64 // confirmed (re)subscriptions
	// failedAt is the a.mono of the last store read that failed (not a
	// bad key): stale entries are served without asking for storeRetry.
	failedAt atomic.Int64

	flight  singleflight.Group
	lookups chan struct{}
	argons  chan struct{}

	usesMu sync.Mutex
	uses   map[int64]*keyUse

	pubMu   sync.Mutex
	pending []string // invalidations whose PUBLISH failed, retried by Run

	badHashes sync.Map // key IDs whose unusable Argon2 string was logged
	gate      prefixGate
	argonRuns atomic.Int64 // Argon2id verifications run (tests)
}

var _ auth.Authenticator = (*Authenticator)(nil)

// New returns an Authenticator over o.Store.
func New(o Options) *Authenticator {
	if o.CacheTTL <= 0 {
		o.CacheTTL = defaultCacheTTL
	}
	o.CacheTTL = max(o.CacheTTL, staleAfter)
	if o.StaleIfError <= 0 {
		o.StaleIfError = defaultStaleIfError
	}
	o.StaleIfError = max(o.StaleIfError, o.CacheTTL)
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &Authenticator{
		st: o.Store, rdb: o.Redis, ttl: int64(o.CacheTTL), stale: int64(o.StaleIfError),
		log: o.Log.With("component", "accounts"), now: o.Now, epoch: o.Now(),
		cache:   newCache(),
		lookups: make(chan struct{}, maxLookups),
		argons:  make(chan struct{}, maxArgon),
		uses:    make(map[int64]*keyUse),
	}
	return a
}

// mono is t as nanoseconds since the Authenticator was made (monotonic
// when t comes from time.Now).
func (a *Authenticator) mono(t time.Time) int64 { return int64(t.Sub(a.epoch)) }

// staleFor is how old an entry may be at mono and still bridge a store
// outage: StaleIfError while revocations arrive (a revocation drops the
// entry wherever it is), CacheTTL otherwise (nothing would tell this
// replica of one).
func (a *Authenticator) staleFor(mono int64) int64 {
	if mono < a.liveUntil.Load() {
		return a.stale
	}
	return a.ttl
}

// freshFor is how old an entry may be at mono and still be trusted.
func (a *Authenticator) freshFor(mono int64) int64 {
	if mono < a.liveUntil.Load() {
		return a.ttl
	}
	return int64(staleAfter)
}

// Authenticate implements auth.Authenticator. A cache hit costs a SHA-256,
// a shard read lock and two atomics; a miss reads the store (see the
// package doc). Errors wrap auth.ErrNoKey or auth.ErrBadKey, except when
// the store cannot answer: then the error wraps neither, and the caller
// should answer 503 rather than 401.
func (a *Authenticator) Authenticate(ctx context.Context, key []byte) (auth.Principal, error) {
	if len(key) == 0 {
		return auth.Principal{}, auth.ErrNoKey
	}
	if len(key) < minKeyLen || len(key) > maxKeyLen || string(key[:len(auth.KeyPrefix)]) != auth.KeyPrefix {
		return auth.Principal{}, errMalformed
	}
	h := sha256.Sum256(key)
	now := a.now()
	mono := a.mono(now)
	e := a.cache.get(&h)
	if e != nil && mono-e.loaded < a.freshFor(mono) {
		return a.use(e, now, true)
	}
	return a.lookup(ctx, key, &h, e, now, true)
}

// Recheck reports whether key is still good, as Authenticate would, but
// counts no use: a stream in flight asks it every second or so
// (accounts.stream_recheck) to learn that its key was revoked or
// expired or its user disabled. The error wraps auth.ErrBadKey then; any
// other error means the key could not be checked.
func (a *Authenticator) Recheck(ctx context.Context, key []byte) error {
	h, e, now, hit, err := a.recheckCached(key)
	if hit {
		return err
	}
	_, err = a.lookup(ctx, key, &h, e, now, false)
	return err
}

// RecheckCached is Recheck answered from the cache alone: hit is false
// when the key's entry is missing or past its time, and then only Recheck
// (a store read) can answer. The relay asks it first, so that the
// common recheck, a cache hit, needs no context with a deadline.
func (a *Authenticator) RecheckCached(key []byte) (hit bool, err error) {
	_, _, _, hit, err = a.recheckCached(key)
	return hit, err
}

// recheckCached is RecheckCached, and what Recheck needs to read the
// store on a miss: the key's hash, its stale entry (or nil) and the time.
func (a *Authenticator) recheckCached(key []byte) (h [32]byte, e *entry, now time.Time, hit bool, err error) {
	if len(key) < minKeyLen || len(key) > maxKeyLen || string(key[:len(auth.KeyPrefix)]) != auth.KeyPrefix {
		return h, nil, now, true, errMalformed
	}
	h = sha256.Sum256(key)
	now = a.now()
	mono := a.mono(now)
	e = a.cache.get(&h)
	if e != nil && mono-e.loaded < a.freshFor(mono) {
		_, err = a.use(e, now, false)
		return h, e, now, true, err
	}
	return h, e, now, false, nil
}

// use checks what may have changed since e was read (the clock) and
// counts the use (when count).
func (a *Authenticator) use(e *entry, now time.Time, count bool) (auth.Principal, error) {
	if e.reason != nil {
		return auth.Principal{}, e.reason
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		return auth.Principal{}, errExpired
	}
	if !count {
		return e.p, nil
	}
	e.use.count.Add(1)
	// LastUsed to the second: a store on every hit would make every
	// request write one shared cache line.
	if ns := now.UnixNano(); ns-e.use.last.Load() >= int64(time.Second) {
		e.use.last.Store(ns)
	}
	return e.p, nil
}

// lookup resolves a key the cache could not: the negative cache, then one
// store read per hash however many requests wait for it. stale is the
// expired entry for the key, if any: it bridges a store outage (staleFor).
func (a *Authenticator) lookup(ctx context.Context, key []byte, h *[32]byte, stale *entry, now time.Time, count bool) (auth.Principal, error) {
	mono := a.mono(now)
	if a.neg.has(h, mono) {
		return auth.Principal{}, errUnknown
	}
	bridge := stale != nil && mono-stale.loaded < a.staleFor(mono)
	if bridge && mono-a.failedAt.Load() < int64(storeRetry) && a.failedAt.Load() != 0 {
		return a.use(stale, now, count) // the store failed a moment ago: do not wait for it again
	}
	k, hash := string(key), *h // copies: the load may outlive this call
	ch := a.flight.DoChan(string(h[:]), func() (any, error) { return a.load(k, &hash) })
	select {
	case r := <-ch:
		if r.Err == nil {
			return a.use(r.Val.(*entry), now, count)
		}
		// Still cached means not invalidated since: serve what was read.
		if bridge && !errors.Is(r.Err, auth.ErrBadKey) && a.cache.get(h) == stale {
			return a.use(stale, now, count)
		}
		return auth.Principal{}, r.Err
	case <-ctx.Done():
		return auth.Principal{}, fmt.Errorf("accounts: look up key: %w", context.Cause(ctx))
	}
}

// load reads the key's credential from the store and caches it. It runs
// detached from any one request: the requests that wait for it may go
// away.
func (a *Authenticator) load(key string, h *[32]byte) (*entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	select {
	case a.lookups <- struct{}{}:
		defer func() { <-a.lookups }()
	case <-ctx.Done():
		return nil, fmt.Errorf("accounts: look up key: waiting for a store slot: %w", ctx.Err())
	}
	gen := a.gen.Load()
	start := a.mono(a.now())
	cred, err := a.st.CredentialByHash(ctx, h[:])
	switch {
	case err == nil:
		// The store matched an index; compare again in constant time, as
		// the reference does, so a store bug cannot let a key through.
		if subtle.ConstantTimeCompare(cred.Key.Hash, h[:]) != 1 {
			return nil, fmt.Errorf("accounts: look up key: the store returned key %d for another hash", cred.Key.ID)
		}
	case errors.Is(err, store.ErrNotFound):
		cred, err = a.imported(ctx, key, h)
		if errors.Is(err, store.ErrNotFound) {
			if a.gen.Load() == gen {
				a.neg.add(h, a.mono(a.now()))
			}
			return nil, errUnknown
		}
		if err != nil {
			if !errors.Is(err, auth.ErrBadKey) {
				a.failedAt.Store(max(a.mono(a.now()), 1))
			}
			return nil, err
		}
	default:
		a.failedAt.Store(max(a.mono(a.now()), 1))
		return nil, fmt.Errorf("accounts: look up key: %w", err)
	}
	e := a.newEntry(&cred, start)
	a.cache.put(h, e, &a.gen, gen)
	return e, nil
}

// imported finds an imported key (Argon2id, looked up by prefix); its
// error wraps store.ErrNotFound when none matches.
func (a *Authenticator) imported(ctx context.Context, key string, h *[32]byte) (store.Credential, error) {
	creds, err := a.st.CredentialsByPrefix(ctx, key[:PrefixLen])
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Credential{}, fmt.Errorf("accounts: look up imported keys: %w", err)
	}
	prefix := key[:PrefixLen]
	var input []byte
	for i := range creds[:min(len(creds), maxCandidates)] {
		c := &creds[i]
		if c.Key.Argon2 == "" {
			continue
		}
		p, err := parsePHC(c.Key.Argon2)
		if err != nil {
			// Once per key: anyone who knows the prefix can bring this here.
			if _, seen := a.badHashes.LoadOrStore(c.Key.ID, struct{}{}); !seen {
				a.log.LogAttrs(ctx, slog.LevelWarn, "imported key has an unusable hash",
					slog.Int64("key_num", c.Key.ID), slog.String("err", err.Error()))
			}
			continue
		}
		if input == nil {
			if a.gate.blocked(prefix, a.mono(a.now())) {
				return store.Credential{}, errPrefixThrottled
			}
			input = hexSum(h)
		}
		select {
		case a.argons <- struct{}{}:
		case <-ctx.Done():
			return store.Credential{}, fmt.Errorf("accounts: verify imported key: waiting for a slot: %w", ctx.Err())
		}
		ok := p.verify(input)
		<-a.argons
		a.argonRuns.Add(1)
		if ok {
			return *c, nil
		}
	}
	if input != nil {
		a.gate.fail(prefix, a.mono(a.now()))
	}
	return store.Credential{}, store.ErrNotFound
}

// newEntry makes the cache entry of a credential read at loaded.
func (a *Authenticator) newEntry(c *store.Credential, loaded int64) *entry {
	e := &entry{p: principal(c), loaded: loaded, use: a.keyUse(c.Key.ID, loaded)}
	if c.Key.ExpiresAt != nil {
		e.expires = *c.Key.ExpiresAt
	}
	switch {
	case c.Key.Status != store.KeyActive:
		e.reason = errRevoked
	case !c.User.Active:
		e.reason = errInactive
	}
	return e
}
