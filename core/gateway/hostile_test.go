package gateway

// Regression tests for hostile clients and misbehaving backends, each
// against the real gateway (real .wasm plugins, fakellm or a small net/http
// backend). Each test names the defect it pins down.

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
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// ---- helpers ----------------------------------------------------------------

// hostile is one gateway whose log output is captured.
type hostile struct {
	gw   *Gateway
	base string // http://addr
	addr string
	logs *testutil.LogBuffer
}

type hostileOpts struct {
	backends string     // YAML list items under backends:
	extra    string     // more top-level YAML
	plugins  string     // plugins.yaml path; "" for the first-party set
	level    slog.Level // captured log level
}

func startHostile(t *testing.T, o hostileOpts) *hostile {
	t.Helper()
	if o.plugins == "" {
		o.plugins = pluginsFor(t).YAML
	}
	y := fmt.Sprintf("listen: 127.0.0.1:0\nplugins: %s\nbackends:\n%s%s", o.plugins, o.backends, o.extra)
	cfg, err := config.Parse([]byte(y), ".")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	if cfg.Store.DSN == config.Default().Store.DSN {
		cfg.Store.DSN = ":memory:" // each gateway its own throw-away store
	}
	if cfg.Audit.Spool == config.Default().Audit.Spool { // each gateway its own audit spool and sink
		d := t.TempDir()
		cfg.Audit.Spool, cfg.Audit.Embedded = filepath.Join(d, "spool"), filepath.Join(d, "audit.db")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logger, logs := testutil.CaptureLogger(o.level)
	gw, err := Start(context.Background(), Options{Config: cfg, AdminKey: adminKey, Logger: runLogs.Tee(logger), Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Close(ctx)
	})
	return &hostile{gw: gw, base: "http://" + gw.Addr.String(), addr: gw.Addr.String(), logs: logs}
}

// fakeVLLM starts a vLLM-flavoured fakellm serving vllmModel.
func fakeVLLM(t *testing.T, cfg fakellm.Config) (*fakellm.Server, string) {
	t.Helper()
	cfg.Engine, cfg.Models = "vllm", []string{vllmModel}
	return startFake(t, cfg)
}

func backendYAML(name, engine, url string, maxConcurrent int) string {
	return fmt.Sprintf("  - {name: %s, engine: %s, url: %q, max_concurrent: %d}\n", name, engine, url, maxConcurrent)
}

func chatJSON(model string, stream bool) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"stream":` + strconv.FormatBool(stream) + `}`
}

type rawResp struct {
	status int
	header http.Header
	body   []byte
}

// roundTripRaw writes req on a new connection and reads one response. The
// write runs on its own goroutine: the gateway may answer and close before
// it has read all of req.
func roundTripRaw(t *testing.T, addr string, req []byte) rawResp {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() { _, _ = conn.Write(req) }()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	return rawResp{resp.StatusCode, resp.Header, body}
}

// openAIError checks that body is OpenAI's error shape and returns its
// error object.
func openAIError(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var v struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Error == nil {
		t.Fatalf("not an OpenAI error (%v): %.300q", err, body)
	}
	if m, ok := v.Error["message"].(string); !ok || m == "" {
		t.Fatalf("OpenAI error without a message: %.300q", body)
	}
	if _, ok := v.Error["type"].(string); !ok {
		t.Fatalf("OpenAI error without a type: %.300q", body)
	}
	return v.Error
}

type httpResult struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// do sends one request without failing the test (usable off the test
// goroutine).
func do(c *http.Client, method, url, key string, body io.Reader) httpResult {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return httpResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return httpResult{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return httpResult{resp.StatusCode, resp.Header, b, err}
}

// scrape reads the gateway's metrics text.
func scrape(t *testing.T, url, key string) string {
	t.Helper()
	r := do(http.DefaultClient, "GET", url, key, nil)
	if r.err != nil || r.status != 200 {
		t.Fatalf("GET %s: %d %v %s", url, r.status, r.err, r.body)
	}
	return string(r.body)
}

// metricValue finds one series ("name" or `name{label="x"}`) in a scrape.
func metricValue(text, series string) (float64, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// waitFor polls cond until it holds or d has passed.
func waitFor(d time.Duration, cond func() bool) bool { return testutil.Poll(d, cond) }

func inFlight(g *Gateway) int64 {
	n := int64(0)
	for _, b := range g.Reg.Backends() {
		n += b.InFlight()
	}
	return n
}

// ---- 1. credentials in logs ---------------------------------------------------

// TestNoKeyInLogs: a request whose headers fail to parse must not write
// the raw request (its Authorization header included) to the log, and
// neither may any ordinary request; oversize headers get 431, an oversize
// request line 414, in OpenAI's error shape.
func TestNoKeyInLogs(t *testing.T) {
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), level: slog.LevelDebug})
	const badKey = "mr2_wrong_fedcba9876543210"
	chat := chatJSON(vllmModel, false)
	head := "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + adminKey + "\r\nX-API-Key: " + adminKey + "\r\n"
	tail := "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(chat)) + "\r\n\r\n" + chat

	var block strings.Builder
	for i := range 40 {
		fmt.Fprintf(&block, "X-Pad-%02d: %s\r\n", i, strings.Repeat("p", 500))
	}
	cases := []struct {
		name   string
		req    string
		status int
	}{
		{"one header over 8 KB", head + "X-Big: " + strings.Repeat("x", 9<<10) + "\r\n" + tail, 431},
		{"20 KB header block", head + block.String() + tail, 431},
		{"20 KB URL", "POST /v1/chat/completions?api_key=" + adminKey + "&pad=" + strings.Repeat("u", 20<<10) +
			" HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + adminKey + "\r\n" + tail, 414},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := roundTripRaw(t, h.addr, []byte(tc.req))
			if r.status != tc.status {
				t.Errorf("status %d, want %d: %.300q", r.status, tc.status, r.body)
			}
			if len(r.body) > 0 {
				openAIError(t, r.body)
			}
		})
	}
	url := h.base + "/v1/chat/completions"
	for _, c := range []struct {
		name, url, key, body string
		status               int
	}{
		{"normal request", url, adminKey, chat, 200},
		{"bad key", url, badKey, chat, 401},
		{"no key", url, "", chat, 401},
		{"unknown model", url, adminKey, chatJSON("no-such-model", false), 404},
		{"unknown route", h.base + "/v1/nope", adminKey, chat, 404},
	} {
		if r := do(http.DefaultClient, "POST", c.url, c.key, strings.NewReader(c.body)); r.err != nil || r.status != c.status {
			t.Errorf("%s: status %d (%v), want %d: %s", c.name, r.status, r.err, c.status, r.body)
		}
	}
	if r := do(http.DefaultClient, "GET", h.base+"/v1/models", adminKey, nil); r.status != 200 {
		t.Errorf("models: %d %s", r.status, r.body)
	}
	// The capture works: every request above left its line.
	if !waitFor(2*time.Second, func() bool { return strings.Count(h.logs.String(), `"msg":"request"`) >= 9 }) {
		t.Fatalf("expected 9 request log lines, log:\n%s", h.logs.String())
	}
	testutil.AssertNoSecret(t, h.logs, adminKey, badKey)
}

// ---- 2. JSON bombs ------------------------------------------------------------

// bombBody is a valid JSON chat request of size bytes whose "x" field is
// inner, padded with a long string.
func bombBody(inner string, size int) []byte {
	prefix := `{"model":"` + vllmModel + `","messages":[{"role":"user","content":"hi"}],"x":` + inner + `,"pad":"`
	b := make([]byte, 0, size)
	b = append(b, prefix...)
	for len(b) < size-2 {
		b = append(b, 'a')
	}
	return append(b, `"}`...)
}

