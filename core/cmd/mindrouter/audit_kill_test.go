package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// The audit's loss tests run the real gateway binary as a child process,
// with the audit going to a real ClickHouse, and hurt it under load.
//
// "Accepted", the word of the audit's promise, means: the gateway has
// written the request's complete response and the recorder's group commit
// has fsynced its event to the spool. The event is queued when the
// response is written (Observe runs right after the last byte) and is
// durable a few milliseconds later; only a SIGKILL (or power loss) in
// that gap loses it. So:
//
//   - every event in the spool after the kill (ScanSpool: the durable set)
//     is in ClickHouse exactly once after the restart;
//   - every request whose complete response reached its client more than
//     acceptGrace before the kill is among them (the gap is milliseconds;
//     the grace is generous for a loaded CI machine);
//   - no request id is in ClickHouse twice.
//
// With no kill (ClickHouse down and back), every request whose response
// reached its client is accepted and must be stored exactly once.

const (
	killAdminKey = "mr2_auditkill_0123456789abcdef"
	killModel    = "llama3.1:8b"
	acceptGrace  = 2 * time.Second
)

func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.StopAll()
	if gwBuild.dir != "" {
		_ = os.RemoveAll(gwBuild.dir)
	}
	os.Exit(code)
}

// gwBuild is the gateway binary and the first-party bundle, built once per
// test binary (without the race detector: the child is the system under
// test, the race run is for this package's code).
var gwBuild struct {
	once          sync.Once
	dir, bin, yml string
	err           error
}

func buildGateway(t *testing.T) (bin, pluginsYAML string) {
	t.Helper()
	gwBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "mindrouter-auditkill-")
		if err != nil {
			gwBuild.err = err
			return
		}
		gwBuild.dir = dir
		bin, err := testutil.Binary("core/cmd/mindrouter") // as make gateway builds it
		if err != nil {
			gwBuild.err = fmt.Errorf("build the gateway: %w", err)
			return
		}
		bundle, err := testutil.PluginWasm("bundle")
		if err == nil {
			err = testutil.CopyFile(bundle, filepath.Join(dir, "bundle.wasm"))
		}
		if err != nil {
			gwBuild.err = err
			return
		}
		// The child fills cache_dir on its first start (the shared one:
		// the next run's child finds its bundle compiled); restarts reuse it.
		cache, err := testutil.CompileCache()
		if err != nil {
			gwBuild.err = err
			return
		}
		yml := filepath.Join(dir, "plugins.yaml")
		y := fmt.Sprintf("abi: 2\ncache_dir: %s\nplugins:\n  - {name: %s, kind: bundle, path: bundle.wasm, mode: trusted}\n", cache, testutil.Bundle.Name)
		if err := os.WriteFile(yml, []byte(y), 0o644); err != nil {
			gwBuild.err = err
			return
		}
		gwBuild.bin, gwBuild.yml = bin, yml
	})
	if gwBuild.err != nil {
		t.Fatal(gwBuild.err)
	}
	return gwBuild.bin, gwBuild.yml
}

// serveFake starts a fakellm on a loopback port for the test's duration.
func serveFake(t *testing.T, cfg fakellm.Config) (*fakellm.Server, string) {
	t.Helper()
	fake, err := fakellm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = fake.Serve(ln) }()
	t.Cleanup(fake.Close)
	return fake, ln.Addr().String()
}

// killEnv is one gateway configuration (a config file, its spool and
// store in a temporary directory) that the test starts, kills and
// restarts.
type killEnv struct {
	t        *testing.T
	bin      string
	config   string
	spool    string
	embedded string // the embedded sink's file, when the config names no ClickHouse
}

func newKillEnv(t *testing.T, ch *testsvc.ClickHouse) *killEnv {
	return newKillEnvWith(t, ch, fakellm.Config{Engine: "vllm", Models: []string{killModel}, Tokens: 12})
}

