package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/core/server"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
	"github.com/valyala/fasthttp"
)

// accountsPart is the store, Redis, the key authenticator, the quota
// limiter and the admin API: started before everything else, closed after
// the listener drained (so the last requests settle their quotas before
// the final persist).
type accountsPart struct {
	st       store.Store
	ownStore bool
	rdb      *redis.Client
	authn    *accounts.Authenticator
	limiter  *quota.Limiter
	admin    *admin.Handler
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	// generatedKey is an admin key made at this start because none
	// existed (ADMIN_API_KEY unset, empty store); shown once.
	generatedKey string
}

// openAccounts opens the store (migrating and seeding it as configured),
// writes the config's backends into it and returns cfg's backends plus
// those registered through the admin API.
func openAccounts(ctx context.Context, o *Options, log *slog.Logger) (*accountsPart, []config.Backend, error) {
	cfg := o.Config
	a := &accountsPart{st: o.Store}
	if a.st == nil {
		s, err := sqlstore.Open(ctx, cfg.Store.Driver, cfg.StoreDSN())
		if err != nil {
			return nil, nil, fmt.Errorf("open the %s store: %w", cfg.Store.Driver, err)
		}
		a.st, a.ownStore = s, true
	}
	fail := func(err error) (*accountsPart, []config.Backend, error) {
		a.close(context.Background())
		return nil, nil, err
	}
	if cfg.MigrateOnStart() {
		if err := a.st.Migrate(ctx); err != nil {
			return fail(fmt.Errorf("migrate the store: %w", err))
		}
	}
	if cfg.SeedGroups() {
		if err := a.st.SeedGroups(ctx); err != nil {
			return fail(fmt.Errorf("seed the groups: %w", err))
		}
	}
	backends, err := syncBackends(ctx, a.st, cfg.Backends)
	if err != nil {
		return fail(err)
	}
	key := o.AdminKey
	if key == "" {
		if key, err = adminKeyNeeded(ctx, a.st); err != nil {
			return fail(err)
		}
		a.generatedKey = key
	}
	if key != "" {
		if _, err := accounts.EnsureAdmin(ctx, a.st, key); err != nil {
			return fail(fmt.Errorf("bootstrap the admin key: %w", err))
		}
	}
	var rc redis.UniversalClient
	if cfg.Redis.Addr != "" {
		t := cfg.Redis.Timeout.D()
		a.rdb = redis.NewClient(&redis.Options{Addr: cfg.Redis.Addr, Username: cfg.Redis.Username, Password: cfg.Redis.Password,
			DB: cfg.Redis.DB, DialTimeout: t, ReadTimeout: t, WriteTimeout: t, PoolTimeout: t, MaxRetries: -1,
			DialerRetries: 1}) // the default 5 dial retries made each call wait ~0.5 s while Redis is down
		rc = a.rdb
	}
	a.authn = accounts.New(accounts.Options{Store: a.st, Redis: rc, CacheTTL: cfg.Accounts.KeyCacheTTL.D(), Log: log})
	a.limiter = quota.New(quota.Options{Redis: rc, Store: a.st, Replica: o.Replica, RedisDown: quota.Mode(cfg.Quota.RedisDown),
		Lease: cfg.Quota.Lease.D(), PersistEvery: cfg.Quota.PersistInterval.D(), Log: log})
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	a.wg.Add(2)
	go func() { defer a.wg.Done(); a.authn.Run(rctx) }()
	go func() { defer a.wg.Done(); a.limiter.Run(rctx) }()
	return a, backends, nil
}

// adminKeyNeeded makes an admin key when no active user of an admin group
// has one (a fresh store and no ADMIN_API_KEY), and returns "" otherwise.
func adminKeyNeeded(ctx context.Context, st store.Store) (string, error) {
	keys, err := st.Keys(ctx, 0)
	if err != nil {
		return "", fmt.Errorf("list keys: %w", err)
	}
	for _, k := range keys {
		if k.Status == store.KeyActive && accounts.ParseScopes(k.Scopes)&auth.ScopeAdmin != 0 {
			return "", nil
		}
	}
	key, _, _, err := accounts.NewKey()
	return key, err
}

// syncBackends upserts cfg's backends into the store (marked as from the
// config) and returns them followed by the store's other backends, those
// registered through the admin API, which are served from the next start.
func syncBackends(ctx context.Context, st store.Store, cfgBackends []config.Backend) ([]config.Backend, error) {
	out := append([]config.Backend(nil), cfgBackends...)
	inCfg := map[string]bool{}
	for _, b := range cfgBackends {
		inCfg[b.Name] = true
		// No status: a new row is enabled, an existing one keeps what an
		// admin set (a drained backend stays drained across a restart).
		sb := store.Backend{Name: b.Name, Engine: b.Engine, URL: b.URL, MaxConcurrent: b.MaxConcurrent, Models: b.Models,
			FromConfig: true}
		if err := st.UpsertBackend(ctx, &sb); err != nil {
			return nil, fmt.Errorf("write backend %s to the store: %w", b.Name, err)
		}
	}
	all, err := st.Backends(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the store's backends: %w", err)
	}
	for _, b := range all {
		if inCfg[b.Name] || b.FromConfig {
			continue // a backend once in the config and since removed from it stays out
		}
		mc := b.MaxConcurrent
		if mc < 1 {
			mc = 16
		}
		out = append(out, config.Backend{Name: b.Name, Engine: b.Engine, URL: b.URL, MaxConcurrent: mc, Models: b.Models,
			IdleConnTimeout: config.Duration(backend.DefaultIdleConnTimeout)})
	}
	return out, nil
}

// close stops the background work (the authenticator's use counts and
// the limiter's counters are written a last time) and closes the store
// and Redis.
func (a *accountsPart) close(ctx context.Context) error {
	if a.cancel != nil {
		a.cancel()
		done := make(chan struct{})
		go func() { a.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	var errs []error
	if a.rdb != nil {
		errs = append(errs, a.rdb.Close())
	}
	if a.ownStore && a.st != nil {
		errs = append(errs, a.st.Close())
	}
	return errors.Join(errs...)
}

// limiter adapts *quota.Limiter to server.Limiter.
type limiter struct{ l *quota.Limiter }

func (l limiter) Admit(ctx context.Context, p *auth.Principal) (server.Ticket, error) {
	t, err := l.l.Admit(ctx, p)
	if t == nil { // no typed nil in the interface
		return nil, err
	}
	return t, err
}

// adminAPI adapts the admin package to server.Admin.
type adminAPI struct{ h *admin.Handler }

func (adminAPI) Handles(path []byte) bool { return admin.Handles(path) }
func (a adminAPI) Serve(ctx *fasthttp.RequestCtx, p *auth.Principal, body []byte) {
	a.h.Serve(ctx, p, body)
}

// liveBackends applies admin changes of backends to the running registry.
// A backend the registry does not have (registered through the API) is
// kept in the store and routed from the next start: the registry is built
// once (a live registry arrives with the scheduler work).
type liveBackends struct{ reg *backend.Registry }

func (l liveBackends) Apply(_ context.Context, b store.Backend) error {
	rb := l.reg.Backend(b.Name)
	if rb == nil {
		return errRestartToRoute
	}
	if b.Status == "" {
		return nil
	}
	return rb.SetState(b.Status)
}

func (l liveBackends) Remove(_ context.Context, name string) error {
	if rb := l.reg.Backend(name); rb != nil {
		return rb.SetState("disabled")
	}
	return nil
}

func (l liveBackends) Refresh(context.Context, string) error { return nil }

var errRestartToRoute = errors.New("the backend is stored and will be routed after the gateway restarts")