// TestJSONBombs: a 15 MB body nested a million levels deep answers 400 and
// one with more than 1,048,576 JSON values 413, quickly, in OpenAI's shape,
// without the openai plugin trapping; four clients sending such bodies in
// a loop do not starve normal chat calls (no 503 plugin_busy).
func TestJSONBombs(t *testing.T) {
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 64), level: slog.LevelWarn})
	const size = 15 << 20
	const depth = 1 << 20
	deep := bombBody(strings.Repeat("[", depth)+strings.Repeat("]", depth), size)
	many := bombBody("["+strings.Repeat("0,", 1_100_000)+"0]", size)
	if len(deep) != size || len(many) != size {
		t.Fatal("bad bomb sizes")
	}
	url := h.base + "/v1/chat/completions"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()

	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		msg    string
	}{
		{"1M-deep nesting", deep, 400, "nests deeper than 128"},
		{"1.1M values", many, 413, "more than 1048576 JSON values"},
	} {
		t0 := time.Now()
		r := do(client, "POST", url, adminKey, bytes.NewReader(tc.body))
		took := time.Since(t0)
		if r.err != nil || r.status != tc.status {
			t.Fatalf("%s: status %d (%v), want %d: %.300s", tc.name, r.status, r.err, tc.status, r.body)
		}
		if m, _ := openAIError(t, r.body)["message"].(string); !strings.Contains(m, tc.msg) {
			t.Errorf("%s: message %q, want it to say %q", tc.name, m, tc.msg)
		}
		if took > 3*time.Second*raceFactor {
			t.Errorf("%s: answered after %v", tc.name, took)
		}
	}

	// Four hostile clients in a loop, one normal client alongside.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	hostileStatus := map[int]int{}
	var hostileErrs []error
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				body := deep
				if i%2 == 1 {
					body = many
				}
				r := do(client, "POST", url, adminKey, bytes.NewReader(body))
				mu.Lock()
				if r.err != nil {
					hostileErrs = append(hostileErrs, r.err)
				} else {
					hostileStatus[r.status]++
				}
				mu.Unlock()
			}
		}()
	}
	var good int
	var bad []string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		r := do(client, "POST", url, adminKey, strings.NewReader(chatJSON(vllmModel, false)))
		if r.err != nil || r.status != 200 {
			bad = append(bad, fmt.Sprintf("%d %v %.200s", r.status, r.err, r.body))
		} else {
			good++
		}
	}
	close(stop)
	wg.Wait()
	if len(bad) > 0 || good == 0 {
		t.Errorf("normal calls: %d ok, %d failed: %q", good, len(bad), bad)
	}
	if len(hostileErrs) > 0 || hostileStatus[400]+hostileStatus[413] == 0 || len(hostileStatus) > 2 ||
		hostileStatus[400]+hostileStatus[413] != sumValues(hostileStatus) {
		t.Errorf("hostile calls: statuses %v, errors %v", hostileStatus, hostileErrs)
	}
	t.Logf("meanwhile: %d normal calls, hostile statuses %v", good, hostileStatus)
	m := scrape(t, h.base+"/metrics", "")
	if v, _ := metricValue(m, `mindrouter_plugin_traps_total{plugin="openai"}`); v != 0 {
		t.Errorf("the openai plugin trapped %v times", v)
	}
}