// newKillEnvWith is newKillEnv with the backend's configuration; ch nil
// is the embedded sink (audit.db in the environment's directory).
func newKillEnvWith(t *testing.T, ch *testsvc.ClickHouse, fake fakellm.Config) *killEnv {
	t.Helper()
	bin, pluginsYAML := buildGateway(t)
	_, fakeAddr := serveFake(t, fake)
	dir := t.TempDir()
	e := &killEnv{t: t, bin: bin, config: filepath.Join(dir, "mindrouter.yaml"), spool: filepath.Join(dir, "spool"),
		embedded: filepath.Join(dir, "audit.db")}
	sink := ""
	if ch != nil {
		sink = fmt.Sprintf("  clickhouse: {addr: [%q], database: %q}\n", ch.Addr, ch.Database)
	}
	y := fmt.Sprintf(`listen: %s
plugins: %s
log: {level: warn}
data_dir: %q
store: {driver: sqlite, dsn: data/mr.db}
backends:
  - {name: fake-vllm, engine: vllm, url: "http://%s", max_concurrent: 64}
audit:
  spool: spool
%s`, freeAddr(t), pluginsYAML, dir, fakeAddr, sink)
	if err := os.WriteFile(e.config, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// childGW is one running child process.
type childGW struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
	logs *tailLog
}

// start runs the gateway and waits until it listens.
func (e *killEnv) start() *childGW {
	t := e.t
	t.Helper()
	cmd := exec.Command(e.bin, "serve", "--config", e.config)
	cmd.Env = append(os.Environ(), "ADMIN_API_KEY="+killAdminKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &childGW{cmd: cmd, done: make(chan struct{}), logs: &tailLog{}}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			g.logs.add(sc.Text())
		}
	}()
	go func() { _ = cmd.Wait(); close(g.done) }()
	t.Cleanup(func() { g.kill() })
	// The config names a free port (freeAddr): the gateway is up when its
	// /readyz says ready (started, backends discovered; /healthz answers
	// as soon as the listener does, before the rest is in place).
	g.base = "http://" + listenAddr(t, e.config)
	deadline := time.Now().Add(120 * time.Second)
	for {
		if resp, err := http.Get(g.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-g.done:
			t.Fatalf("the gateway exited at start:\n%s", g.logs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not listen within 120 s:\n%s", g.logs)
		}
	}
	return g
}

// kill sends SIGKILL and waits for the process to be gone.
func (g *childGW) kill() {
	_ = g.cmd.Process.Kill()
	<-g.done
}

// stop asks for a graceful shutdown (SIGTERM: the recorder drains).
func (g *childGW) stop(t *testing.T) {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(60 * time.Second):
		t.Errorf("the gateway did not stop within 60 s of SIGTERM")
		g.kill()
	}
}

// tailLog keeps a gateway's last log lines for failure messages.
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

// load drives a gateway with concurrent clients (the official OpenAI SDK,
// half the requests streamed) and records the request id and completion
// time of every request whose complete response arrived.
type load struct {
	mu   sync.Mutex
	done map[string]time.Time
	base atomic.Pointer[string]
	fail atomic.Int64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startLoad(g *childGW, clients int) *load {
	l := &load{done: map[string]time.Time{}, stop: make(chan struct{})}
	l.base.Store(&g.base)
	for c := range clients {
		l.wg.Add(1)
		go l.client(c)
	}
	return l
}

func (l *load) client(n int) {
	defer l.wg.Done()
	// One connection per client, no keep-alive across a dead gateway.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		base := *l.base.Load()
		c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(killAdminKey),
			option.WithMaxRetries(0), option.WithHTTPClient(hc))
		if id, ok := l.one(c, n, i); ok {
			l.mu.Lock()
			l.done[id] = time.Now()
			l.mu.Unlock()
		} else {
			l.fail.Add(1)
			time.Sleep(20 * time.Millisecond) // the gateway is down: do not spin
		}
	}
}

