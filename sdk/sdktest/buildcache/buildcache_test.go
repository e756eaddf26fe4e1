package buildcache

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sdkRoot(t *testing.T) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "examples/simple/wasm")); err != nil {
		t.Fatalf("the SDK's example plugin: %v", err)
	}
	return root
}

// A build lands in the cache once: the second Build of the same sources
// returns the same file untouched, and other flags are another entry.
func TestBuild_Cached(t *testing.T) {
	t.Setenv(EnvCache, t.TempDir())
	root := sdkRoot(t)
	spec := Spec{Root: root, Pkg: "examples/simple/wasm", LDFlags: DefaultLDFlags}
	path, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("%s: %v %.8q", path, err, b)
	}
	before, _ := os.Stat(path)
	again, err := Build(spec)
	if err != nil || again != path {
		t.Fatalf("second build: %s %v, want %s", again, err, path)
	}
	if after, _ := os.Stat(again); !os.SameFile(before, after) {
		t.Error("the second build replaced the file")
	}
	k1, err := sourceKey(root, "./examples/simple/wasm", DefaultLDFlags, wasmEnv())
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := sourceKey(root, "./examples/simple/wasm", "", wasmEnv())
	if k1 == k2 || !strings.Contains(path, k1) {
		t.Errorf("keys %s and %s for other flags; path %s", k1, k2, path)
	}
	// Not the working directory or other environment: every test binary
	// (each in its own package's directory) shares the build.
	t.Setenv("PWD", t.TempDir())
	t.Setenv("SOMETHING_ELSE", "1")
	if k3, _ := sourceKey(root, "./examples/simple/wasm", DefaultLDFlags, wasmEnv()); k3 != k1 {
		t.Errorf("key %s in another environment, want %s", k3, k1)
	}
}

func TestPrebuilt(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvPrebuilt, "")
	if _, ok, err := Prebuilt("x"); ok || err != nil {
		t.Fatalf("unset: %v %v", ok, err)
	}
	t.Setenv(EnvPrebuilt, dir)
	if _, ok, err := Prebuilt("x"); ok || err == nil {
		t.Fatalf("missing file: %v %v, want an error", ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := Prebuilt("x"); !ok || err != nil || p != filepath.Join(dir, "x.wasm") {
		t.Fatalf("%s %v %v", p, ok, err)
	}
}

func TestCompileCacheDir(t *testing.T) {
	t.Setenv(EnvCache, t.TempDir())
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module m\n\nrequire (\n\texample.com/rt v1.2.3\n)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := CompileCacheDir(root, "example.com/rt")
	if err != nil || !strings.Contains(filepath.Base(dir), "rt-v1.2.3-") {
		t.Fatalf("%s %v", dir, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("not created: %v", err)
	}
	if _, err := CompileCacheDir(root, "example.com/other"); err == nil {
		t.Error("a runtime go.mod does not require: no error")
	}
}