func sumValues(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// ---- 3. stale backend connections --------------------------------------------

// idleProxy forwards TCP connections to target and closes both sides of
// one once no byte has crossed it for idle, as uvicorn (under vLLM) closes
// idle keep-alive connections.
type idleProxy struct {
	ln     net.Listener
	target string
	idle   time.Duration
	open   atomic.Int64
}

func startIdleProxy(t *testing.T, target string, idle time.Duration) *idleProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &idleProxy{ln: ln, target: target, idle: idle}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return p
}

func (p *idleProxy) handle(c net.Conn) {
	b, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.open.Add(1)
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = c.Close()
			_ = b.Close()
			p.open.Add(-1)
			close(done)
		})
	}
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		closeBoth()
	}
	go pipe(b, c)
	go pipe(c, b)
	tick := time.NewTicker(p.idle / 5)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if time.Since(time.Unix(0, last.Load())) > p.idle {
				closeBoth()
				return
			}
		}
	}
}

// chatBurst sends n chat requests, conc at a time, and returns the
// failures.
func chatBurst(base string, n, conc int) []string {
	var mu sync.Mutex
	var fails []string
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := do(http.DefaultClient, "POST", base+"/v1/chat/completions", adminKey, strings.NewReader(chatJSON(vllmModel, false)))
			if r.err != nil || r.status != 200 {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("%d %v %.200s", r.status, r.err, r.body))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return fails
}

// TestStaleBackendConnections: pooled backend connections that died while
// idle (the backend restarted on the same port, or it closes idle
// keep-alive connections) never fail a request with 502.
func TestStaleBackendConnections(t *testing.T) {
	t.Run("backend restarts on the same port", func(t *testing.T) {
		first, vurl := fakeVLLM(t, fakellm.Config{})
		h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 16), level: slog.LevelWarn})
		if f := chatBurst(h.base, 8, 4); len(f) > 0 {
			t.Fatalf("warm-up: %q", f)
		}
		first.Close()
		second, err := fakellm.New(fakellm.Config{Engine: "vllm", Models: []string{vllmModel}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", strings.TrimPrefix(vurl, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = second.Serve(ln) }()
		t.Cleanup(second.Close)
		if f := chatBurst(h.base, 6, 1); len(f) > 0 {
			t.Errorf("sequential after restart: %q", f)
		}
		if f := chatBurst(h.base, 8, 4); len(f) > 0 {
			t.Errorf("concurrent after restart: %q", f)
		}
	})
	t.Run("backend closes idle connections", func(t *testing.T) {
		_, vurl := fakeVLLM(t, fakellm.Config{})
		p := startIdleProxy(t, strings.TrimPrefix(vurl, "http://"), 150*time.Millisecond)
		h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", "http://"+p.ln.Addr().String(), 16), level: slog.LevelWarn})
		for round := range 3 {
			if f := chatBurst(h.base, 8, 4); len(f) > 0 {
				t.Fatalf("round %d: %q", round, f)
			}
			if !waitFor(3*time.Second, func() bool { return p.open.Load() == 0 }) {
				t.Fatalf("the proxy kept %d connections open", p.open.Load())
			}
			// Every pooled connection is now closed by the backend side.
			if f := chatBurst(h.base, 4, 1); len(f) > 0 {
				t.Fatalf("round %d, sequential on stale connections: %q", round, f)
			}
			if !waitFor(3*time.Second, func() bool { return p.open.Load() == 0 }) {
				t.Fatalf("the proxy kept %d connections open", p.open.Load())
			}
		}
	})
}

// ---- 4. abandoned requests ----------------------------------------------------

// abandon sends a chat request and drops it (closing its connection) after d.
func abandon(url string, stream bool, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return abandonCtx(ctx, url, stream)
}