// one sends one request; ok when its complete response arrived.
func (l *load) one(c openai.Client, n, i int) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var id string
	grab := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if res != nil {
			id = res.Header.Get("X-Request-ID")
		}
		return res, err
	})
	p := openai.ChatCompletionNewParams{Model: killModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("client %d request %d", n, i))}}
	if i%2 == 0 {
		resp, err := c.Chat.Completions.New(ctx, p, grab)
		return id, err == nil && id != "" && len(resp.Choices) == 1 && resp.Choices[0].FinishReason != ""
	}
	s := c.Chat.Completions.NewStreaming(ctx, p, grab)
	finished := false
	for s.Next() {
		if ch := s.Current().Choices; len(ch) > 0 && ch[0].FinishReason != "" {
			finished = true
		}
	}
	return id, s.Err() == nil && finished && id != ""
}

// completed is the number of complete responses so far.
func (l *load) completed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done)
}

func (l *load) halt() map[string]time.Time {
	close(l.stop)
	l.wg.Wait()
	return l.done
}

// waitCompleted waits until the load has n more complete responses.
func (l *load) waitCompleted(t *testing.T, n int, g *childGW) {
	t.Helper()
	want := l.completed() + n
	for deadline := time.Now().Add(90 * time.Second); l.completed() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d responses in 90 s (%d failed):\n%s", l.completed(), want, l.fail.Load(), g.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// storedCounts returns, per request id, how many rows ClickHouse holds
// that end it (finished, panic or interrupted: a request's row written at
// admission, started, is replaced by one of them), and, per request id
// and state, how many rows in all (without FINAL, merges stopped: a copy
// would show): every event must be stored once.
func storedCounts(t *testing.T, conn driver.Conn, db string) (ended map[string]uint64, rows map[string]uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := conn.Query(ctx, "SELECT request_id, state, count() FROM "+db+".requests GROUP BY request_id, state")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	ended, rows = map[string]uint64{}, map[string]uint64{}
	for res.Next() {
		var id, state string
		var n uint64
		if err := res.Scan(&id, &state, &n); err != nil {
			t.Fatal(err)
		}
		rows[id+" "+state] = n
		if state != audit.RowStarted {
			ended[id] += n
		}
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	return ended, rows
}

// prepareClickHouse creates the audit tables before the gateway does and
// stops background merges on them, so that a duplicate row cannot be
// merged away before the test counts it.
func prepareClickHouse(t *testing.T, ch *testsvc.ClickHouse) driver.Conn {
	t.Helper()
	conn := ch.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := audit.MigrateClickHouse(ctx, conn, ch.Database); err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "SYSTEM STOP MERGES "+ch.Database+".requests"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitStored waits until every id of want has its ending row stored, and
// returns the final counts.
func waitStored(t *testing.T, conn driver.Conn, db string, want map[string]bool, g *childGW) (ended, rows map[string]uint64) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ended, rows = storedCounts(t, conn, db)
		missing := 0
		for id := range want {
			if ended[id] == 0 {
				missing++
			}
		}
		if missing == 0 {
			return ended, rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d accepted requests not in ClickHouse after 90 s:\n%s", missing, len(want), g.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkOnce checks that every event is stored once: one row per request
// and state, and one ending row per request.
func checkOnce(t *testing.T, ended, rows map[string]uint64) {
	t.Helper()
	dups := 0
	for _, m := range []map[string]uint64{ended, rows} {
		for id, n := range m {
			if n != 1 {
				if dups < 5 {
					t.Errorf("request %s stored %d times", id, n)
				}
				dups++
			}
		}
	}
	if dups > 0 {
		t.Errorf("%d request ids stored more than once", dups)
	}
}

// SIGKILL the gateway under load and restart it on the same spool: every
// accepted request (see the top of this file) is in ClickHouse exactly
// once.
func TestAuditGatewaySIGKILL(t *testing.T) {
	ch := testsvc.StartClickHouse(t)
	conn := prepareClickHouse(t, ch)
	e := newKillEnv(t, ch)
	g := e.start()
	l := startLoad(g, 8)
	l.waitCompleted(t, 300, g)
	// Run long enough that some requests are well older than the grace.
	time.Sleep(acceptGrace + 500*time.Millisecond)
	l.waitCompleted(t, 100, g)
	g.kill()
	killed := time.Now()
	done := l.halt()

	// The durable set: what the killed gateway had fsynced (a request
	// with only its start there ends as interrupted after the restart).
	spooled, finished := map[string]bool{}, map[string]bool{}
	if err := audit.ScanSpool(e.spool, func(ev *audit.Event) {
		spooled[ev.RequestID] = true
		if ev.State != audit.RowStarted {
			finished[ev.RequestID] = true
		}
	}); err != nil {
		t.Fatal(err)
	}
	before, _ := storedCounts(t, conn, ch.Database)
	accepted := map[string]bool{}
	late, lateAge := 0, time.Duration(0)
	for id, at := range done {
		switch {
		case finished[id] || before[id] > 0:
			accepted[id] = true
		case killed.Sub(at) > acceptGrace:
			t.Errorf("request %s completed %v before the kill but is neither spooled nor stored", id, killed.Sub(at))
		default:
			late++
			lateAge = max(lateAge, killed.Sub(at))
		}
	}
	for id := range spooled {
		accepted[id] = true // includes a request whose client saw the kill mid-read
	}
	t.Logf("killed after %d complete responses: %d spooled, %d already in ClickHouse, %d completed in the last %v and not yet spooled (the oldest %v before the kill)",
		len(done), len(spooled), len(before), late, acceptGrace, lateAge)
	if len(spooled) == 0 {
		t.Fatal("the spool was empty: the test saw nothing of the recorder")
	}

	// Restart on the same spool, under load again, then stop gracefully.
	g = e.start()
	l = startLoad(g, 4)
	l.waitCompleted(t, 100, g)
	after := l.halt()
	for id := range after {
		accepted[id] = true // no kill this time: every complete response counts
	}
	waitStored(t, conn, ch.Database, accepted, g)
	g.stop(t)
	got, rows := storedCounts(t, conn, ch.Database)
	checkOnce(t, got, rows)
	if n := len(got); n < len(accepted) {
		t.Errorf("%d ids stored, %d accepted", n, len(accepted))
	}
}

// ClickHouse killed under load and brought back: events wait in the spool
// and every request whose response arrived is stored exactly once.
func TestAuditGatewayClickHouseOutage(t *testing.T) {
	ch := testsvc.StartPrivateClickHouse(t)
	conn := prepareClickHouse(t, ch)
	e := newKillEnv(t, ch)
	g := e.start()
	l := startLoad(g, 6)
	l.waitCompleted(t, 200, g)
	ch.Stop()
	// Served while ClickHouse is down: a while, and many requests.
	l.waitCompleted(t, 300, g)
	time.Sleep(3 * time.Second)
	down := l.completed()
	ch.Start(t)
	conn = ch.Open(t) // the old connection died with the server
	if err := conn.Exec(context.Background(), "SYSTEM STOP MERGES "+ch.Database+".requests"); err != nil {
		t.Fatal(err) // merges restart with the server
	}
	l.waitCompleted(t, 200, g)
	done := l.halt()
	if l.fail.Load() > 0 {
		t.Errorf("%d requests failed while ClickHouse was down or back: the audit must not affect serving", l.fail.Load())
	}
	want := map[string]bool{}
	for id := range done {
		want[id] = true
	}
	waitStored(t, conn, ch.Database, want, g)
	g.stop(t)
	got, rows := storedCounts(t, conn, ch.Database)
	checkOnce(t, got, rows)
	t.Logf("%d requests, %d completed by the time ClickHouse came back; %d rows", len(done), down, len(got))
}

// freeAddr is a loopback address with a port free now, for a child
// gateway's listen (kept across its restarts: the same config).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// listenAddr reads the listen address back from a child's config.
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
