package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink the gateway writes while the test reads.
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

// TestServe_GeneratedAdminKeyNeverLogged starts `mindrouter serve` with no
// ADMIN_API_KEY on an empty store (the first-party plugins compiled in, the
// demo backend): the generated key is in data_dir/admin-key with mode 0600
// and in no log line; every line on stderr is JSON; the start-up line names
// version, commit, config, data directory, store, audit sink, listeners and
// plugin versions.
func TestServe_GeneratedAdminKeyNeverLogged(t *testing.T) {
	registerNatives()
	t.Setenv("ADMIN_API_KEY", "")
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "state")
	if err := os.WriteFile(filepath.Join(dir, "plugins.yaml"),
		[]byte("abi: 2\nplugins:\n  - {name: firstparty, kind: bundle, path: \"native:firstparty\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "mindrouter.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("listen: 127.0.0.1:0\nplugins: plugins.yaml\ndata_dir: %q\nlog: {level: debug}\n", dataDir)), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, []string{"--config", cfgPath}, &logs) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), `"msg":"try"`) {
		select {
		case err := <-done:
			t.Fatalf("serve returned early: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no start within 20s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}

	keyFile := filepath.Join(dataDir, adminKeyFileName)
	st, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("admin key file mode %v, want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(keyFile)
	key := strings.TrimSpace(string(b))
	if !strings.HasPrefix(key, "mr") || len(key) < 20 {
		t.Fatalf("admin key file holds %q", key)
	}
	// The key, and its secret part alone, in no line.
	secret := key[strings.LastIndexByte(key, '_')+1:]
	var started map[string]any
	lines := strings.Split(strings.TrimRight(logs.String(), "\n"), "\n")
	for i, l := range lines {
		if strings.Contains(l, key) || strings.Contains(l, secret) {
			t.Errorf("line %d carries the admin key: %s", i, l)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("line %d is not JSON: %q", i, l)
			continue
		}
		if m["msg"] == "mindrouter started" {
			started = m
		}
		if strings.Contains(fmt.Sprint(m["msg"]), "generated") && m["file"] != keyFile {
			t.Errorf("the generated-key line names file %v, want %s", m["file"], keyFile)
		}
	}
	if started == nil {
		t.Fatalf("no start-up line in:\n%s", logs.String())
	}
	for _, k := range []string{"version", "commit", "config", "data_dir", "store", "audit", "listeners", "plugins"} {
		if _, ok := started[k]; !ok {
			t.Errorf("start-up line lacks %q: %v", k, started)
		}
	}
	if started["config"] != cfgPath || started["data_dir"] != dataDir {
		t.Errorf("config %v data_dir %v", started["config"], started["data_dir"])
	}
	if s, _ := started["store"].(map[string]any); s["driver"] != "sqlite" || s["path"] != filepath.Join(dataDir, "mindrouter.db") {
		t.Errorf("store %v", started["store"])
	}
	if a, _ := started["audit"].(map[string]any); a["sink"] != "embedded" {
		t.Errorf("audit %v", started["audit"])
	}
	if l, _ := started["listeners"].(map[string]any); !strings.HasPrefix(fmt.Sprint(l["api"]), "http://127.0.0.1:") {
		t.Errorf("listeners %v", started["listeners"])
	}
	if p, _ := started["plugins"].([]any); len(p) == 0 || !strings.Contains(fmt.Sprint(p), "firstparty@") {
		t.Errorf("plugins %v", started["plugins"])
	}
}

func TestVersionCmd(t *testing.T) {
	var b bytes.Buffer
	printVersion(&b)
	if !strings.HasPrefix(b.String(), "mindrouter ") || !strings.Contains(b.String(), "commit ") {
		t.Fatalf("version: %q", b.String())
	}
}
