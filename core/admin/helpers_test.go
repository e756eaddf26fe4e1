package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// env is a Handler over a real SQLite store behind a real fasthttp server
// on an in-memory listener, with the seeded groups and four users:
// an admin, an auditor and two students (alice, bob), one key each.
type env struct {
	t        *testing.T
	st       store.Store
	h        *Handler
	keys     *recKeys
	quotas   *recQuotas
	backends *recBackends
	logs     *testutil.LogBuffer
	client   *http.Client

	groups                                 map[string]store.Group
	admin, auditor, alice, bob             store.User
	adminKey, auditorKey, aliceKey, bobKey string
	secrets                                []string // every key issued: none may leak
	mu                                     sync.Mutex
}

type envOpts struct {
	noQuotas, noBackends bool
	queue                Queue
}

func newEnv(t *testing.T, opts ...envOpts) *env {
	t.Helper()
	var o envOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	return newEnvStore(t, openSQLite(t), o)
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), "sqlite", filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newEnvStore(t *testing.T, st store.Store, o envOpts) *env {
	t.Helper()
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.SeedGroups(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, keys: &recKeys{}, groups: map[string]store.Group{}}
	gs, err := st.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		e.groups[g.Name] = g
	}
	var log *slog.Logger
	log, e.logs = testutil.CaptureLogger(slog.LevelDebug)
	opts := Options{Store: st, Keys: e.keys, Log: log, Queue: o.queue}
	if !o.noQuotas {
		e.quotas = &recQuotas{}
		opts.Quotas = e.quotas
	}
	if !o.noBackends {
		e.backends = &recBackends{}
		opts.Backends = e.backends
	}
	e.h = New(opts)
	e.admin, e.adminKey = e.mkUser("root", "admin", "inference,admin,audit")
	e.auditor, e.auditorKey = e.mkUser("watcher", "auditor", "inference,audit")
	e.alice, e.aliceKey = e.mkUser("alice", "students", "inference")
	e.bob, e.bobKey = e.mkUser("bob", "students", "inference")
	e.serve()
	t.Cleanup(func() {
		testutil.AssertNoSecret(t, e.logs, e.secrets...)
		e.assertNoSecretInAudit()
	})
	return e
}

// mkUser creates a user and one key directly in the store.
func (e *env) mkUser(name, group, scopes string) (store.User, string) {
	e.t.Helper()
	ctx := context.Background()
	u := store.User{Username: name, Email: name + "@example.edu", GroupID: e.groups[group].ID, Active: true}
	if err := e.st.CreateUser(ctx, &u); err != nil {
		e.t.Fatal(err)
	}
	key, prefix, hash, err := accounts.NewKey()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.CreateKey(ctx, &store.APIKey{UserID: u.ID, Name: name + "-key", Prefix: prefix, Hash: hash, Scopes: scopes, Status: store.KeyActive}); err != nil {
		e.t.Fatal(err)
	}
	e.secrets = append(e.secrets, key)
	return u, key
}

// authenticate is the server's part, reduced to what the admin API needs:
// the key's credential from the store, scopes clamped by the group.
func (e *env) authenticate(ctx context.Context, key []byte) (auth.Principal, error) {
	sum := sha256.Sum256(key)
	cr, err := e.st.CredentialByHash(ctx, sum[:])
	if err != nil {
		return auth.Principal{}, auth.ErrBadKey
	}
	if cr.Key.Status != store.KeyActive || !cr.User.Active || (cr.Key.ExpiresAt != nil && !time.Now().Before(*cr.Key.ExpiresAt)) {
		return auth.Principal{}, auth.ErrBadKey
	}
	var s auth.Scope
	for _, n := range splitScopes(cr.Key.Scopes) {
		s |= scopeBits[n]
	}
	if !cr.Group.IsAdmin {
		s &^= auth.ScopeAdmin
		if !cr.Group.IsAuditor {
			s &^= auth.ScopeAudit
		}
	}
	return auth.Principal{
		KeyID: "key:" + cr.Key.Prefix[len(auth.KeyPrefix):], User: cr.User.Username, Group: cr.Group.Name, Scopes: s,
		Admin: cr.Group.IsAdmin, UserID: cr.User.ID, GroupID: cr.Group.ID, KeyNum: cr.Key.ID, Limits: EffectiveLimits(cr.User, cr.Group),
	}, nil
}

func (e *env) serve() {
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if !Handles(ctx.Path()) {
			ctx.Error(`{"detail":"Not Found"}`, fasthttp.StatusNotFound)
			return
		}
		// Not ctx: a *fasthttp.RequestCtx must not parent a context that
		// outlives the handler (database/sql's watcher reads it after
		// fasthttp reset it; admin.Serve's comment). CI's race detector
		// caught TestNodes_SidecarKeyNeverShown on it.
		actx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		p, err := e.authenticate(actx, auth.KeyFromHeaders(ctx.Request.Header.Peek("Authorization"), ctx.Request.Header.Peek("X-API-Key")))
		if err != nil {
			ctx.Error(`{"detail":"Invalid API key"}`, fasthttp.StatusUnauthorized)
			return
		}
		e.h.Serve(ctx, &p, ctx.PostBody())
	}}
	go func() { _ = srv.Serve(ln) }()
	e.t.Cleanup(func() { _ = srv.Shutdown() })
	e.client = &http.Client{
		Timeout:   20 * time.Second, // only to detect a hang
		Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return ln.Dial() }},
	}
}

