package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sidecar/server"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

const testKey = "correct-horse-battery-staple"

// fakeSource counts calls and can block GPUInfo until released.
type fakeSource struct {
	calls   atomic.Int32
	started chan struct{} // receives once per GPUInfo call, if non-nil
	release chan struct{} // GPUInfo waits for it, if non-nil
	err     error
}

func (f *fakeSource) Health(context.Context) (*wire.Health, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &wire.Health{Status: wire.StatusOK, GPUCount: 1, SidecarVersion: "test"}, nil
}

func (f *fakeSource) GPUInfo(context.Context) (*wire.GPUInfo, error) {
	n := f.calls.Add(1)
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.release != nil {
		<-f.release
	}
	if f.err != nil {
		return nil, f.err
	}
	util := int(n)
	return &wire.GPUInfo{GPUCount: 1, GPUs: []wire.GPU{{Index: 0, UUID: "GPU-1", UtilizationGPU: &util, Processes: []wire.Process{}}}}, nil
}

func mustSecret(t *testing.T, k string) server.Secret {
	t.Helper()
	s, err := server.NewSecret(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	if !cfg.Key.IsSet() {
		cfg.Key = mustSecret(t, testKey)
	}
	if cfg.Version == "" {
		cfg.Version = "test"
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, h http.Handler, method, path, key string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if key != "" {
		req.Header.Set(wire.HeaderKey, key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) wire.ErrorResponse {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var e wire.ErrorResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("decode %q: %v", rec.Body, err)
	}
	if e.Status != wire.StatusError || e.Reason == "" {
		t.Errorf("error body = %+v", e)
	}
	return e
}

func TestAuthRequiredOnEveryRoute(t *testing.T) {
	src := &fakeSource{}
	h := newServer(t, server.Config{Source: src})
	for _, path := range []string{"/health", "/gpu-info", "/metrics", "/nope", "/"} {
		for _, key := range []string{"", "wrong", testKey + "x", strings.ToUpper(testKey)} {
			rec := do(t, h, http.MethodGet, path, key)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("GET %s key %q: %d, want 401", path, key, rec.Code)
				continue
			}
			if e := decodeError(t, rec); !strings.Contains(e.Reason, wire.HeaderKey) {
				t.Errorf("reason = %q", e.Reason)
			}
		}
	}
	if n := src.calls.Load(); n != 0 {
		t.Errorf("source polled %d times by unauthenticated requests", n)
	}
	for path, want := range map[string]int{"/health": 200, "/gpu-info": 200, "/metrics": 200, "/nope": 404} {
		if rec := do(t, h, http.MethodGet, path, testKey); rec.Code != want {
			t.Errorf("GET %s with key: %d, want %d", path, rec.Code, want)
		}
	}
	// The key file usually ends in a newline; the header value never does.
	h2 := newServer(t, server.Config{Source: src, Key: mustSecret(t, testKey+"\n")})
	if rec := do(t, h2, http.MethodGet, "/health", testKey); rec.Code != 200 {
		t.Errorf("key with trailing newline: %d", rec.Code)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	h := newServer(t, server.Config{Source: &fakeSource{}})
	rec := do(t, h, http.MethodPost, "/gpu-info", testKey)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") == "" {
		t.Errorf("POST: %d allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	decodeError(t, rec)
	if rec := do(t, h, http.MethodHead, "/health", testKey); rec.Code != 200 {
		t.Errorf("HEAD: %d", rec.Code)
	}
}

func TestHealthShapes(t *testing.T) {
	h := newServer(t, server.Config{Source: &fakeSource{}})
	rec := do(t, h, http.MethodGet, "/health", testKey)
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s %v", rec.Code, rec.Body, err)
	}
	if m["status"] != "ok" || m["gpu_count"] != 1.0 || m["sidecar_version"] != "test" || len(m) != 3 {
		t.Errorf("health = %v", m)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q", cc)
	}

	down := newServer(t, server.Config{Source: &fakeSource{err: errors.New("nvml not initialized: init nvml: ERROR_LIBRARY_NOT_FOUND")}})
	rec = do(t, down, http.MethodGet, "/health", testKey)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("code = %d", rec.Code)
	}
	if e := decodeError(t, rec); !strings.Contains(e.Reason, "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("reason = %q", e.Reason)
	}
	rec = do(t, down, http.MethodGet, "/gpu-info", testKey)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(decodeError(t, rec).Reason, "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("gpu-info: %d %s", rec.Code, rec.Body)
	}
}

func TestCacheSharesOneReadingAcrossConcurrentRequests(t *testing.T) {
	src := &fakeSource{started: make(chan struct{}, 100), release: make(chan struct{})}
	h := newServer(t, server.Config{Source: src, CacheTTL: time.Hour})
	const n = 50
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() { codes[i] = do(t, h, http.MethodGet, "/gpu-info", testKey).Code })
	}
	<-src.started
	time.Sleep(20 * time.Millisecond) // let the others queue up behind the first poll
	close(src.release)
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: %d", i, c)
		}
	}
	if c := src.calls.Load(); c != 1 {
		t.Errorf("%d polls for %d concurrent requests, want 1", c, n)
	}
}