// abandonCtx sends a chat request and leaves when ctx ends.
func abandonCtx(ctx context.Context, url string, stream bool) error {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(chatJSON(vllmModel, stream)))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	return err
}

// TestAbandoned_QueuedWaitFreesPlace: clients that leave while queued for
// a backend slot (max_concurrent 2, both slots busy) give their place up:
// they never reach the backend and a later request is admitted as soon as
// a slot frees.
func TestAbandoned_QueuedWaitFreesPlace(t *testing.T) {
	const ttft = 1500 * time.Millisecond
	fv, vurl := fakeVLLM(t, fakellm.Config{TTFT: ttft})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 2), level: slog.LevelWarn})
	url := h.base + "/v1/chat/completions"
	holders := make(chan httpResult, 2)
	for range 2 {
		go func() {
			holders <- do(http.DefaultClient, "POST", url, adminKey, strings.NewReader(chatJSON(vllmModel, false)))
		}()
	}
	if !waitFor(3*time.Second, func() bool { return fv.Stats().Running == 2 }) {
		t.Fatalf("the holders never reached the backend: %+v", fv.Stats())
	}
	t0 := time.Now() // the holders free their slots at about t0+ttft
	var wg sync.WaitGroup
	for _, stream := range []bool{false, true} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = abandon(url, stream, 200*time.Millisecond)
		}()
	}
	wg.Wait()
	r := do(http.DefaultClient, "POST", url, adminKey, strings.NewReader(chatJSON(vllmModel, false)))
	took := time.Since(t0)
	if r.err != nil || r.status != 200 {
		t.Fatalf("new request: %d %v %s", r.status, r.err, r.body)
	}
	for range 2 {
		if hr := <-holders; hr.status != 200 {
			t.Fatalf("holder: %d %v %s", hr.status, hr.err, hr.body)
		}
	}
	if n := fv.Stats().Requests["/v1/chat/completions"]; n != 3 {
		t.Errorf("the backend got %d chat requests, want 3 (the abandoned ones must never reach it)", n)
	}
	// Admitted when the holders finished (t0+ttft), answered ttft later;
	// behind the abandoned requests it would be one ttft more.
	if limit := 2*ttft + 700*time.Millisecond; took > limit {
		t.Errorf("new request answered %v after the holders started (limit %v): it waited for abandoned requests", took, limit)
	}
	if !waitFor(2*time.Second, func() bool { return inFlight(h.gw) == 0 }) {
		t.Errorf("backend slots still held: %d", inFlight(h.gw))
	}
}

// TestAbandoned_BackendCallCancelled: requests whose clients leave while
// the backend has not answered (non-streamed, and streamed before the
// backend sent its headers) give their backend slot back at once, so a new
// request is admitted promptly. Needs the backend call to follow the
// request's context (Backend.DoContext / DoStreamContext in pipeline.go).
func TestAbandoned_BackendCallCancelled(t *testing.T) {
	fv, vurl := fakeVLLM(t, fakellm.Config{HangRate: 1}) // the backend never answers
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 2), level: slog.LevelWarn})
	t.Cleanup(fv.Close) // runs before the gateway's Close: ends hung backend calls
	url := h.base + "/v1/chat/completions"

	phase := func(stream bool, hangsAfter int64) {
		t.Helper()
		// The clients leave once their requests reached the backend (not
		// after a fixed delay, which a slow -race run can outlast).
		ctx, leave := context.WithCancel(context.Background())
		defer leave()
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = abandonCtx(ctx, url, stream)
			}()
		}
		reached := waitFor(10*time.Second, func() bool { return fv.Stats().Hangs >= hangsAfter })
		leave()
		wg.Wait() // the clients have left
		if !reached {
			t.Fatalf("stream=%v: requests never reached the backend (%d hanging, %d slots held)", stream, fv.Stats().Hangs, inFlight(h.gw))
		}
		if !waitFor(1500*time.Millisecond, func() bool { return inFlight(h.gw) == 0 }) {
			t.Fatalf("stream=%v: %d backend slots still held 1.5 s after their clients left", stream, inFlight(h.gw))
		}
	}
	phase(false, 2)
	phase(true, 4)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(chatJSON(vllmModel, false)))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		if resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if !waitFor(1500*time.Millisecond, func() bool { return fv.Stats().Hangs >= 5 }) {
		t.Errorf("a new request was not admitted within 1.5 s (%d slots held)", inFlight(h.gw))
	}
	cancel()
	<-done
	if !waitFor(1500*time.Millisecond, func() bool { return inFlight(h.gw) == 0 }) {
		t.Errorf("%d backend slots still held after the last client left", inFlight(h.gw))
	}
}

// ---- 5. unauthenticated buffering, Expect, connection limit --------------------

