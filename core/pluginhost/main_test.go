package pluginhost

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/pluginhost/internal/testbuild"
)

// Test plugins, built once per test binary from plugins/testdata/broken.
var (
	testDir   string // temp dir holding the .wasm files
	cacheDir  string // the compilation cache shared by the test binaries (testutil.CompileCache)
	wasmFiles map[string]string
)

var testPlugins = []testbuild.Plugin{
	{Name: "good", Pkg: "good", LDFlags: "-X " + testbuild.GoodlibPkg + ".Version=A", Modes: "trusted+strict"},
	{Name: "goodB", Pkg: "good", LDFlags: "-X " + testbuild.GoodlibPkg + ".Version=B", Modes: "trusted"},
	{Name: "adapter", Pkg: "adapter", Modes: "trusted+strict"},
	{Name: "bad", Pkg: "bad", Modes: "trusted+strict"},
	{Name: "abi2", Pkg: "abi2", Modes: "trusted"},
	{Name: "badresult", Pkg: "badresult", Modes: "trusted"},
	{Name: "noexport", Pkg: "noexport", Modes: "trusted"},
	{Name: "fsimport", Pkg: "fsimport", Modes: "trusted"},
}

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root, err := testbuild.RepoRoot()
	if err != nil {
		return fail(err)
	}
	if testDir, err = os.MkdirTemp("", "pluginhost-test-"); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(testDir)
	defer testutil.Cleanup() // the first-party plugins, when a test built them
	if cacheDir, err = testbuild.CompileCache(); err != nil {
		return fail(err)
	}
	if wasmFiles, err = testbuild.Build(root, testDir, testPlugins); err != nil {
		return fail(err)
	}
	if err := testbuild.Precompile(root, cacheDir, testPlugins, wasmFiles); err != nil {
		return fail(err)
	}
	return m.Run()
}

// plugin returns a PluginConfig for a test plugin with test-friendly limits.
func plugin(name, wasm string, kind string, mode Mode) PluginConfig {
	return PluginConfig{
		Name: name, Kind: kindOf(kind), Path: wasmFiles[wasm], Mode: mode,
		Limits: Limits{MemoryMB: 64, MaxPayloadMB: 2, CallTimeoutMS: 200},
		Pool:   PoolConfig{Min: 1, Max: 4, MaxCalls: 0, WaitMS: 2000},
	}
}

// testLogger sends host logs to t.Log so failures show them.
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
	cfg := &Config{ABI: 2, CacheDir: cacheDir, Plugins: plugins}
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