func TestCacheExpires(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	src := &fakeSource{}
	h := newServer(t, server.Config{Source: src, CacheTTL: 250 * time.Millisecond, Now: clock})
	util := func() int {
		var info wire.GPUInfo
		rec := do(t, h, http.MethodGet, "/gpu-info", testKey)
		if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil {
			t.Fatal(err)
		}
		return *info.GPUs[0].UtilizationGPU
	}
	if u := util(); u != 1 {
		t.Fatalf("first reading %d", u)
	}
	advance(100 * time.Millisecond)
	if u := util(); u != 1 {
		t.Errorf("within TTL got reading %d, want cached 1", u)
	}
	// /metrics shares the same reading.
	if body := do(t, h, http.MethodGet, "/metrics", testKey).Body.String(); !strings.Contains(body, `mindrouter_gpu_utilization_percent{gpu="0",uuid="GPU-1",name=""} 1`) {
		t.Errorf("metrics did not use cached reading:\n%s", body)
	}
	advance(200 * time.Millisecond)
	if u := util(); u != 2 {
		t.Errorf("after TTL got reading %d, want fresh 2", u)
	}
	if c := src.calls.Load(); c != 2 {
		t.Errorf("polls = %d, want 2", c)
	}
}

func TestCacheDisabled(t *testing.T) {
	src := &fakeSource{}
	h := newServer(t, server.Config{Source: src, CacheTTL: -1})
	for range 3 {
		do(t, h, http.MethodGet, "/gpu-info", testKey)
	}
	if c := src.calls.Load(); c != 3 {
		t.Errorf("polls = %d, want 3 with caching off", c)
	}
}

func TestClientGoneDoesNotFailOthers(t *testing.T) {
	src := &fakeSource{started: make(chan struct{}, 10), release: make(chan struct{})}
	h := newServer(t, server.Config{Source: src, CacheTTL: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := httptest.NewRequest(http.MethodGet, "/gpu-info", nil).WithContext(ctx)
		req.Header.Set(wire.HeaderKey, testKey)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}()
	<-src.started
	cancel()
	<-done
	close(src.release)
	if rec := do(t, h, http.MethodGet, "/gpu-info", testKey); rec.Code != 200 {
		t.Errorf("after a cancelled request: %d %s", rec.Code, rec.Body)
	}
	if c := src.calls.Load(); c != 1 {
		t.Errorf("polls = %d, want 1", c)
	}
}

type panicSource struct{ fakeSource }

func (*panicSource) GPUInfo(context.Context) (*wire.GPUInfo, error) { panic("boom") }

func TestPanicInSourceIsAnError(t *testing.T) {
	h := newServer(t, server.Config{Source: &panicSource{}})
	rec := do(t, h, http.MethodGet, "/gpu-info", testKey)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(decodeError(t, rec).Reason, "panic") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	s := mustSecret(t, testKey)
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("config", "key", s, "nested", struct{ K server.Secret }{s})
	h := newServer(t, server.Config{Source: &fakeSource{}, Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	do(t, h, http.MethodGet, "/health", testKey)
	do(t, h, http.MethodGet, "/health", "wrong-"+testKey)
	js, _ := json.Marshal(map[string]any{"k": s})
	for _, out := range []string{buf.String(), s.String(), string(js), formatAll(s)} {
		if strings.Contains(out, testKey) {
			t.Errorf("secret leaked: %s", out)
		}
	}
	if !strings.Contains(buf.String(), "[REDACTED]") {
		t.Errorf("log lacks redaction marker: %s", buf.String())
	}
	if !s.Matches(testKey) || s.Matches("") || s.Matches(testKey[:5]) {
		t.Error("Matches is wrong")
	}
	if _, err := server.NewSecret("  \n"); !errors.Is(err, server.ErrEmptySecret) {
		t.Errorf("blank secret: %v", err)
	}
	if _, err := server.New(server.Config{Source: &fakeSource{}}); err == nil {
		t.Error("server.New accepted a config without a key")
	}
}

func formatAll(s server.Secret) string {
	var b strings.Builder
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		b.WriteString(fmt.Sprintf(verb, s))
	}
	return b.String()
}
