// Package testutil builds what the gateway's tests need: the repository's
// WebAssembly plugins, compiled once per test binary into a temporary
// directory with a plugins.yaml that points at them.
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Plugins are the first-party plugins, in plugins.yaml order.
var Plugins = []struct{ Name, Kind string }{
	{"openai", "translator"},
	{"responses", "translator"},
	{"anthropic", "translator"},
	{"ollamaapi", "translator"},
	{"vllm", "adapter"},
	{"ollama", "adapter"},
}

// RepoRoot finds the module root from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testutil: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// BuildWasm compiles the main package at pkg (relative to the repo root) to
// out with the standard toolchain, as the Makefile does.
func BuildWasm(pkg, out string, extraArgs ...string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	args := append([]string{"build", "-buildmode=c-shared", "-trimpath"}, extraArgs...)
	args = append(args, "-o", out, "./"+strings.TrimPrefix(pkg, "./"))
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testutil: build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// WazeroTestVersion is the wazero version a test binary reports: test
// binaries carry no dependency versions in their build info, so wazero keys
// its compilation cache as "dev".
const WazeroTestVersion = "dev"

// Precompile fills cacheDir for wasm files in a separate process built
// without the race detector (under -race wazero's compiler is about ten
// times slower) and keyed like a test binary's cache. Each file may carry its
// modes as path=trusted+strict.
func Precompile(cacheDir string, files ...string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	args := []string{"run", "-ldflags", "-X github.com/tetratelabs/wazero/internal/version.version=" + WazeroTestVersion,
		"./core/pluginhost/internal/precompile", "-dir", cacheDir}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(args, files...)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testutil: precompile: %v\n%s", err, b)
	}
	return nil
}

// PluginSet is a directory holding built plugins and their plugins.yaml.
type PluginSet struct {
	Dir  string // holds <name>.wasm and plugins.yaml
	YAML string // path of plugins.yaml
}

var (
	buildOnce sync.Once
	built     PluginSet
	buildErr  error
)

// BuildPlugins compiles the first-party plugins once per process into a
// temporary directory, fills a compilation cache next to them, and writes a
// plugins.yaml (trusted mode) that uses it. Call Cleanup from TestMain when done.
func BuildPlugins() (PluginSet, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mindrouter-plugins-")
		if err != nil {
			buildErr = err
			return
		}
		var wg sync.WaitGroup
		errs := make([]error, len(Plugins))
		sem := make(chan struct{}, 2)
		for i, p := range Plugins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				errs[i] = BuildWasm("plugins/"+p.Name+"/wasm", filepath.Join(dir, p.Name+".wasm"), "-ldflags=-s -w")
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				buildErr = err
				return
			}
		}
		var files []string
		for _, p := range Plugins {
			files = append(files, filepath.Join(dir, p.Name+".wasm")+"=trusted")
		}
		if buildErr = Precompile(filepath.Join(dir, "cache"), files...); buildErr != nil {
			return
		}
		var y strings.Builder
		y.WriteString("abi: 2\ncache_dir: cache\nplugins:\n")
		for _, p := range Plugins {
			extra := ""
			if p.Name == "responses" {
				extra = ", limits: {state_max_kb: 160}" // its stream state holds the answer so far (plugins.yaml)
			}
			fmt.Fprintf(&y, "  - {name: %s, kind: %s, path: %s.wasm, mode: trusted%s}\n", p.Name, p.Kind, p.Name, extra)
		}
		built = PluginSet{Dir: dir, YAML: filepath.Join(dir, "plugins.yaml")}
		buildErr = os.WriteFile(built.YAML, []byte(y.String()), 0o644)
	})
	return built, buildErr
}

// Cleanup removes what BuildPlugins made.
func Cleanup() {
	if built.Dir != "" {
		_ = os.RemoveAll(built.Dir)
	}
}

var (
	brokenOnce sync.Once
	brokenPath string
	brokenErr  error
)

// BuildBroken compiles the deliberately misbehaving test translator
// (plugins/testdata/broken/bad) once per process into the BuildPlugins
// directory, precompiled for strict mode into its cache (cache_dir
// "cache" next to it), and returns the .wasm path. BuildPlugins must have
// succeeded first.
func BuildBroken() (string, error) {
	brokenOnce.Do(func() {
		if built.Dir == "" {
			brokenErr = fmt.Errorf("testutil: BuildBroken before BuildPlugins")
			return
		}
		path := filepath.Join(built.Dir, "bad.wasm")
		if brokenErr = BuildWasm("plugins/testdata/broken/bad", path); brokenErr != nil {
			return
		}
		if brokenErr = Precompile(filepath.Join(built.Dir, "cache"), path+"=strict"); brokenErr != nil {
			return
		}
		brokenPath = path
	})
	return brokenPath, brokenErr
}

// Bundle is the first-party bundle (plugins/bundle: the openai translator
// and the vllm and ollama adapters in one module, manifest name
// "firstparty"), as BuildBundle builds it.
var Bundle = struct{ Name, Pkg string }{"firstparty", "plugins/bundle/wasm"}

var (
	bundleOnce sync.Once
	bundleSet  PluginSet
	bundleErr  error
)

// BuildBundle compiles the first-party bundle once per process into the
// BuildPlugins directory as bundle.wasm, precompiled for trusted and
// strict mode into its cache, and writes plugins-bundle.yaml next to
// plugins.yaml: the bundle alone (kind bundle, trusted), so a gateway on
// it serves every request through the fused ops. The returned set shares
// Dir with BuildPlugins'; its YAML is plugins-bundle.yaml. BuildPlugins
// must have succeeded first.
func BuildBundle() (PluginSet, error) {
	bundleOnce.Do(func() {
		if built.Dir == "" {
			bundleErr = fmt.Errorf("testutil: BuildBundle before BuildPlugins")
			return
		}
		path := filepath.Join(built.Dir, "bundle.wasm")
		if bundleErr = BuildWasm(Bundle.Pkg, path, "-ldflags=-s -w"); bundleErr != nil {
			return
		}
		if bundleErr = Precompile(filepath.Join(built.Dir, "cache"), path+"=trusted+strict"); bundleErr != nil {
			return
		}
		y := fmt.Sprintf("abi: 2\ncache_dir: cache\nplugins:\n  - {name: %s, kind: bundle, path: bundle.wasm, mode: trusted}\n", Bundle.Name)
		set := PluginSet{Dir: built.Dir, YAML: filepath.Join(built.Dir, "plugins-bundle.yaml")}
		if bundleErr = os.WriteFile(set.YAML, []byte(y), 0o644); bundleErr == nil {
			bundleSet = set
		}
	})
	return bundleSet, bundleErr
}