// TestUnauthenticatedBodiesNotRead: keyless requests announcing 16 MB
// bodies get 401 at once without the gateway reading (or allocating) their
// bodies.
func TestUnauthenticatedBodiesNotRead(t *testing.T) {
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), level: slog.LevelWarn})
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	head := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 16777216\r\n\r\n")

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stopSampler:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	const n = 20
	statuses := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", h.addr)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			go func() {
				if _, err := conn.Write(head); err == nil {
					_, _ = conn.Write(chunk)
				}
			}()
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	close(stopSampler)
	<-samplerDone
	for i := range n {
		if errs[i] != nil || statuses[i] != 401 {
			t.Errorf("connection %d: status %d, error %v", i, statuses[i], errs[i])
		}
	}
	if took > 3*time.Second {
		t.Errorf("the 401s took %v", took)
	}
	if grew := int64(peak.Load()) - int64(base); grew > 64<<20 {
		t.Errorf("heap grew by %d MiB for %d keyless requests", grew>>20, n)
	}
	m := scrape(t, h.base+"/metrics", "")
	if v, ok := metricValue(m, "mindrouter_request_body_bytes_buffered"); !ok || v != 0 {
		t.Errorf("mindrouter_request_body_bytes_buffered = %v (present %v)", v, ok)
	}
}

// TestExpectContinue: "Expect: 100-continue" gets 100 only with a valid
// key, and then a normal answer.
func TestExpectContinue(t *testing.T) {
	t.Parallel()
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), level: slog.LevelWarn})
	body := chatJSON(vllmModel, false)
	head := func(key string) string {
		s := "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n"
		if key != "" {
			s += "Authorization: Bearer " + key + "\r\n"
		}
		return s + "\r\n"
	}
	for _, key := range []string{"", "mr2_wrong_fedcba9876543210"} {
		conn, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(head(key))); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if resp.StatusCode != 401 && resp.StatusCode != 417 {
			t.Errorf("key %q: status %d, want 401 or 417 (never 100)", key, resp.StatusCode)
		}
	}
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(head(adminKey))); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 100 {
		t.Fatalf("valid key: want 100 Continue, got %v %v", resp, err)
	}
	if _, err := conn.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"chat.completion"`)) {
		t.Fatalf("after 100: %d %s", resp.StatusCode, b)
	}
}

// TestMaxConnections: with limits.max_connections 5, a sixth concurrent
// connection gets 503 with Retry-After; a closed one makes room again.
func TestMaxConnections(t *testing.T) {
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), extra: cfgMaxConnections5, level: slog.LevelWarn})
	get := []byte("GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 5 {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(get); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("connection %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
	sixth := func() (int, http.Header, []byte) {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		// A refused connection is answered before it sends anything.
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := br.Peek(1); err != nil {
			_, _ = c.Write(get)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("sixth connection: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	status, hdr, body := sixth()
	if status != 503 || hdr.Get("Retry-After") == "" {
		t.Fatalf("sixth connection: status %d Retry-After %q %s", status, hdr.Get("Retry-After"), body)
	}
	openAIError(t, body)
	conns[0].Close()
	conns = conns[1:]
	if !waitFor(2*time.Second, func() bool { s, _, _ := sixth(); return s == 200 }) {
		t.Fatal("a closed connection did not make room for a new one")
	}
}

// ---- 6. NUL in a model name ----------------------------------------------------

// TestNULInModel: a model name with NULs (which once forged routing meta:
// model qwen3-8b, stream 1) is refused with 400 and never routed.
func TestNULInModel(t *testing.T) {
	t.Parallel()
	fv, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), level: slog.LevelWarn})
	for _, model := range []string{`qwen3-8b\u0000stream\u00001`, `qwen3-8b\u0000`, `qwen3-8b\n`} {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
		r := do(http.DefaultClient, "POST", h.base+"/v1/chat/completions", adminKey, strings.NewReader(body))
		if r.status != 400 {
			t.Errorf("model %s: status %d, want 400: %.300s", model, r.status, r.body)
			continue
		}
		e := openAIError(t, r.body)
		if m, _ := e["message"].(string); !strings.Contains(m, "control characters") || e["type"] != "invalid_request_error" {
			t.Errorf("model %s: error %v", model, e)
		}
	}
	if n := fv.Stats().Requests["/v1/chat/completions"]; n != 0 {
		t.Errorf("the backend got %d chat requests", n)
	}
}

// ---- 7. amplification ------------------------------------------------------------

// TestAmplification_LongModel: a 4 MB model name costs a small error body
// and no long log line.
func TestAmplification_LongModel(t *testing.T) {
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), level: slog.LevelDebug})
	model := strings.Repeat("m", 4<<20)
	for _, stream := range []bool{false, true} {
		r := do(http.DefaultClient, "POST", h.base+"/v1/chat/completions", adminKey, strings.NewReader(chatJSON(model, stream)))
		if r.err != nil || r.status < 400 || r.status >= 500 {
			t.Fatalf("status %d %v", r.status, r.err)
		}
		if len(r.body) >= 4<<10 {
			t.Errorf("error body of %d bytes for a 4 MB model name", len(r.body))
		}
		openAIError(t, r.body)
	}
	if !waitFor(2*time.Second, func() bool { return strings.Count(h.logs.String(), `"msg":"request"`) >= 2 }) {
		t.Fatalf("request lines missing:\n%.2000s", h.logs.String())
	}
	for _, line := range h.logs.Lines() {
		if len(line) > 8<<10 {
			t.Errorf("log line of %d bytes: %.300s...", len(line), line)
		}
	}
}

// TestAmplification_TrapLogLines: one plugin trap writes at most a couple
// of log lines at info level or above.
func TestAmplification_TrapLogLines(t *testing.T) {
	bad, err := testutil.BuildBroken()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var y strings.Builder
	fmt.Fprintf(&y, "abi: 2\ncache_dir: %s\nplugins:\n", plugins.Cache)
	for _, p := range testutil.Plugins {
		fmt.Fprintf(&y, "  - {name: %s, kind: %s, path: %s, mode: trusted}\n", p.Name, p.Kind, filepath.Join(plugins.Dir, p.Name+".wasm"))
	}
	fmt.Fprintf(&y, "  - {name: bad, kind: translator, path: %s, mode: strict, limits: {call_timeout_ms: 300, memory_mb: 64, max_payload_mb: 2}}\n", bad)
	yamlPath := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(yamlPath, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), plugins: yamlPath, level: slog.LevelInfo})
	mark := h.logs.Mark()
	req, _ := http.NewRequest("POST", h.base+"/test/bad/chat", strings.NewReader("trap"))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Fatalf("trap: status %d", resp.StatusCode)
	}
	// The trap's lines are written during the call; give asynchronous
	// ones (an instance refill) a moment.
	time.Sleep(200 * time.Millisecond)
	lines := h.logs.LinesSince(mark)
	if len(lines) > 2 {
		t.Errorf("one trap wrote %d log lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if len(l) > 8<<10 {
			t.Errorf("log line of %d bytes", len(l))
		}
	}
	t.Logf("trap log lines:\n%s", strings.Join(lines, "\n"))
}

// ---- 8. backend error text -------------------------------------------------------

// errBackend is a vLLM-speaking backend: probes go to a fakellm, chat
// completions answer per mode.
type errBackend struct {
	url  string
	mode atomic.Value // string
}

const htmlError = `<html><head><title>500 Internal Server Error</title></head><body><h1>Internal Server Error</h1>
<p>upstream connect error: internal-db-7.corp:5432 refused</p><pre>Traceback (most recent call last):
  File "/srv/app/secret.py", line 42, in handler</pre></body></html>`

func startErrBackend(t *testing.T) *errBackend {
	t.Helper()
	_, furl := fakeVLLM(t, fakellm.Config{})
	target, _ := url.Parse(furl)
	proxy := httputil.NewSingleHostReverseProxy(target)
	eb := &errBackend{}
	eb.mode.Store("html500")
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch eb.mode.Load().(string) {
		case "html500":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(500)
			_, _ = io.WriteString(w, htmlError)
		case "json400":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"error":{"message":"temperature is out of range: `+strings.Repeat("x", 2000)+
				`","type":"BadRequestError","param":"temperature","code":400}}`)
		case "429", "503":
			code, _ := strconv.Atoi(eb.mode.Load().(string))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = fmt.Fprintf(w, `{"error":{"message":"engine overloaded","type":"ServiceUnavailableError","param":null,"code":%d}}`, code)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	eb.url = "http://" + ln.Addr().String()
	return eb
}

