package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/pluginhost/internal/testbuild"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var (
	cacheDir  string
	wasmFiles map[string]string
)

var testPlugins = []testbuild.Plugin{
	{Name: "good", Pkg: "good", LDFlags: "-X " + testbuild.GoodlibPkg + ".Version=A", Modes: "trusted+strict"},
	{Name: "adapter", Pkg: "adapter", Modes: "trusted+strict"},
	{Name: "bad", Pkg: "bad", Modes: "trusted+strict"},
	{Name: "badresult", Pkg: "badresult", Modes: "strict"},
	{Name: "noexport", Pkg: "noexport", Modes: "strict"},
}

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root, err := testbuild.RepoRoot()
	if err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "conformance-test-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	if cacheDir, err = testbuild.CompileCache(); err != nil {
		return fail(err)
	}
	if wasmFiles, err = testbuild.Build(root, dir, testPlugins); err != nil {
		return fail(err)
	}
	if err := testbuild.Precompile(root, cacheDir, testPlugins, wasmFiles); err != nil {
		return fail(err)
	}
	return m.Run()
}

func TestRun_Translator(t *testing.T) {
	Run(t, wasmFiles["good"], Options{Kind: sdk.KindTranslator, GoldenDir: "testdata/good", CacheDir: cacheDir})
}

func TestCheck_Adapter(t *testing.T) {
	rep, err := Check(context.Background(), wasmFiles["adapter"], Options{GoldenDir: "testdata/adapter", CacheDir: cacheDir})
	t.Log("\n" + rep.String())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"abi", "load", "golden", "split", "fuzz", "determinism", "budget", "memory"}
	if len(rep.Checks) != len(want) {
		t.Fatalf("checks %v", rep.Checks)
	}
	for i, c := range rep.Checks {
		if c.Name != want[i] || !c.OK || c.Skipped {
			t.Errorf("check %d: %+v", i, c)
		}
	}
	if !strings.Contains(rep.Checks[3].Detail, "1 streams") || rep.P99 == 0 || rep.MemoryBytes == 0 {
		t.Errorf("split %q, p99 %v, memory %d", rep.Checks[3].Detail, rep.P99, rep.MemoryBytes)
	}
}

func TestCheck_Rejects(t *testing.T) {
	tests := []struct {
		name, wasm string
		opts       Options
		failed     []string // checks that must fail
		want       string
	}{
		{"missing export", "noexport", Options{}, []string{"abi"}, `missing export "mr_call"`},
		{"raw manifest", "badresult", Options{}, []string{"abi"}, "manifest: abi not set"},
		{"wrong kind", "good", Options{Kind: sdk.KindAdapter}, []string{"abi"}, `kind "translator", want "adapter"`},
		{"trap and loop", "bad", Options{GoldenDir: "testdata/bad", CallTimeout: 200 * time.Millisecond},
			[]string{"golden", "determinism"}, "plugin trapped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.CacheDir = cacheDir
			rep, err := Check(context.Background(), wasmFiles[tt.wasm], tt.opts)
			t.Log("\n" + rep.String())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if rep.OK() {
				t.Fatal("report OK")
			}
			failed := map[string]bool{}
			for _, c := range rep.Checks {
				if !c.OK {
					failed[c.Name] = true
				}
			}
			for _, name := range tt.failed {
				if !failed[name] {
					t.Errorf("check %s did not fail", name)
				}
			}
		})
	}
}

func TestCheck_BadGoldenDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.vector.json"), []byte(`{"op":"nope","want":{}}`), 0o644)
	_, err := Check(context.Background(), wasmFiles["good"], Options{GoldenDir: dir, CacheDir: cacheDir})
	if err == nil || !strings.Contains(err.Error(), `unknown op "nope"`) {
		t.Fatalf("err %v", err)
	}
}

func FuzzOps_Good(f *testing.F) {
	FuzzOps(f, wasmFiles["good"], Options{GoldenDir: "testdata/good", CacheDir: cacheDir})
}

// A bundle whose fused request differs from its canonical path fails the
// fused check, and only it; the per-component checks are named by component.
func TestCheck_FusedMismatch(t *testing.T) {
	wasm := filepath.Join(t.TempDir(), "skew.wasm")
	if err := testutil.BuildWasm("core/pluginhost/conformance/testdata/skewbundle", wasm, ""); err != nil {
		t.Fatal(err)
	}
	// Compiled without the race detector (Check loads it strict and trusted),
	// as the other test plugins are: under -race wazero compiles ten times slower.
	if err := testutil.Precompile(cacheDir, wasm+"=trusted+strict"); err != nil {
		t.Fatal(err)
	}
	// The canonical translator's golden request: canonical JSON.
	gdir := t.TempDir()
	req := canon.ChatRequest{Model: "m", Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "hi"}}}}}
	if err := os.MkdirAll(filepath.Join(gdir, "canon-t"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeVector(t, filepath.Join(gdir, "canon-t"), "request", `{"op": "request_decode", "input": `+string(req.AppendJSON(nil))+`, "want": {}}`)
	rep, err := Check(context.Background(), wasm, Options{GoldenDir: gdir, CacheDir: cacheDir, FuzzIterations: 50, BudgetCalls: 100, Budget: time.Second})
	t.Log("\n" + rep.String())
	if err == nil || !strings.Contains(err.Error(), "conformance fused:") || !strings.Contains(err.Error(), "fused and canonical paths differ") ||
		!strings.Contains(err.Error(), `{\"path\":\"fused\"}`) {
		t.Fatalf("err %v", err)
	}
	var names []string
	for _, c := range rep.Checks {
		names = append(names, c.Name)
		if !c.OK && c.Name != "fused" {
			t.Errorf("check %s failed: %v", c.Name, c.Err)
		}
	}
	want := "abi load canon-t/golden canon-t/split canon-t/fuzz canon-t/determinism canon-t/budget canon-t/memory " +
		"skew-a/golden skew-a/split skew-a/fuzz skew-a/determinism skew-a/budget skew-a/memory fused"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("checks %s\nwant   %s", got, want)
	}
}