// call sends a request as key and returns the status and body; body is
// a string (sent as is) or a value encoded as JSON, or nil.
func (e *env) call(key, method, path string, body any) (int, []byte) {
	e.t.Helper()
	status, out, err := e.try(key, method, path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	return status, out
}

// try is call for other goroutines: it reports failures instead of
// stopping the test.
func (e *env) try(key, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, "http://admin.test"+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	e.fence()
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	defer e.fence()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != fasthttp.StatusUnauthorized && ct != "application/json" {
		return 0, nil, fmt.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return resp.StatusCode, out, nil
}

// fence orders the test's own reads and writes of the recorders' fields
// with the handler's, which take each recorder's lock: a round trip over
// a socket is no happens-before edge to the race detector, a lock is.
func (e *env) fence() {
	if e.keys != nil {
		e.keys.mu.Lock()
		e.keys.mu.Unlock() //nolint:staticcheck // an empty critical section is the point
	}
	if e.quotas != nil {
		e.quotas.mu.Lock()
		e.quotas.mu.Unlock() //nolint:staticcheck
	}
	if e.backends != nil {
		e.backends.mu.Lock()
		e.backends.mu.Unlock() //nolint:staticcheck
	}
}

// remember notes the key in a creation response as a secret.
func (e *env) remember(body []byte) {
	var m struct {
		FullKey string `json:"full_key"`
	}
	if json.Unmarshal(body, &m) == nil && m.FullKey != "" {
		e.mu.Lock()
		e.secrets = append(e.secrets, m.FullKey)
		e.mu.Unlock()
	}
}

// ok calls and requires 200, decoding the answer into a generic value.
func (e *env) ok(key, method, path string, body any) map[string]any {
	e.t.Helper()
	status, out := e.call(key, method, path, body)
	if status != 200 {
		e.t.Fatalf("%s %s: status %d, want 200: %s", method, path, status, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		e.t.Fatalf("%s %s: %v: %s", method, path, err, out)
	}
	return m
}

// fail calls and requires status, returning the detail message.
func (e *env) fail(key, method, path string, body any, status int) string {
	e.t.Helper()
	got, out := e.call(key, method, path, body)
	if got != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, got, status, out)
	}
	var d struct{ Detail string }
	if err := json.Unmarshal(out, &d); err != nil || d.Detail == "" {
		e.t.Fatalf("%s %s: want {\"detail\": …}, got %s", method, path, out)
	}
	return d.Detail
}

// newKey issues a key through the API and remembers it as a secret.
func (e *env) newKey(actor, path string, body any) map[string]any {
	e.t.Helper()
	m := e.ok(actor, "POST", path, body)
	k, _ := m["full_key"].(string)
	if !accounts.WellFormed([]byte(k)) {
		e.t.Fatalf("POST %s: full_key %q is not a key", path, k)
	}
	e.mu.Lock()
	e.secrets = append(e.secrets, k)
	e.mu.Unlock()
	return m
}

func (e *env) events() []store.AdminEvent {
	e.t.Helper()
	evs, err := e.st.AdminEvents(context.Background(), 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// lastEvent is the newest admin audit entry.
func (e *env) lastEvent() store.AdminEvent {
	e.t.Helper()
	evs := e.events()
	if len(evs) == 0 {
		e.t.Fatal("no admin event recorded")
	}
	return evs[0]
}

func (e *env) assertNoSecretInAudit() {
	for _, ev := range e.events() {
		row, _ := json.Marshal(ev)
		for _, s := range e.secrets {
			if strings.Contains(string(row), s) || strings.Contains(string(row), s[4:]) {
				e.t.Errorf("a key appears in admin event %d: %s", ev.ID, row)
			}
		}
	}
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// Recording fakes of the components the server wires in (the accounts
// cache, the quota limiter, the backend registry).

type recKeys struct {
	mu     sync.Mutex
	hashes [][]byte
	users  []int64
	all    int
}

func (r *recKeys) Invalidate(_ context.Context, hs ...[]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hashes = append(r.hashes, hs...)
}

func (r *recKeys) InvalidateUser(_ context.Context, id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users = append(r.users, id)
}

func (r *recKeys) InvalidateAll(context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all++
}

type recQuotas struct {
	mu     sync.Mutex
	down   bool                  // answer as quota.Limiter does while Redis is down
	limits map[int64]auth.Limits // last limits asked about, per user
	resets []int64
	used   int64
}

func (r *recQuotas) Usage(_ context.Context, id int64, l auth.Limits) (quota.Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limits == nil {
		r.limits = map[int64]auth.Limits{}
	}
	r.limits[id] = l
	rep := quota.Report{UserID: id, TokenBudget: l.TokenBudget, TokensUsed: r.used, RPM: l.RPM, MaxConcurrent: l.MaxConcurrent}
	if r.down {
		return rep, fmt.Errorf("quota: usage of user %d from this replica only: %w", id, quota.ErrRedisDown)
	}
	return rep, nil
}

func (r *recQuotas) Reset(_ context.Context, id int64, _ auth.Limits) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resets = append(r.resets, id)
	r.used = 0
	if r.down {
		return fmt.Errorf("quota: reset user %d: %w", id, quota.ErrRedisDown)
	}
	return nil
}

type recBackends struct {
	mu        sync.Mutex
	applied   []store.Backend
	removed   []string
	refreshed []string
	fail      error // returned by every call when set
}

func (r *recBackends) Apply(_ context.Context, b store.Backend) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, b)
	return r.fail
}

func (r *recBackends) Remove(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, name)
	return r.fail
}

func (r *recBackends) Refresh(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refreshed = append(r.refreshed, name)
	return r.fail
}

var errBoom = errors.New("registry says no")
