package responses

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/server"
	"github.com/mindrouter/mindrouter/core/store"
)

// Defaults of Options.
const (
	DefaultRetention        = 720 * time.Hour
	DefaultMaxItemBytes     = 4 << 20
	DefaultBlobThreshold    = 16 << 10
	DefaultMaxResponseBytes = 32 << 20
	DefaultMaxHistoryBytes  = 64 << 20
)

// storeTimeout bounds one exchange's store calls: a Turn's writes run on
// the request's goroutine after the answer, and a slow store must not hold
// it long.
const storeTimeout = 10 * time.Second

// Options configure a Keeper. Zero fields take the defaults above.
type Options struct {
	// Retention: responses and conversations untouched (not written, read
	// or continued from) this long are deleted by Run.
	Retention time.Duration
	// MaxItemBytes bounds one input item with its images (400 beyond).
	MaxItemBytes int
	// BlobThreshold: a data: URL image longer than this is stored once as
	// a blob and referred to from the items that carry it.
	BlobThreshold int
	// MaxResponseBytes bounds the answer a Turn captures to store; a
	// longer one is not stored (and logged).
	MaxResponseBytes int
	// MaxHistoryBytes bounds the history spliced into one request (400
	// beyond: the client starts a new chain or conversation); the store
	// is read no further than it (store.ItemPage.MaxBytes).
	MaxHistoryBytes int
	// Stored bounds each user's stored state, GroupStored the users of a
	// group by its name (stored.go); zero: unlimited (the configuration's
	// defaults bound it).
	Stored      StoredLimit
	GroupStored map[string]StoredLimit
	// Clock is the time source (tests); nil is time.Now.
	Clock func() time.Time
}

// OptionsFrom reads the responses section of the configuration.
func OptionsFrom(c config.Responses) Options {
	o := Options{Retention: c.Retention.D(), MaxItemBytes: c.MaxItemBytes}
	o.Stored, o.GroupStored = storedLimits(c)
	return o
}

// Keeper keeps the Responses and Conversations state in a
// store.ResponseStore. It implements server.Keeper; safe for concurrent
// use.
type Keeper struct {
	st      store.ResponseStore
	opts    Options
	log     *slog.Logger
	parsers fastjson.ParserPool
	arenas  fastjson.ArenaPool
	gate    *storeGate // refuses requests that would store while the store is down (gate.go)
}

var _ server.Keeper = (*Keeper)(nil)

// New returns a Keeper over st.
func New(st store.ResponseStore, opts Options, log *slog.Logger) *Keeper {
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxItemBytes <= 0 {
		opts.MaxItemBytes = DefaultMaxItemBytes
	}
	if opts.BlobThreshold <= 0 {
		opts.BlobThreshold = DefaultBlobThreshold
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxHistoryBytes <= 0 {
		opts.MaxHistoryBytes = DefaultMaxHistoryBytes
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{st: st, opts: opts, log: log.With("component", "responses"), gate: newGate(st)}
}

func (k *Keeper) now() time.Time { return k.opts.Clock() }

// Run deletes expired state every min(Retention/10, 1h) (at least every
// second), starting now, until ctx ends. Every replica may run it: the
// deletes are idempotent.
func (k *Keeper) Run(ctx context.Context) {
	every := min(k.opts.Retention/10, time.Hour)
	every = max(every, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := k.Sweep(ctx); err != nil && ctx.Err() == nil {
			k.log.LogAttrs(ctx, slog.LevelWarn, "delete expired responses", slog.Any("err", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep deletes once what has not been touched for Retention and returns
// the rows deleted.
func (k *Keeper) Sweep(ctx context.Context) (int64, error) {
	n, err := k.st.DeleteExpired(ctx, k.now().Add(-k.opts.Retention))
	if n > 0 {
		k.log.LogAttrs(ctx, slog.LevelInfo, "deleted expired responses state", slog.Int64("rows", n))
	}
	return n, err
}

// newID returns prefix followed by n random bytes in hex.
func newID(prefix string, n int) string {
	var b [32]byte
	_, _ = rand.Read(b[:n]) // never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b[:n])
}

// validID reports an id this keeper may look up: 1–128 bytes of
// [A-Za-z0-9_-]. Anything else is unknown without a query (and never
// reaches a MySQL ASCII column).
func validID(id []byte) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
