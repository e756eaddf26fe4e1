package pluginhost

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Test plugins, built once per test binary from plugins/testdata/broken.
var (
	testDir   string // temp dir holding the .wasm files and the compilation cache
	cacheDir  string
	repoRoot  string
	wasmFiles = map[string]string{}
)

type testPlugin struct {
	name, pkg, ldflags string
	modes              string // precompiled for these modes
}

var testPlugins = []testPlugin{
	{"good", "good", "-X " + goodlibPkg + ".Version=A", "trusted+strict"},
	{"goodB", "good", "-X " + goodlibPkg + ".Version=B", "trusted"},
	{"adapter", "adapter", "", "trusted+strict"},
	{"bad", "bad", "", "trusted+strict"},
	{"abi2", "abi2", "", "trusted"},
	{"badresult", "badresult", "", "trusted"},
	{"noexport", "noexport", "", "trusted"},
	{"fsimport", "fsimport", "", "trusted"},
}

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var err error
	if repoRoot, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testDir, err = os.MkdirTemp("", "pluginhost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(testDir)
	cacheDir = filepath.Join(testDir, "cache")
	if err := buildTestPlugins(testDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := precompile(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// buildTestPlugins compiles the test plugins, two at a time.
func buildTestPlugins(dir string) error {
	root := repoRoot
	sem := make(chan struct{}, 2)
	var mu sync.Mutex
	var errs []string
	var wg sync.WaitGroup
	for _, tp := range testPlugins {
		out := filepath.Join(dir, tp.name+".wasm")
		wasmFiles[tp.name] = out
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := []string{"build", "-buildmode=c-shared", "-trimpath", "-o", out}
			if tp.ldflags != "" {
				args = append(args, "-ldflags", tp.ldflags)
			}
			args = append(args, "./plugins/testdata/broken/"+tp.pkg)
			cmd := exec.Command("go", args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("build %s: %v\n%s", tp.name, err, b))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// precompile fills the compilation cache in a separate process built
// without the race detector: under -race wazero's compiler is ten times
// slower, and every test would pay for it.
func precompile() error {
	// A test binary carries no dependency versions in its build info, so
	// wazero keys its cache as version "dev"; the helper must match.
	args := []string{"run", "-ldflags", "-X github.com/tetratelabs/wazero/internal/version.version=" + wazeroTestVersion,
		"./core/pluginhost/internal/precompile", "-dir", cacheDir}
	for _, tp := range testPlugins {
		args = append(args, wasmFiles[tp.name]+"="+tp.modes)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("precompile: %v\n%s", err, b)
	}
	return nil
}

const wazeroTestVersion = "dev"

const goodlibPkg = "github.com/mindrouter/mindrouter/plugins/testdata/broken/goodlib"

// plugin returns a PluginConfig for a test plugin with test-friendly limits.
func plugin(name, wasm string, kind string, mode Mode) PluginConfig {
	return PluginConfig{
		Name: name, Kind: kindOf(kind), Path: wasmFiles[wasm], Mode: mode,
		Limits: Limits{MemoryMB: 64, CallTimeoutMS: 200},
		Pool:   PoolConfig{Min: 1, Max: 4, MaxCalls: 0, WaitMS: 2000},
	}
}

// testLogger sends host logs to t.Log (when verbose) so failures show them.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func newTestHost(t testing.TB, plugins ...PluginConfig) *Host {
	t.Helper()
	cfg := &Config{ABI: 1, CacheDir: cacheDir, Plugins: plugins}
	h, err := New(context.Background(), cfg, testDir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return h
}