// TestBackendErrorText: a backend's HTML error page naming internal hosts
// never reaches the client; a structured backend message passes, bounded
// to 512 bytes; errors.backend_messages: generic replaces even that.
func TestBackendErrorText(t *testing.T) {
	t.Parallel()
	eb := startErrBackend(t)
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", eb.url, 4), level: slog.LevelWarn})
	url := h.base + "/v1/chat/completions"
	for _, stream := range []bool{false, true} {
		r := do(http.DefaultClient, "POST", url, adminKey, strings.NewReader(chatJSON(vllmModel, stream)))
		if r.err != nil || r.status < 500 {
			t.Fatalf("html 500, stream %v: status %d %v", stream, r.status, r.err)
		}
		msg, _ := openAIError(t, r.body)["message"].(string)
		for _, leak := range []string{"internal-db-7", "corp:5432", "/srv/app", "secret.py", "<html", "Traceback"} {
			if strings.Contains(string(r.body), leak) {
				t.Errorf("html 500, stream %v: the client sees %q: %s", stream, leak, r.body)
			}
		}
		if len(msg) > 512 {
			t.Errorf("html 500, stream %v: message of %d bytes", stream, len(msg))
		}
	}
	eb.mode.Store("json400")
	r := do(http.DefaultClient, "POST", url, adminKey, strings.NewReader(chatJSON(vllmModel, false)))
	if r.status != 400 {
		t.Fatalf("json 400: status %d %s", r.status, r.body)
	}
	msg, _ := openAIError(t, r.body)["message"].(string)
	// 512 bytes of the backend's text, then a truncation marker
	// ("…(N more bytes)").
	if !strings.HasPrefix(msg, "temperature is out of range") || len(msg) > 512+len("…(99999 more bytes)") {
		t.Errorf("json 400: message of %d bytes: %.100q", len(msg), msg)
	}

	g := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", eb.url, 4), extra: cfgGenericBackendMessages, level: slog.LevelWarn})
	r = do(http.DefaultClient, "POST", g.base+"/v1/chat/completions", adminKey, strings.NewReader(chatJSON(vllmModel, false)))
	if r.status != 400 {
		t.Fatalf("generic: status %d %s", r.status, r.body)
	}
	if msg, _ := openAIError(t, r.body)["message"].(string); strings.Contains(msg, "temperature is out of range") {
		t.Errorf("generic: the backend's message reached the client: %.100q", msg)
	}
}

