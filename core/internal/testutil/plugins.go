// Package testutil builds what the gateway's tests need: the repository's
// WebAssembly plugins — prebuilt by make ($MINDROUTER_TEST_WASM) or built
// once per source state into a per-user cache (package buildcache) —
// copied once per test binary into a temporary directory with a
// plugins.yaml that points at them and at a compilation cache shared by
// every test binary; and the log capture the tests read.
package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/mindrouter/mindrouter/sdk/sdktest/buildcache"
)

// Plugins are the first-party plugins, in plugins.yaml order.
var Plugins = []struct{ Name, Kind string }{
	{"openai", "translator"},
	{"responses", "translator"},
	{"anthropic", "translator"},
	{"ollamaapi", "translator"},
	{"vllm", "adapter"},
	{"ollama", "adapter"},
	{"gemini", "translator"}, // its own module (plugins/gemini/go.mod)
}

// RepoRoot finds the module root from the working directory.
func RepoRoot() (string, error) { return buildcache.RepoRoot() }

// PluginWasm returns the .wasm of the first-party plugin name (a
// directory of plugins/ with a wasm/ main package: a name of Plugins, or
// "bundle"), built as the Makefile builds it: the file in
// $MINDROUTER_TEST_WASM when that is set (make test sets it to the
// plugins/ that `make plugins` just wrote), else a build shared through
// the per-user cache (package buildcache), made when the sources changed.
// The file is shared: read or copy it, never write to it.
func PluginWasm(name string) (string, error) {
	if path, ok, err := buildcache.Prebuilt(name); ok || err != nil {
		return path, err
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	if mod := filepath.Join(root, "plugins", name); fileExists(filepath.Join(mod, "go.mod")) {
		// A plugin in a module of its own builds from its directory.
		path, err := buildcache.Build(buildcache.Spec{Root: mod, Pkg: "wasm", LDFlags: buildcache.DefaultLDFlags})
		if err != nil {
			return "", fmt.Errorf("testutil: %w", err)
		}
		return path, nil
	}
	return Wasm("plugins/"+name+"/wasm", buildcache.DefaultLDFlags)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Wasm returns the cached build (package buildcache) of the wasip1 main
// package at pkg, relative to the repo root, linked with ldflags ("" for
// none). The file is shared: read or copy it, never write to it.
func Wasm(pkg, ldflags string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	path, err := buildcache.Build(buildcache.Spec{Root: root, Pkg: pkg, LDFlags: ldflags})
	if err != nil {
		return "", fmt.Errorf("testutil: %w", err)
	}
	return path, nil
}

// Binary returns the cached build (package buildcache) of the main
// package at pkg, relative to the repo root, for the host, with
// CGO_ENABLED=0 as the Makefile builds the gateway. The file is shared:
// run it, never write to it.
func Binary(pkg string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	path, err := buildcache.Build(buildcache.Spec{Root: root, Pkg: pkg, Host: true})
	if err != nil {
		return "", fmt.Errorf("testutil: %w", err)
	}
	return path, nil
}

// BuildWasm writes the main package at pkg (relative to the repo root),
// built as Wasm builds it, to out: a copy of the shared build, the
// test's to change.
func BuildWasm(pkg, out, ldflags string) error {
	path, err := Wasm(pkg, ldflags)
	if err != nil {
		return err
	}
	return CopyFile(path, out)
}

// CopyFile copies the file src to dst (created or truncated).
func CopyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("testutil: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("testutil: %w", err)
	}
	return nil
}

// WazeroTestVersion is the wazero version a test binary reports: test
// binaries carry no dependency versions in their build info, so wazero keys
// its compilation cache as "dev".
const WazeroTestVersion = "dev"

// CompileCache is the compilation cache directory the tests share across
// test binaries and runs (buildcache.CompileCacheDir): wazero keys its
// entries by the module's bytes and the runtime configuration but, in a
// test binary, the version "dev" (WazeroTestVersion), so the directory is
// named after the wazero version go.mod requires.
func CompileCache() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return buildcache.CompileCacheDir(root, "github.com/tetratelabs/wazero")
}

// Precompile fills cacheDir for wasm files in a separate process built
// without the race detector (under -race wazero's compiler is about ten
// times slower) and keyed like a test binary's cache. Each file may carry its
// modes as path=trusted+strict. Files already compiled there cost a read.
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
	Dir   string // holds <name>.wasm (copies, the tests' to change) and plugins.yaml
	YAML  string // path of plugins.yaml
	Cache string // the compilation cache plugins.yaml names (CompileCache), precompiled for them
}

var (
	buildOnce sync.Once
	built     PluginSet
	buildErr  error
)

