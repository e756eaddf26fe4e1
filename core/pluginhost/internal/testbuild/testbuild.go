// Package testbuild builds the test plugins of plugins/testdata/broken for
// the plugin host's tests and fills a compilation cache for them.
package testbuild

import (
	"fmt"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
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

// RepoRoot is the directory holding go.mod.
func RepoRoot() (string, error) { return testutil.RepoRoot() }

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

// Precompile fills cacheDir for the built plugins (see testutil.Precompile).
func Precompile(root, cacheDir string, plugins []Plugin, files map[string]string) error {
	args := make([]string, 0, len(plugins))
	for _, p := range plugins {
		args = append(args, files[p.Name]+"="+p.Modes)
	}
	return testutil.Precompile(cacheDir, args...)
}