// ---- 9. protocol ------------------------------------------------------------------

// TestProtocol: 405 with Allow, 408 for a stalled body, 400 for two
// Authorization headers, /metrics behind its key.
func TestProtocol(t *testing.T) {
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), extra: cfgBodyReadAndMetricsKey, level: slog.LevelWarn})
	url := h.base + "/v1/chat/completions"
	t.Run("405 with Allow", func(t *testing.T) {
		r := do(http.DefaultClient, "GET", url, adminKey, nil)
		if r.status != 405 || !strings.Contains(r.header.Get("Allow"), "POST") {
			t.Fatalf("status %d Allow %q", r.status, r.header.Get("Allow"))
		}
		openAIError(t, r.body)
	})
	t.Run("408 for a stalled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		t0 := time.Now()
		_, _ = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + adminKey +
			"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":"))
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a stalled body after %v: %v", time.Since(t0), err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 408 || time.Since(t0) > 2*time.Second {
			t.Fatalf("status %d after %v: %s", resp.StatusCode, time.Since(t0), b)
		}
		openAIError(t, b)
	})
	t.Run("two Authorization headers", func(t *testing.T) {
		body := chatJSON(vllmModel, false)
		r := roundTripRaw(t, h.addr, []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+adminKey+
			"\r\nAuthorization: Bearer mr2_other_0123456789abcdef\r\nContent-Type: application/json\r\nContent-Length: "+
			strconv.Itoa(len(body))+"\r\n\r\n"+body))
		if r.status != 400 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		openAIError(t, r.body)
	})
	t.Run("metrics key", func(t *testing.T) {
		if r := do(http.DefaultClient, "GET", h.base+"/metrics", "", nil); r.status != 401 {
			t.Fatalf("without key: %d", r.status)
		}
		if r := do(http.DefaultClient, "GET", h.base+"/metrics", adminKey, nil); r.status != 401 {
			t.Fatalf("with the API key: %d", r.status)
		}
		if m := scrape(t, h.base+"/metrics", metricsKey); !strings.Contains(m, "mindrouter_requests_total") {
			t.Fatalf("with key: %.300s", m)
		}
	})
}

// TestMetricsListener: with metrics.listen set, /metrics is served there
// and not on the API listener.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), extra: cfgMetricsListen, level: slog.LevelWarn})
	if r := do(http.DefaultClient, "GET", h.base+"/metrics", "", nil); r.status != 404 {
		t.Errorf("/metrics on the API listener: %d", r.status)
	}
	addr := gwMetricsAddr(h.gw)
	if addr == nil {
		t.Fatal("no metrics listener")
	}
	if m := scrape(t, "http://"+addr.String()+"/metrics", ""); !strings.Contains(m, "mindrouter_backend_healthy") {
		t.Fatalf("metrics listener: %.300s", m)
	}
	if r := do(http.DefaultClient, "GET", "http://"+addr.String()+"/debug/pprof/cmdline", "", nil); r.status != 404 {
		t.Errorf("pprof without metrics.pprof: %d", r.status)
	}
}

// TestMetricsPprof: metrics.pprof serves Go's profiles on the metrics
// listener behind metrics.key, and never on the API listener.
func TestMetricsPprof(t *testing.T) {
	t.Parallel()
	_, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4),
		extra: "metrics: {listen: \"127.0.0.1:0\", key: " + metricsKey + ", pprof: true}\n", level: slog.LevelWarn})
	base := "http://" + gwMetricsAddr(h.gw).String()
	if r := do(http.DefaultClient, "GET", base+"/debug/pprof/cmdline", "", nil); r.status != 401 {
		t.Errorf("without key: %d", r.status)
	}
	r := do(http.DefaultClient, "GET", base+"/debug/pprof/goroutine?debug=1", metricsKey, nil)
	if r.status != 200 || !strings.Contains(string(r.body), "goroutine profile") {
		t.Errorf("with key: %d %.200s", r.status, r.body)
	}
	for _, p := range []string{"/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if r := do(http.DefaultClient, "GET", h.base+p, metricsKey, nil); r.status != 404 {
			t.Errorf("%s on the API listener: %d", p, r.status)
		}
	}
}

