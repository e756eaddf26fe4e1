// Package testbuild builds the test plugins of plugins/testdata/broken for
// the plugin host's tests and fills a compilation cache for them.
package testbuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Plugin is one test plugin build.
type Plugin struct {
	Name    string // output file Name.wasm
	Pkg     string // directory under plugins/testdata/broken
	LDFlags string
	Modes   string // precompile for these modes, "+"-separated: "trusted+strict"
}

// GoodlibPkg is the import path of the test translator's library package
// (for -X ...Version=).
const GoodlibPkg = "github.com/mindrouter/mindrouter/plugins/testdata/broken/goodlib"

// RepoRoot walks up from the working directory to the directory holding go.mod.
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
			return "", fmt.Errorf("testbuild: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Build compiles the plugins into dir (two go builds at a time) and
// returns their paths by name.
func Build(root, dir string, plugins []Plugin) (map[string]string, error) {
	files := map[string]string{}
	sem := make(chan struct{}, 2)
	var mu sync.Mutex
	var errs []string
	var wg sync.WaitGroup
	for _, p := range plugins {
		out := filepath.Join(dir, p.Name+".wasm")
		files[p.Name] = out
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := []string{"build", "-buildmode=c-shared", "-trimpath", "-o", out}
			if p.LDFlags != "" {
				args = append(args, "-ldflags", p.LDFlags)
			}
			cmd := exec.Command("go", append(args, "./plugins/testdata/broken/"+p.Pkg)...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("build %s: %v\n%s", p.Name, err, b))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return files, nil
}

// WazeroTestVersion is the wazero version a test binary reports: test
// binaries carry no dependency versions in their build info, so wazero keys
// its compilation cache as "dev".
const WazeroTestVersion = "dev"

// Precompile fills cacheDir for the built plugins in a separate process
// built without the race detector (under -race wazero's compiler is about
// ten times slower) and keyed like a test binary's cache.
func Precompile(root, cacheDir string, plugins []Plugin, files map[string]string) error {
	args := []string{"run", "-ldflags", "-X github.com/tetratelabs/wazero/internal/version.version=" + WazeroTestVersion,
		"./core/pluginhost/internal/precompile", "-dir", cacheDir}
	for _, p := range plugins {
		args = append(args, files[p.Name]+"="+p.Modes)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("precompile: %v\n%s", err, b)
	}
	return nil
}
