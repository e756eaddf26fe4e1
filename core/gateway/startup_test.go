package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
)

// A request that reaches a starting gateway before its first discovery
// round has finished is answered once the round is done, not with 404
// model_not_found for a model the backends serve (the fault matrix's
// restarted replica answered its clients' first requests so; a load
// balancer that falls over on refused connections sent them there). The
// API listener serves only after the first round.
func TestStart_NoRequestBeforeTheFirstDiscoveryRound(t *testing.T) {
	t.Parallel()
	_, fake := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{vllmModel}})
	target, err := url.Parse(fake)
	if err != nil {
		t.Fatal(err)
	}
	// The backend's discovery probes (GETs) are slow: the first round
	// takes at least that long; inference passes straight through.
	const slow = 1500 * time.Millisecond
	proxy := httputil.NewSingleHostReverseProxy(target)
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	psrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			time.Sleep(slow)
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = psrv.Serve(pln) }()
	t.Cleanup(func() { _ = psrv.Close() })

	d := t.TempDir()
	y := fmt.Sprintf(`listen: 127.0.0.1:0
plugins: %s
store: {dsn: ":memory:"}
audit: {spool: %q, embedded: %q}
discovery: {timeout: 5s}
backends:
  - {name: slow-vllm, engine: vllm, url: "http://%s", max_concurrent: 4}
`, pluginsFor(t).YAML, filepath.Join(d, "spool"), filepath.Join(d, "audit.db"), pln.Addr())
	cfg, err := config.Parse([]byte(y), ".")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		// Sent at once: the connection waits in the listener's backlog
		// until the gateway serves.
		body := fmt.Sprintf(`{"model": %q, "messages": [{"role": "user", "content": "hi"}]}`, vllmModel)
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{status: resp.StatusCode, body: string(b)}
	}()
	gw, err := Start(context.Background(), Options{Config: cfg, AdminKey: adminKey, Logger: runLogs.Logger(), Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Close(ctx)
	})
	a := <-got
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("a request sent while the gateway started: %d %s %v; want 200", a.status, a.body, a.err)
	}
}
