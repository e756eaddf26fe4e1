package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/core/redisconn"
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
// writes the config's nodes and backends into it and returns cfg's
// backends plus those registered through the admin API.
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
	nodeIDs, err := syncNodes(ctx, a.st, cfg.Nodes)
	if err != nil {
		return fail(err)
	}
	backends, err := syncBackends(ctx, a.st, cfg.Backends, nodeIDs)
	if err != nil {
		return fail(err)
	}
	key := o.AdminKey
	if key == "" {
		if key, err = adminKeyNeeded(ctx, a.st); err != nil {
			return fail(err)
		}
		a.generatedKey = key
		if key != "" && o.AdminKeyFile != "" {
			// Written before the store knows the key: a start that cannot
			// write the file leaves no admin key nobody has.
			if err := writeKeyFile(o.AdminKeyFile, key); err != nil {
				return fail(fmt.Errorf("write the generated admin key: %w", err))
			}
		}
	}
	if key != "" {
		if _, err := accounts.EnsureAdmin(ctx, a.st, key); err != nil {
			return fail(fmt.Errorf("bootstrap the admin key: %w", err))
		}
	}
	var rc redis.UniversalClient
	if cfg.RedisOn() {
		t := cfg.Redis.Timeout.D()
		redisconn.UseLogger(log)
		a.rdb = redisconn.New(cfg.Redis, redisconn.Timeouts{Dial: t, Command: t, Retries: -1})
		rc = a.rdb
	}
	a.authn = accounts.New(accounts.Options{Store: a.st, Redis: rc, CacheTTL: cfg.Accounts.KeyCacheTTL.D(),
		StaleIfError: cfg.Accounts.StaleIfError.D(), Log: log})
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

// syncNodes upserts cfg's GPU nodes into the store (marked as from the
// config; an existing row keeps an admin's status) and returns every
// stored node's ID by name, for the backends' references.
func syncNodes(ctx context.Context, st store.Store, cfgNodes []config.Node) (map[string]int64, error) {
	for _, n := range cfgNodes {
		sn := store.Node{Name: n.Name, SidecarURL: n.SidecarURL, SidecarKey: string(n.SidecarKey), FromConfig: true}
		if err := st.UpsertNode(ctx, &sn); err != nil {
			return nil, fmt.Errorf("write node %s to the store: %w", n.Name, err)
		}
	}
	all, err := st.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the store's nodes: %w", err)
	}
	ids := make(map[string]int64, len(all))
	for _, n := range all {
		ids[n.Name] = n.ID
	}
	return ids, nil
}

// syncBackends upserts cfg's backends into the store (marked as from the
// config) and returns them followed by the store's other backends, those
// registered through the admin API. A backend's node (by name, in nodeIDs)
// and GPUs come from the file when it names a node; otherwise the stored
// row keeps an admin's placement, as it keeps the priority and state.
func syncBackends(ctx context.Context, st store.Store, cfgBackends []config.Backend, nodeIDs map[string]int64) ([]config.Backend, error) {
	stored, err := st.Backends(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the store's backends: %w", err)
	}
	prev := make(map[string]store.Backend, len(stored))
	for _, b := range stored {
		prev[b.Name] = b
	}
	for _, b := range cfgBackends {
		// No status: a new row is enabled, an existing one keeps what an
		// admin set (a drained backend stays drained across a restart).
		p := prev[b.Name]
		sb := store.Backend{Name: b.Name, Engine: b.Engine, URL: b.URL, MaxConcurrent: b.MaxConcurrent, Models: b.Models,
			FromConfig: true, Priority: p.Priority, NodeID: p.NodeID, GPUIndices: p.GPUIndices}
		if b.Node != "" {
			id, ok := nodeIDs[b.Node]
			if !ok {
				return nil, fmt.Errorf("backend %s: node %q is neither in the config's nodes nor in the store", b.Name, b.Node)
			}
			sb.NodeID, sb.GPUIndices = &id, b.GPUs
		}
		if err := st.UpsertBackend(ctx, &sb); err != nil {
			return nil, fmt.Errorf("write backend %s to the store: %w", b.Name, err)
		}
	}
	all, err := st.Backends(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the store's backends: %w", err)
	}
	out := append([]config.Backend(nil), cfgBackends...)
	inCfg := configNames(cfgBackends)
	for _, b := range all {
		if _, ok := inCfg[b.Name]; ok || b.FromConfig {
			continue // a backend once in the config and since removed from it stays out
		}
		out = append(out, storedBackend(b, inCfg))
	}
	return out, nil
}

// configNames indexes the config file's backends by name.
func configNames(cfgBackends []config.Backend) map[string]*config.Backend {
	m := make(map[string]*config.Backend, len(cfgBackends))
	for i := range cfgBackends {
		m[cfgBackends[i].Name] = &cfgBackends[i]
	}
	return m
}

