//go:build !race

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/pluginhost/conformance"
)

// `mindrouter plugin new` scaffolds a module that builds outside the
// gateway's module, passes its own tests (golden vectors natively) and
// the conformance kit on its .wasm with those vectors, as an integrator's
// `make check` runs it. Built without the race detector: the kit compiles
// and runs the module in wazero.
func TestPluginNew_BuildsAndChecks(t *testing.T) {
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "acme-chat")
	if err := pluginNew([]string{"--dir", dir, "--sdk", filepath.Join(root, "sdk"), "acme-chat"}); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(gomod), "replace github.com/mindrouter/mindrouter/sdk => ") {
		t.Fatalf("go.mod %s: %v", gomod, err)
	}
	run := func(env []string, args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, b)
		}
	}
	run(nil, "vet", "./...")
	run(nil, "test", "./...")
	run([]string{"GOOS=wasip1", "GOARCH=wasm"}, "build", "-buildmode=c-shared", "-o", "acme-chat.wasm", "./wasm")
	rep, err := conformance.Check(context.Background(), filepath.Join(dir, "acme-chat.wasm"),
		conformance.Options{GoldenDir: filepath.Join(dir, "testdata", "vectors")})
	if err != nil {
		t.Fatalf("%v\n%s", err, rep.String())
	}
	if !strings.Contains(rep.String(), "PASS  golden             2 vectors") {
		t.Fatalf("golden vectors not run:\n%s", rep.String())
	}
}
