//go:build faults

package faultmatrix

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

const (
	adminKey = "mr2_faultmatrix_0123456789abcdef"
	model    = "qwen3-8b"
	backends = 3
	slots    = 4 // max_concurrent of each backend
)

// build is the gateway binary and the first-party bundle, built once.
var build struct {
	once          sync.Once
	dir, bin, yml string
	err           error
}

func buildGateway(t *testing.T) (bin, pluginsYAML string) {
	t.Helper()
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "mindrouter-faultmatrix-")
		if err != nil {
			build.err = err
			return
		}
		build.dir = dir
		if build.bin, err = testutil.Binary("core/cmd/mindrouter"); err != nil {
			build.err = fmt.Errorf("build the gateway: %w", err)
			return
		}
		bundle, err := testutil.PluginWasm("bundle")
		if err == nil {
			err = testutil.CopyFile(bundle, filepath.Join(dir, "bundle.wasm"))
		}
		if err != nil {
			build.err = err
			return
		}
		cache, err := testutil.CompileCache()
		if err != nil {
			build.err = err
			return
		}
		build.yml = filepath.Join(dir, "plugins.yaml")
		y := fmt.Sprintf("abi: 2\ncache_dir: %s\nplugins:\n  - {name: %s, kind: bundle, path: bundle.wasm, mode: trusted}\n", cache, testutil.Bundle.Name)
		build.err = os.WriteFile(build.yml, []byte(y), 0o644)
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin, build.yml
}

// pace is every backend's normal behaviour: a short first token, a short
// answer, fast enough that the load keeps every slot busy.
var pace = fakellm.Config{Engine: "vllm", Models: []string{model}, TTFT: 30 * time.Millisecond, TPS: 400, Tokens: 16}

// backend is one fakellm on a fixed loopback address, which a fault
// replaces (a kill: nothing listens; a hang or a 500 storm: a fakellm
// that does that) and a restore brings back.
type backend struct {
	addr string
	mu   sync.Mutex
	srv  *fakellm.Server
}

func startBackend(t *testing.T) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{addr: ln.Addr().String()}
	b.serve(t, ln, pace)
	t.Cleanup(b.kill)
	return b
}

func (b *backend) serve(t *testing.T, ln net.Listener, cfg fakellm.Config) {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := fakellm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	b.mu.Lock()
	b.srv = s
	b.mu.Unlock()
}

// kill closes the server and its connections: the engine died.
func (b *backend) kill() {
	b.mu.Lock()
	s := b.srv
	b.srv = nil
	b.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// served is the number of requests the current server completed (0 when
// none is serving): a restored backend is back in service once it is
// above 0.
func (b *backend) served() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return 0
	}
	return b.srv.Stats().Completed
}

// swap kills the server and serves cfg on the same address.
func (b *backend) swap(t *testing.T, cfg fakellm.Config) {
	t.Helper()
	b.kill()
	var ln net.Listener
	testutil.WaitFor(t, "the backend's port to be free", 30*time.Second, func() bool {
		var err error
		ln, err = net.Listen("tcp", b.addr)
		return err == nil
	})
	b.serve(t, ln, cfg)
}

// replica is one gateway child process: its configuration and data
// directory (store in MariaDB, audit spool here) survive a kill, so a
// restart finds its spool.
type replica struct {
	t      *testing.T
	name   string
	bin    string
	config string
	base   string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *tailLog
}

// cluster is the system under test.
type cluster struct {
	redis    *testsvc.Redis
	maria    *testsvc.MariaDB
	ch       *testsvc.ClickHouse
	chConn   driver.Conn
	backends []*backend
	replicas []*replica
	userID   int64
	userKey  string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	bin, pluginsYAML := buildGateway(t)
	c := &cluster{redis: testsvc.StartPrivateRedis(t), maria: testsvc.StartMariaDB(t), ch: testsvc.StartPrivateClickHouse(t)}
	c.chConn = c.ch.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The audit tables before the gateways, and a copy of every row
	// inserted into requests in a plain MergeTree, whose merges drop
	// nothing: the requests table's own merges (ReplacingMergeTree) would
	// fold a duplicate away before it is counted. Merges must run: with
	// them stopped every insert (one a second per replica) stays a part,
	// and past parts_to_throw_insert (300 on 18.16) ClickHouse refuses
	// inserts ("too many parts"), which left the later rows' audit in the
	// spools.
	if err := audit.MigrateClickHouse(ctx, c.chConn, c.ch.Database); err != nil {
		t.Fatal(err)
	}
	if err := c.chConn.Exec(ctx, "CREATE MATERIALIZED VIEW "+c.ch.Database+".request_rows ENGINE = MergeTree() ORDER BY request_id AS SELECT request_id, state FROM "+c.ch.Database+".requests"); err != nil {
		t.Fatal(err)
	}
	var list strings.Builder
	for i := range backends {
		b := startBackend(t)
		c.backends = append(c.backends, b)
		fmt.Fprintf(&list, "  - {name: b%d, engine: vllm, url: \"http://%s\", max_concurrent: %d}\n", i+1, b.addr, slots)
	}
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		r := &replica{t: t, name: name, bin: bin, config: filepath.Join(dir, "mindrouter.yaml")}
		// Short breaker cool-down, attempt and request timeouts and quota
		// persist interval: the matrix measures recovery and a Redis
		// restart's documented loss in seconds, not the production
		// defaults' minutes (docs/faults.md says so; persistInterval).
		y := fmt.Sprintf(`listen: %s
plugins: %s
log: {level: warn}
data_dir: %q
store: {driver: mysql, dsn: %q}
redis: {addr: %q}
scheduler: {policy: fair, fleet: auto}
breaker: {cooldown: 2s}
retries: {attempt_timeout: 2s}
timeouts: {request: 4s, queue_wait: 20s}
quota: {persist_interval: 1s}
discovery: {interval: 2s, timeout: 1s}
audit:
  spool: spool
  clickhouse: {addr: [%q], database: %q}
backends:
%s`, freeAddr(t), pluginsYAML, dir, c.maria.DSN, c.redis.Addr, c.ch.Addr, c.ch.Database, list.String())
		if err := os.WriteFile(r.config, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		r.base = "http://" + listenAddr(t, r.config)
		r.start()
		c.replicas = append(c.replicas, r)
	}
	c.userID, c.userKey = c.newUser(t)
	return c
}