// TestDeadBackend: the models of a dead backend leave /v1/models, /readyz
// turns 503 (with Retry-After) when no backend serves anything, and a chat
// request for its model gets 503 with Retry-After.
func TestDeadBackend(t *testing.T) {
	fv, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), extra: cfgFastDiscovery, level: slog.LevelWarn})
	models := func() string {
		return string(do(http.DefaultClient, "GET", h.base+"/v1/models", adminKey, nil).body)
	}
	if m := models(); !strings.Contains(m, vllmModel) {
		t.Fatalf("models before: %s", m)
	}
	if r := do(http.DefaultClient, "GET", h.base+"/readyz", "", nil); r.status != 200 {
		t.Fatalf("readyz before: %d", r.status)
	}
	fv.Close()
	if !waitFor(3*time.Second, func() bool { return !strings.Contains(models(), vllmModel) }) {
		t.Fatalf("the dead backend's model is still listed: %s", models())
	}
	r := do(http.DefaultClient, "GET", h.base+"/readyz", "", nil)
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("readyz: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	r = do(http.DefaultClient, "POST", h.base+"/v1/chat/completions", adminKey, strings.NewReader(chatJSON(vllmModel, false)))
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("chat: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
}

// TestRetryAfterOn503And429: every 503 and 429 the gateway sends carries
// Retry-After: every slot busy past the queue wait, and a backend's own
// 429 and 503.
func TestRetryAfterOn503And429(t *testing.T) {
	t.Run("queue full", func(t *testing.T) {
		fv, vurl := fakeVLLM(t, fakellm.Config{TTFT: 800 * time.Millisecond})
		h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 1), extra: "timeouts: {queue_wait: 100ms}\n", level: slog.LevelWarn})
		url := h.base + "/v1/chat/completions"
		first := make(chan httpResult, 1)
		go func() {
			first <- do(http.DefaultClient, "POST", url, adminKey, strings.NewReader(chatJSON(vllmModel, false)))
		}()
		if !waitFor(3*time.Second, func() bool { return fv.Stats().Running == 1 }) {
			t.Fatal("the first request never reached the backend")
		}
		r := do(http.DefaultClient, "POST", url, adminKey, strings.NewReader(chatJSON(vllmModel, false)))
		if r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Errorf("busy: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		<-first
	})
	t.Run("backend 429 and 503", func(t *testing.T) {
		eb := startErrBackend(t)
		h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", eb.url, 4), level: slog.LevelWarn})
		for _, mode := range []string{"429", "503"} {
			eb.mode.Store(mode)
			for _, stream := range []bool{false, true} {
				r := do(http.DefaultClient, "POST", h.base+"/v1/chat/completions", adminKey, strings.NewReader(chatJSON(vllmModel, stream)))
				if (r.status == 503 || r.status == 429) && r.header.Get("Retry-After") == "" {
					t.Errorf("backend %s, stream %v: %d without Retry-After", mode, stream, r.status)
				}
				if r.status != 503 && r.status != 429 {
					t.Errorf("backend %s, stream %v: status %d %s", mode, stream, r.status, r.body)
				}
			}
		}
	})
}

// TestNegativeTemperatureRejected: a sampling parameter out of OpenAI's
// range is the client's mistake: 400 before any backend is used.
func TestNegativeTemperatureRejected(t *testing.T) {
	t.Parallel()
	fv, vurl := fakeVLLM(t, fakellm.Config{})
	h := startHostile(t, hostileOpts{backends: backendYAML("v", "vllm", vurl, 4), level: slog.LevelWarn})
	body := `{"model":"` + vllmModel + `","messages":[{"role":"user","content":"hi"}],"temperature":-1}`
	r := do(http.DefaultClient, "POST", h.base+"/v1/chat/completions", adminKey, strings.NewReader(body))
	if r.status != 400 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if e := openAIError(t, r.body); !strings.Contains(fmt.Sprint(e["message"]), "temperature") {
		t.Errorf("error %v", e)
	}
	if n := fv.Stats().Requests["/v1/chat/completions"]; n != 0 {
		t.Errorf("the backend got %d chat requests", n)
	}
}

// ---- configuration fragments (keys added with pipeline v2) -----------------------

const (
	metricsKey                = "metrics-scrape-secret-42"
	cfgMaxConnections5        = "limits: {max_connections: 5}\n"
	cfgGenericBackendMessages = "errors: {backend_messages: generic}\n"
	cfgBodyReadAndMetricsKey  = "timeouts: {body_read: 300ms}\nmetrics: {key: " + metricsKey + "}\n"
	cfgMetricsListen          = "metrics: {listen: \"127.0.0.1:0\"}\n"
	cfgFastDiscovery          = "discovery: {interval: 100ms, timeout: 500ms}\n"
)

func gwMetricsAddr(g *Gateway) net.Addr { return g.MetricsAddr }