// storedBackend is the registry's description of a stored backend. A
// backend the config file declares is built from the file, as at every
// start (the file is its source: each replica has its own, and an admin's
// change of its address or size lasts only until the next start anyway);
// the store gives it only its state, priority and GPU placement
// (applyStore). Any other is built from the store.
func storedBackend(b store.Backend, inCfg map[string]*config.Backend) config.Backend {
	if c := inCfg[b.Name]; c != nil {
		return *c
	}
	mc := b.MaxConcurrent
	if mc < 1 {
		mc = 16
	}
	return config.Backend{Name: b.Name, Engine: b.Engine, URL: b.URL, MaxConcurrent: mc, Models: b.Models,
		IdleConnTimeout: config.Duration(backend.DefaultIdleConnTimeout)}
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

// liveBackends keeps the running registry in line with the store's
// backends. An admin's change through this replica's API (register,
// update, delete, enable, disable, drain) is applied at once: a new or
// re-addressed backend is probed before the answer, so it routes as soon
// as the admin has it; a deleted one takes no new request and its
// requests in flight finish. Other replicas' changes arrive with sync,
// which discovery runs before each round (one read of the backends and
// one of the nodes: cheap at the discovery interval). Backends the config
// file declared once and no longer does stay out, as at start; one it
// declares keeps the file's address and size (storedBackend).
type liveBackends struct {
	reg   *backend.Registry
	st    store.Store
	inCfg map[string]*config.Backend // the config file's backends
	log   *slog.Logger
	disc  *backend.Discoverer // set when discovery starts, before the API serves

	mu sync.Mutex // one change at a time: the registry, then the store's state and nodes over it
}

func newLiveBackends(reg *backend.Registry, st store.Store, cfgBackends []config.Backend, log *slog.Logger) *liveBackends {
	return &liveBackends{reg: reg, st: st, inCfg: configNames(cfgBackends), log: log.With("component", "backends")}
}

// Apply registers or updates b in the registry, then gives every backend
// the store's state, priority and GPU placement.
func (l *liveBackends) Apply(ctx context.Context, b store.Backend) error {
	if _, ok := l.inCfg[b.Name]; b.FromConfig && !ok {
		return errRenamedConfigBackend // as at start: the config file names it
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, changed, err := l.reg.Put(storedBackend(b, l.inCfg))
	if err != nil {
		return fmt.Errorf("register backend %s: %w", b.Name, err)
	}
	if err := applyStore(ctx, l.st, l.reg); err != nil {
		return err
	}
	switch {
	case l.disc == nil:
	case changed:
		// Routed once probed healthy: now, not at the next round. A
		// backend that is down is registered all the same; discovery
		// finds it when it comes up. The probe hands its capacity to
		// waiters.
		if err := l.disc.Probe(ctx, b.Name); err != nil {
			l.log.LogAttrs(ctx, slog.LevelWarn, "registered backend is not healthy yet", slog.String("backend", b.Name),
				slog.String("error", err.Error()))
		}
	case l.disc.AfterRound != nil:
		l.disc.AfterRound() // an enabled backend's slots go to waiters now
	}
	return nil
}

// Remove takes the backend named name out of the registry.
func (l *liveBackends) Remove(_ context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reg.Remove(name)
	return nil
}

// Refresh probes the backend named name now.
func (l *liveBackends) Refresh(ctx context.Context, name string) error {
	if l.disc == nil {
		return errors.New("discovery is not running")
	}
	return l.disc.Probe(ctx, name)
}

// RefreshNodes takes the store's GPU nodes, and the backends' placement
// on them, into the registry now (an admin's node refresh); discovery
// polls their sidecars at its next round.
func (l *liveBackends) RefreshNodes(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return applyStore(ctx, l.st, l.reg)
}

var _ admin.NodeRefresher = (*liveBackends)(nil)

var errRenamedConfigBackend = errors.New("a backend the config file declares is routed under the name the file gives it")

// storeSyncTimeout bounds sync's reads of the store.
const storeSyncTimeout = 10 * time.Second

// sync brings the registry in line with the store: backends added,
// changed or deleted (by any replica's admin) are put or removed, then
// the state, priority and GPU placement are applied. A store that cannot
// be read leaves the registry as it is until the next round.
func (l *liveBackends) sync(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, storeSyncTimeout)
	defer cancel()
	all, err := l.st.Backends(ctx)
	if err != nil {
		l.log.LogAttrs(ctx, slog.LevelWarn, "read backends from the store", slog.String("error", err.Error()))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	want := make(map[string]bool, len(all))
	for _, b := range all {
		if _, ok := l.inCfg[b.Name]; b.FromConfig && !ok {
			continue
		}
		want[b.Name] = true
		if _, _, err := l.reg.Put(storedBackend(b, l.inCfg)); err != nil {
			l.log.LogAttrs(ctx, slog.LevelWarn, "register stored backend", slog.String("backend", b.Name),
				slog.String("error", err.Error()))
		}
	}
	for _, b := range l.reg.Backends() {
		if !want[b.Name] {
			l.reg.Remove(b.Name)
		}
	}
	if err := applyStore(ctx, l.st, l.reg); err != nil {
		l.log.LogAttrs(ctx, slog.LevelWarn, "apply the store's backend settings", slog.String("error", err.Error()))
	}
}
