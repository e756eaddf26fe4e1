// Package testbuild builds the test plugins of plugins/testdata/broken for
// the plugin host's tests and fills a compilation cache for them.
package testbuild

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
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

// Build puts the plugins into dir (testutil.BuildWasm: copies of builds
// shared through the per-user cache, two at a time) and returns their
// paths by name. root is unused: the builds run at the repo root.
func Build(root, dir string, plugins []Plugin) (map[string]string, error) {
	files := map[string]string{}
	errs := make([]error, len(plugins))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, p := range plugins {
		out := filepath.Join(dir, p.Name+".wasm")
		files[p.Name] = out
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := testutil.BuildWasm("plugins/testdata/broken/"+p.Pkg, out, p.LDFlags); err != nil {
				errs[i] = fmt.Errorf("build %s: %w", p.Name, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return files, nil
}

// CompileCache is the compilation cache shared by the test binaries
// (testutil.CompileCache).
func CompileCache() (string, error) { return testutil.CompileCache() }

// Precompile fills cacheDir for the built plugins (see testutil.Precompile).
func Precompile(root, cacheDir string, plugins []Plugin, files map[string]string) error {
	args := make([]string, 0, len(plugins))
	for _, p := range plugins {
		args = append(args, files[p.Name]+"="+p.Modes)
	}
	return testutil.Precompile(cacheDir, args...)
}