// newUser creates the load's user, with a budget far above what the run
// uses, and a key.
func (c *cluster) newUser(t *testing.T) (int64, string) {
	t.Helper()
	var u struct {
		ID int64 `json:"id"`
	}
	body := map[string]any{"username": "load", "email": "load@example.edu", "group": "staff", "token_budget_override": 1_000_000_000,
		"rpm_limit_override": 1_000_000, "max_concurrent_override": 1000}
	if st := c.api(t, "POST", "/api/admin/users", body, &u); st != 200 && st != 201 {
		t.Fatalf("create user: %d", st)
	}
	var k struct {
		FullKey string `json:"full_key"`
	}
	if st := c.api(t, "POST", fmt.Sprintf("/api/admin/users/%d/api-keys", u.ID), map[string]any{"name": "load"}, &k); st != 200 && st != 201 {
		t.Fatalf("create key: %d", st)
	}
	return u.ID, k.FullKey
}

// api calls the admin API on replica b (never killed).
func (c *cluster) api(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.replicas[len(c.replicas)-1].base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// tokensUsed is the user's period usage as the quota reports it, once it
// has settled: the same figure twice, 1.5 s apart (each replica pushes its
// settlements every quota.lease, 1 s).
func (c *cluster) tokensUsed(t *testing.T) int64 {
	t.Helper()
	read := func() (int64, bool) {
		var rep struct {
			TokensUsed int64 `json:"tokens_used"`
		}
		st := c.api(t, "GET", fmt.Sprintf("/api/admin/quotas/%d", c.userID), nil, &rep)
		return rep.TokensUsed, st == 200
	}
	var last int64 = -1
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, ok := read()
		if ok && v == last {
			return v
		}
		if ok {
			last = v
		}
		if time.Now().After(deadline) {
			t.Fatalf("the quota usage did not settle within 30 s (last %d)", last)
		}
		time.Sleep(1500 * time.Millisecond)
	}
}

// storedCounts returns, per request id, how many rows of its final event
// were inserted into ClickHouse (from request_rows, every row inserted
// into requests, which merges never fold: a finish stored twice counts
// twice). The admission record is a second, legitimate row of each
// request (state started, replaced by the finish in requests at the next
// merge): it is not counted.
func (c *cluster) storedCounts(t *testing.T) (map[string]uint64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := c.chConn.Query(ctx, "SELECT request_id, countIf(state != 'started') FROM "+c.ch.Database+".request_rows GROUP BY request_id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]uint64{}
	for rows.Next() {
		var id string
		var n uint64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// start runs the replica and waits until its /readyz says ready.
func (r *replica) start() {
	t := r.t
	t.Helper()
	cmd := exec.Command(r.bin, "serve", "--config", r.config)
	cmd.Env = append(os.Environ(), "ADMIN_API_KEY="+adminKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, logs := make(chan struct{}), &tailLog{}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			logs.add(sc.Text())
		}
	}()
	go func() { _ = cmd.Wait(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done, r.logs = cmd, done, logs
	r.mu.Unlock()
	t.Cleanup(r.kill)
	deadline := time.Now().Add(120 * time.Second)
	for {
		if resp, err := http.Get(r.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			t.Fatalf("replica %s exited at start:\n%s", r.name, logs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not ready within 120 s:\n%s", r.name, logs)
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (r *replica) kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

func (r *replica) logTail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// tailLog keeps a replica's last log lines for failure messages.
type tailLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *tailLog) add(s string) {
	l.mu.Lock()
	if len(l.lines) >= 40 {
		l.lines = l.lines[1:]
	}
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

func (l *tailLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func listenAddr(t *testing.T, config string) string {
	t.Helper()
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if a, ok := strings.CutPrefix(line, "listen: "); ok {
			return strings.TrimSpace(a)
		}
	}
	t.Fatalf("no listen address in %s", config)
	return ""
}

// activeParts is the number of active parts of the audit table: each
// insert adds one until merges fold them, and past parts_to_throw_insert
// (300 on 18.16) ClickHouse refuses inserts ("too many parts").
func (c *cluster) activeParts() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n uint64
	err := c.chConn.QueryRow(ctx, "SELECT count() FROM system.parts WHERE database = ? AND table = 'requests' AND active", c.ch.Database).Scan(&n)
	return n, err
}
