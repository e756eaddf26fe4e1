package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// TestBrokenPluginContained serves a deliberately broken translator (strict
// mode) next to the real ones: its infinite loop, trap and memory blow-up
// each cost that request a 502 naming the request, while OpenAI requests keep
// flowing the whole time.
func TestBrokenPluginContained(t *testing.T) {
	dir := t.TempDir()
	bad, err := testutil.BuildBroken() // precompiled for strict into plugins.Cache
	if err != nil {
		t.Fatal(err)
	}
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
	_, vurl := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{vllmModel}})
	cfg, err := config.Parse([]byte(fmt.Sprintf("plugins: %s\nbackends: [{name: v, engine: vllm, url: %q}]\n", yamlPath, vurl)), ".")
	if err != nil {
		t.Fatal(err)
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
	gw, err := Start(context.Background(), Options{Config: cfg, AdminKey: adminKey, Logger: runLogs.Logger(), Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	base := "http://" + gw.Addr.String()

	// Background traffic on the healthy route for the whole test.
	var good, goodFailed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			status, _, _ := rawPost(t, base+"/v1/chat/completions", adminKey, `{"model":"`+vllmModel+`","messages":[{"role":"user","content":"hi"}]}`)
			if status == 200 {
				good.Add(1)
			} else {
				goodFailed.Add(1)
			}
		}
	}()

	for _, misbehave := range []string{"loop", "trap", "oom", "panic"} {
		req, _ := http.NewRequest("POST", base+"/test/bad/chat", strings.NewReader(misbehave))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", misbehave, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := resp.Header.Get("X-Request-ID")
		if resp.StatusCode != 502 || !strings.HasPrefix(id, "chatcmpl-") || !strings.Contains(string(body), id) {
			t.Fatalf("%s: status %d id %q body %q", misbehave, resp.StatusCode, id, body)
		}
		if misbehave == "loop" && time.Since(start) > 10*time.Second {
			t.Fatalf("loop took %v to be cut off", time.Since(start))
		}
	}
	// The broken plugin itself recovers on fresh instances: a harmless
	// request gets through it (and fails later only because its model
	// is unknown).
	req, _ := http.NewRequest("POST", base+"/test/bad/chat", strings.NewReader("no-such-model"))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("after misbehaviour: status %d", resp.StatusCode)
	}
	close(stop)
	wg.Wait()
	if goodFailed.Load() > 0 || good.Load() == 0 {
		t.Fatalf("healthy route: %d ok, %d failed while the broken plugin misbehaved", good.Load(), goodFailed.Load())
	}
	t.Logf("healthy route served %d requests meanwhile", good.Load())
}
