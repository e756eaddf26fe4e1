package main

import (
	"bytes"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

// scaffoldFS holds the files `mindrouter plugin new` writes, as templates.
//
//go:embed scaffold
var scaffoldFS embed.FS

// scaffoldData fills the templates.
type scaffoldData struct {
	Name    string // the plugin's name: routes, manifest, .wasm file
	Package string // its Go package name
	Module  string // its Go module path
	SDK     string // where the SDK module is, for the go.mod replace
}

var pluginName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// pluginNew scaffolds a translator plugin module in a new folder:
// go.mod (the SDK by a replace directive), a skeleton translator, a
// golden-vector test, wasm/main.go and a Makefile whose check target
// builds the .wasm and runs `mindrouter plugin check` on it.
func pluginNew(args []string) error {
	fs := flag.NewFlagSet("plugin new", flag.ExitOnError)
	dir := fs.String("dir", "", "folder to create (default: ./NAME)")
	module := fs.String("module", "", "Go module path (default: example.com/NAME)")
	sdkDir := fs.String("sdk", "", "the MindRouter SDK module's folder (default: the sdk/ of the repository above the working directory)")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("usage: mindrouter plugin new [--dir DIR] [--module PATH] [--sdk DIR] NAME")
	}
	name := fs.Arg(0)
	if !pluginName.MatchString(name) {
		return fmt.Errorf("plugin new: name %q: lower-case letters, digits and '-', starting with a letter", name)
	}
	if *dir == "" {
		*dir = name
	}
	if *module == "" {
		*module = "example.com/" + name
	}
	sdk, err := findSDK(*sdkDir)
	if err != nil {
		return err
	}
	out, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("plugin new: %s already exists", out)
	}
	rel, err := filepath.Rel(out, sdk)
	if err != nil {
		rel = sdk
	}
	d := scaffoldData{Name: name, Package: strings.ReplaceAll(name, "-", ""), Module: *module, SDK: filepath.ToSlash(rel)}
	if err := writeScaffold(out, d); err != nil {
		return err
	}
	// go.sum: the SDK's dependencies, from the module cache or proxy.
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = out
	if b, err := tidy.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "plugin new: go mod tidy failed (run it in %s): %v\n%s", out, err, b)
	}
	fmt.Printf("created %s (module %s, SDK at %s)\nnext: cd %s && make check MINDROUTER=%s\n", out, d.Module, sdk, *dir, selfPath())
	return nil
}

// writeScaffold renders every template under scaffold/ into out.
func writeScaffold(out string, d scaffoldData) error {
	return fs.WalkDir(scaffoldFS, "scaffold", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(path, "scaffold/"), ".tmpl")
		switch rel {
		case "plugin.go":
			rel = d.Package + ".go"
		case "plugin_test.go":
			rel = d.Package + "_test.go"
		}
		raw, err := scaffoldFS.ReadFile(path)
		if err != nil {
			return err
		}
		t, err := template.New(rel).Delims("{%", "%}").Parse(string(raw)) // Go code is full of {{
		if err != nil {
			return fmt.Errorf("plugin new: template %s: %w", path, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, d); err != nil {
			return fmt.Errorf("plugin new: template %s: %w", path, err)
		}
		dst := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b.Bytes(), 0o644)
	})
}

// findSDK returns the SDK module's folder: dir when given, else the sdk/
// of the nearest folder above the working directory holding one.
func findSDK(dir string) (string, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		if !isSDK(abs) {
			return "", fmt.Errorf("plugin new: %s has no go.mod of module github.com/mindrouter/mindrouter/sdk", abs)
		}
		return abs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isSDK(filepath.Join(d, "sdk")) {
			return filepath.Join(d, "sdk"), nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("plugin new: no MindRouter sdk/ above the working directory: pass --sdk PATH/TO/mindrouter/sdk")
		}
	}
}

func isSDK(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.HasPrefix(b, []byte("module github.com/mindrouter/mindrouter/sdk\n"))
}

func selfPath() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "mindrouter"
}
