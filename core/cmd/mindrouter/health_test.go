package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

func TestHealthURL(t *testing.T) {
	for _, c := range []struct {
		listen     string
		tls, ready bool
		want       string
	}{
		{":8080", false, false, "http://127.0.0.1:8080/healthz"},
		{"0.0.0.0:8080", true, false, "https://127.0.0.1:8080/healthz"},
		{"[::]:9000", false, true, "http://127.0.0.1:9000/readyz"},
		{"10.0.0.5:8080", false, false, "http://10.0.0.5:8080/healthz"},
	} {
		got, err := healthURL(c.listen, c.tls, c.ready)
		if err != nil || got != c.want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", c.listen, got, err, c.want)
		}
	}
	if _, err := healthURL("127.0.0.1:0", false, false); err == nil {
		t.Error("port 0 accepted")
	}
}

func TestHealthCmdAsksTheConfiguredListener(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	cfg := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(cfg, []byte("listen: "+srv.Listener.Addr().String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := healthCmd([]string{"--config", cfg}); err != nil {
		t.Fatalf("healthy gateway: %v", err)
	}
	status.Store(http.StatusServiceUnavailable)
	if err := healthCmd([]string{"--config", cfg}); err == nil {
		t.Fatal("a 503 counted as healthy")
	}
}
