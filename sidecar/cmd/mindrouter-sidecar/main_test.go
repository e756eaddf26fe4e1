package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mindrouter/mindrouter/sidecar/collect/collecttest"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

const secret = "main-test-secret-0123456789"

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestRefusesToStartWithoutSecret(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), nil, envFrom(nil), &stderr, env{})
	if code == 0 {
		t.Fatal("started without a secret")
	}
	if !strings.Contains(stderr.String(), "SIDECAR_SECRET_KEY") || !strings.Contains(stderr.String(), "refusing to start") {
		t.Errorf("message = %q", stderr.String())
	}

	empty := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"--key-file", empty}, envFrom(nil), &stderr, env{}); code == 0 ||
		!strings.Contains(stderr.String(), "empty") {
		t.Errorf("empty key file: code %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"--key-file", empty + ".missing"}, envFrom(nil), &stderr, env{}); code == 0 ||
		!strings.Contains(stderr.String(), "read key file") {
		t.Errorf("missing key file: code %d, %q", code, stderr.String())
	}
}

func TestParseConfig(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cfg, err := parseConfig([]string{"--key-file", keyFile, "--cache", "1s"},
		envFrom(map[string]string{"SIDECAR_ADDR": "127.0.0.1:9", "SIDECAR_SECRET_KEY": "other"}), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.addr != "127.0.0.1:9" || cfg.cacheTTL != time.Second || !cfg.key.Matches(secret) || cfg.key.Matches("other") {
		t.Errorf("cfg = %+v", cfg)
	}
	cfg, err = parseConfig([]string{"--addr", ":1"}, envFrom(map[string]string{"SIDECAR_ADDR": ":2", "SIDECAR_SECRET_KEY": secret}), &stderr)
	if err != nil || cfg.addr != ":1" || !cfg.key.Matches(secret) {
		t.Errorf("flag over env: %+v %v", cfg, err)
	}
	cfg, err = parseConfig(nil, envFrom(map[string]string{"SIDECAR_SECRET_KEY": secret}), &stderr)
	if err != nil || cfg.addr != wire.DefaultAddr || cfg.initRetry != 30*time.Second {
		t.Errorf("defaults: %+v %v", cfg, err)
	}
	if _, err := parseConfig([]string{"--log-level", "loud"}, envFrom(map[string]string{"SIDECAR_SECRET_KEY": secret}), &stderr); err == nil {
		t.Error("bad log level accepted")
	}
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunWithoutNVML starts the whole sidecar over an NVML whose init fails,
// as on a machine without the driver: it must keep serving and say why.
func TestRunWithoutNVML(t *testing.T) {
	lib := collecttest.NewH200(1)
	lib.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	addrc := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--log-level", "debug"},
			envFrom(map[string]string{"SIDECAR_SECRET_KEY": secret}), &logs,
			env{newLib: func(string) nvml.Interface { return lib }, onReady: func(a net.Addr) { addrc <- a }})
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case code := <-done:
		t.Fatalf("run exited with %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("sidecar did not start")
	}
	base := "http://" + addr.String()

	_, err := wire.NewClient(base, secret).Health(ctx)
	if !wire.IsUnavailable(err) || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("health with key: %v", err)
	}
	_, err = wire.NewClient(base, secret).GPUInfo(ctx)
	if !wire.IsUnavailable(err) {
		t.Errorf("gpu-info with key: %v", err)
	}
	if _, err = wire.NewClient(base, "").Health(ctx); !wire.IsUnauthorized(err) {
		t.Errorf("health without key: %v", err)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d after graceful shutdown", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no graceful shutdown")
	}
	out := logs.String()
	if strings.Contains(out, secret) {
		t.Errorf("secret in logs:\n%s", out)
	}
	for _, want := range []string{`"msg":"nvml not available; serving 503 and retrying"`, `"key":"[REDACTED]"`, `"msg":"shutting down"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
}

// TestRunMockGPUs is the demo mode compose uses: SIDECAR_MOCK_GPUS serves
// simulated H200s through the same handler as NVML would.
func TestRunMockGPUs(t *testing.T) {
	addrc := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0"},
			envFrom(map[string]string{"SIDECAR_SECRET_KEY": secret, "SIDECAR_MOCK_GPUS": "2"}), &logs,
			env{onReady: func(a net.Addr) { addrc <- a }})
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case code := <-done:
		t.Fatalf("run exited with %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("sidecar did not start")
	}
	info, err := wire.NewClient("http://"+addr.String(), secret).GPUInfo(ctx)
	if err != nil {
		t.Fatalf("gpu-info: %v", err)
	}
	if len(info.GPUs) != 2 {
		t.Fatalf("gpus = %d, want 2", len(info.GPUs))
	}
	cancel()
	<-done
	if !strings.Contains(logs.String(), "serving simulated GPUs") {
		t.Errorf("the mock mode is not logged:\n%s", logs.String())
	}
	if _, err := parseConfig([]string{"--mock-gpus", "-1"}, envFrom(map[string]string{"SIDECAR_SECRET_KEY": secret}), io.Discard); err == nil {
		t.Error("--mock-gpus -1 accepted")
	}
}