// BuildPlugins puts the first-party plugins (PluginWasm) once per process
// into a temporary directory, precompiles them into the shared
// compilation cache (CompileCache), and writes a plugins.yaml (trusted
// mode) that uses both. Call Cleanup from TestMain when done.
func BuildPlugins() (PluginSet, error) {
	buildOnce.Do(func() {
		cache, err := CompileCache()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "mindrouter-plugins-")
		if err != nil {
			buildErr = err
			return
		}
		built.Dir = dir // for Cleanup, whatever happens next
		var wg sync.WaitGroup
		errs := make([]error, len(Plugins))
		sem := make(chan struct{}, 2)
		for i, p := range Plugins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				path, err := PluginWasm(p.Name)
				if err == nil {
					err = CopyFile(path, filepath.Join(dir, p.Name+".wasm"))
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		if buildErr = errors.Join(errs...); buildErr != nil {
			return
		}
		var files []string
		for _, p := range Plugins {
			files = append(files, filepath.Join(dir, p.Name+".wasm")+"=trusted")
		}
		if buildErr = Precompile(cache, files...); buildErr != nil {
			return
		}
		var y strings.Builder
		fmt.Fprintf(&y, "abi: 2\ncache_dir: %s\nplugins:\n", cache)
		for _, p := range Plugins {
			extra := ""
			if p.Name == "responses" {
				extra = ", limits: {state_max_kb: 320}" // its stream state holds the answer so far (plugins.yaml)
			}
			fmt.Fprintf(&y, "  - {name: %s, kind: %s, path: %s.wasm, mode: trusted%s}\n", p.Name, p.Kind, p.Name, extra)
		}
		built = PluginSet{Dir: dir, YAML: filepath.Join(dir, "plugins.yaml"), Cache: cache}
		buildErr = os.WriteFile(built.YAML, []byte(y.String()), 0o644)
	})
	return built, buildErr
}

// Cleanup removes what BuildPlugins made (the shared caches stay).
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

// BuildBroken puts the deliberately misbehaving test translator
// (plugins/testdata/broken/bad) once per process into the BuildPlugins
// directory, precompiled for strict mode into its cache, and returns the
// .wasm path. BuildPlugins must have succeeded first.
func BuildBroken() (string, error) {
	brokenOnce.Do(func() {
		if built.Dir == "" || built.Cache == "" {
			brokenErr = fmt.Errorf("testutil: BuildBroken before BuildPlugins")
			return
		}
		path := filepath.Join(built.Dir, "bad.wasm")
		if brokenErr = BuildWasm("plugins/testdata/broken/bad", path, ""); brokenErr != nil {
			return
		}
		if brokenErr = Precompile(built.Cache, path+"=strict"); brokenErr != nil {
			return
		}
		brokenPath = path
	})
	return brokenPath, brokenErr
}

// Bundle is the first-party bundle (plugins/bundle: the openai translator
// and the vllm and ollama adapters in one module, manifest name
// "firstparty"), as BuildBundle builds it; PluginWasm("bundle") is its
// .wasm.
var Bundle = struct{ Name, Pkg string }{"firstparty", "plugins/bundle/wasm"}

var (
	bundleOnce sync.Once
	bundleSet  PluginSet
	bundleErr  error
)

// BuildBundle puts the first-party bundle once per process into the
// BuildPlugins directory as bundle.wasm, precompiled for trusted and
// strict mode into its cache, and writes plugins-bundle.yaml next to
// plugins.yaml: the bundle alone (kind bundle, trusted), so a gateway on
// it serves every request through the fused ops. The returned set shares
// Dir and Cache with BuildPlugins'; its YAML is plugins-bundle.yaml.
// BuildPlugins must have succeeded first.
func BuildBundle() (PluginSet, error) {
	bundleOnce.Do(func() {
		if built.Dir == "" || built.Cache == "" {
			bundleErr = fmt.Errorf("testutil: BuildBundle before BuildPlugins")
			return
		}
		src, err := PluginWasm("bundle")
		if err != nil {
			bundleErr = err
			return
		}
		path := filepath.Join(built.Dir, "bundle.wasm")
		if bundleErr = CopyFile(src, path); bundleErr != nil {
			return
		}
		if bundleErr = Precompile(built.Cache, path+"=trusted+strict"); bundleErr != nil {
			return
		}
		y := fmt.Sprintf("abi: 2\ncache_dir: %s\nplugins:\n  - {name: %s, kind: bundle, path: bundle.wasm, mode: trusted}\n", built.Cache, Bundle.Name)
		set := PluginSet{Dir: built.Dir, YAML: filepath.Join(built.Dir, "plugins-bundle.yaml"), Cache: built.Cache}
		if bundleErr = os.WriteFile(set.YAML, []byte(y), 0o644); bundleErr == nil {
			bundleSet = set
		}
	})
	return bundleSet, bundleErr
}
