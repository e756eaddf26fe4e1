package gateway

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// TestHotReloadUnderLoad swaps the translator between configurations and a
// broken file while clients stream and call without pause: no request may
// fail, and the broken version must be refused.
func TestHotReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	for _, p := range testutil.Plugins {
		b, err := os.ReadFile(filepath.Join(plugins.Dir, p.Name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.Name+".wasm"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.wasm"), []byte("\x00asm not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	yamlPath := filepath.Join(dir, "plugins.yaml")
	writeYAML := func(openaiPath, openaiConfig string) {
		y := fmt.Sprintf(`abi: 2
cache_dir: %s
plugins:
  - {name: openai, kind: translator, path: %s, mode: trusted, config: %s}
  - {name: vllm, kind: adapter, path: vllm.wasm, mode: trusted}
  - {name: ollama, kind: adapter, path: ollama.wasm, mode: trusted}
`, plugins.Cache, openaiPath, openaiConfig)
		if err := os.WriteFile(yamlPath, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeYAML("openai.wasm", "{generation: 0}")

	_, vurl := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{vllmModel}, Tokens: 24})
	cfg, err := config.Parse([]byte(fmt.Sprintf("plugins: %s\nbackends: [{name: v, engine: vllm, url: %q, max_concurrent: 64}]\n", yamlPath, vurl)), ".")
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
	client := openai.NewClient(option.WithBaseURL("http://"+gw.Addr.String()+"/v1/"), option.WithAPIKey(adminKey), option.WithMaxRetries(0))

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if (w+i)%2 == 0 {
					_, err = client.Chat.Completions.New(context.Background(), chatParams(vllmModel, "reload"))
				} else {
					s := client.Chat.Completions.NewStreaming(context.Background(), chatParams(vllmModel, "reload"))
					n := 0
					for s.Next() {
						n++
					}
					err = s.Err()
					if err == nil && n == 0 {
						err = fmt.Errorf("empty stream")
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	ctx := context.Background()
	reloads, refused := 0, 0
	for gen := 1; gen <= 6; gen++ {
		time.Sleep(150 * time.Millisecond)
		if gen%3 == 0 {
			writeYAML("broken.wasm", fmt.Sprintf("{generation: %d}", gen))
			if err := gw.Host.Reload(ctx); err == nil {
				t.Errorf("generation %d: a broken plugin was accepted", gen)
			} else {
				refused++
			}
			continue
		}
		writeYAML("openai.wasm", fmt.Sprintf("{generation: %d}", gen))
		if err := gw.Host.Reload(ctx); err != nil {
			t.Fatalf("generation %d: reload: %v", gen, err)
		}
		reloads++
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d requests failed during hot reload; first: %v", failed.Load(), failed.Load()+ok.Load(), firstErr.Load())
	}
	if ok.Load() < 20 || reloads != 4 || refused != 2 {
		t.Fatalf("ok=%d reloads=%d refused=%d", ok.Load(), reloads, refused)
	}
	t.Logf("%d requests, %d reloads, %d refused, 0 failed", ok.Load(), reloads, refused)
}
