package pluginhost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// reloadDir is a plugins.yaml directory whose files the test rewrites.
type reloadDir struct {
	t   *testing.T
	dir string
}

func newReloadDir(t *testing.T) *reloadDir {
	return &reloadDir{t: t, dir: t.TempDir()}
}

// install atomically replaces dir/name with a copy of a test plugin.
func (d *reloadDir) install(name, wasm string) {
	d.t.Helper()
	b, err := os.ReadFile(wasmFiles[wasm])
	if err != nil {
		d.t.Fatal(err)
	}
	d.write(name, b)
}

func (d *reloadDir) write(name string, b []byte) {
	d.t.Helper()
	tmp := filepath.Join(d.dir, name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.dir, name)); err != nil {
		d.t.Fatal(err)
	}
}

func (d *reloadDir) config(yaml string) string {
	d.write("plugins.yaml", []byte("abi: 2\ncache_dir: "+cacheDir+"\nplugins:\n"+yaml))
	return filepath.Join(d.dir, "plugins.yaml")
}

func (d *reloadDir) host() *Host {
	d.t.Helper()
	cfg, err := LoadConfig(filepath.Join(d.dir, "plugins.yaml"))
	if err != nil {
		d.t.Fatal(err)
	}
	h, err := New(context.Background(), cfg, d.dir, testLogger(d.t))
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			d.t.Error(err)
		}
	})
	return h
}

const goodYAML = `  - name: good
    kind: translator
    path: good.wasm
    mode: trusted
    limits: {call_timeout_ms: 1000}
    pool: {min: 1, max: 4}
`

func TestHost_Reload_UnderLoad(t *testing.T) {
	d := newReloadDir(t)
	d.install("good.wasm", "good")
	d.config(goodYAML)
	h := d.host()
	p := h.Plugin("good")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls, failures, streams atomic.Int64
	var seen sync.Map
	for range 4 { // plain calls
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out Result
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := p.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); err != nil {
					failures.Add(1)
					t.Error(err)
					return
				}
				seen.Store(string(out.Payload), true)
				calls.Add(1)
			}
		}()
	}
	for range 2 { // streams: pinned, every call on one version
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out Result
			for {
				select {
				case <-stop:
					return
				default:
				}
				v := p.Pin()
				want := ""
				for i := range 20 {
					if err := v.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); err != nil {
						failures.Add(1)
						t.Error(err)
						break
					}
					if i == 0 {
						want = string(out.Payload)
					} else if string(out.Payload) != want {
						t.Errorf("pinned stream changed version: %s then %s", want, out.Payload)
					}
					time.Sleep(100 * time.Microsecond)
				}
				v.Release()
				streams.Add(1)
			}
		}()
	}
	builds := []string{"goodB", "abi2", "good", "noexport", "goodB", "fsimport", "good", "abi2", "goodB", "good"}
	for _, b := range builds {
		time.Sleep(30 * time.Millisecond)
		d.install("good.wasm", b)
		err := h.Reload(context.Background())
		broken := !strings.HasPrefix(b, "good")
		if broken != (err != nil) {
			t.Fatalf("reload to %s: err %v", b, err)
		}
		if broken && p.LastError() == nil {
			t.Fatalf("reload to %s: LastError nil", b)
		}
		want := map[string]string{"good": "A", "goodB": "B"}
		if !broken && p.Manifest().Version != want[b] {
			t.Fatalf("after reload to %s: version %s", b, p.Manifest().Version)
		}
	}
	time.Sleep(30 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d calls, %d pinned streams, %d failures across %d reloads", calls.Load(), streams.Load(), failures.Load(), len(builds))
	if failures.Load() != 0 {
		t.Fatalf("%d failed calls", failures.Load())
	}
	for _, v := range []string{"A", "B"} {
		if _, ok := seen.Load(`{"v":"` + v + `","msg":"no such model"}`); !ok {
			t.Errorf("no call served by version %s", v)
		}
	}
	if ok, failed := p.metrics.reloadsOK.Load(), p.metrics.reloadsFailed.Load(); ok != 6 || failed != 4 {
		t.Errorf("reloads ok %d failed %d", ok, failed)
	}
	waitFor(t, "retired versions closed", func() bool { return len(h.liveVersions()) == 1 })
}

func TestHost_Reload_AddRemoveChange(t *testing.T) {
	d := newReloadDir(t)
	d.install("good.wasm", "good")
	d.install("adapter.wasm", "adapter")
	d.config(goodYAML)
	h := d.host()
	good := h.Plugin("good")
	seq := good.Pin()
	seq.Release()

	// Unchanged: no new version.
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := good.Pin()
	if v != seq {
		t.Error("unchanged plugin reloaded")
	}
	v.Release()

	// Config change: new version; adapter added.
	d.config(strings.Replace(goodYAML, "call_timeout_ms: 1000", "call_timeout_ms: 900", 1) +
		"  - {name: adapter, kind: adapter, path: adapter.wasm, mode: trusted}\n")
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := good.Pin(); v.seq != 2 || v.timeout != 900*time.Millisecond {
		t.Errorf("after config change: seq %d timeout %v", v.seq, v.timeout)
		v.Release()
	} else {
		v.Release()
	}
	if h.Plugin("adapter") == nil || len(h.Plugins()) != 2 {
		t.Fatal("adapter not added")
	}

	// Removed: gone from the host; the old handle fails with ErrClosed.
	d.config("  - {name: adapter, kind: adapter, path: adapter.wasm, mode: trusted}\n")
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.Plugin("good") != nil {
		t.Fatal("good still there")
	}
	var out Result
	if err := good.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); !errors.Is(err, ErrClosed) {
		t.Fatalf("removed plugin: err %v", err)
	}

	// A broken config is refused as a whole.
	d.config("  - {name: adapter, kind: adapter, path: adapter.wasm, bogus: 1}\n")
	if err := h.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("bad config: err %v", err)
	}
	if h.Plugin("adapter") == nil {
		t.Fatal("adapter lost after a bad config")
	}
	var metrics strings.Builder
	h.WriteMetrics(&metrics)
	if !strings.Contains(metrics.String(), `mindrouter_plugin_host_reloads_total{result="failed"} 1`) {
		t.Error("failed reload not counted")
	}
}

func TestHost_Watch(t *testing.T) {
	d := newReloadDir(t)
	d.install("good.wasm", "good")
	d.config(goodYAML)
	h := d.host()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.Watch(ctx, 20*time.Millisecond)
	p := h.Plugin("good")

	d.install("good.wasm", "goodB")
	waitFor(t, "watch picks up the new file", func() bool { return p.Manifest().Version == "B" })

	before := h.metrics.reloadsOK.Load()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal("signal self:", err)
	}
	waitFor(t, "SIGHUP reload", func() bool { return h.metrics.reloadsOK.Load() > before })
}
