// Package buildcache builds a main package for tests once per source
// state rather than once per test: a plugin's wasip1 .wasm, or a host
// binary (a gateway child process). The output is kept in a per-user
// cache, named by a hash of everything the build reads (the Go files and
// embedded files of every package of this module it links, the versions
// of the other modules, the toolchain, the flags), so every test binary of
// a run — and the next run, when nothing changed — reuses it. It also
// names a shared directory for a WebAssembly runtime's compilation cache,
// so a module compiled by one test binary is not compiled again by the
// next.
//
// Environment:
//
//	MINDROUTER_TEST_WASM   a directory of prebuilt plugins, <name>.wasm
//	                       (`make plugins` writes plugins/<name>.wasm; make
//	                       test points this at plugins/): Prebuilt finds
//	                       them there and nothing is built.
//	MINDROUTER_TEST_CACHE  the cache directory (default: the user cache
//	                       directory's mindrouter-test, or the system
//	                       temporary directory's mindrouter-test-<uid>).
//
// Entries not used for a few days are removed when the cache is first used
// by a process, and the compilation caches are kept under a size bound.
package buildcache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The environment variables (see the package doc).
const (
	EnvPrebuilt = "MINDROUTER_TEST_WASM"
	EnvCache    = "MINDROUTER_TEST_CACHE"
)

// DefaultLDFlags are the Makefile's: no symbol table or DWARF.
const DefaultLDFlags = "-s -w"

// Spec is one build: the main package Pkg, a directory relative to Root
// (where the go command runs: the module root), built with CGO_ENABLED=0:
// for GOOS=wasip1 GOARCH=wasm with -buildmode=c-shared -trimpath (a
// plugin, as the Makefile builds one), or, when Host, an executable for
// the host (without -trimpath, so that the packages a
// `CGO_ENABLED=0 go build ./...` compiled are not compiled again).
type Spec struct {
	Root    string
	Pkg     string // e.g. "plugins/openai/wasm"
	LDFlags string // passed as -ldflags when not ""
	Host    bool   // an executable for the host's GOOS and GOARCH
}

// Prebuilt returns MINDROUTER_TEST_WASM/<name>.wasm when the variable is
// set. ok is false when it is not; a set variable without the file is an
// error (a build that was meant to be shared, not a silent rebuild).
func Prebuilt(name string) (path string, ok bool, err error) {
	dir := os.Getenv(EnvPrebuilt)
	if dir == "" {
		return "", false, nil
	}
	path = filepath.Join(dir, name+".wasm")
	if _, err := os.Stat(path); err != nil {
		return "", false, fmt.Errorf("buildcache: %s=%s but %s: %w (run make plugins)", EnvPrebuilt, dir, path, err)
	}
	return path, true, nil
}

// Build returns the path of s's output (.wasm, or the executable) in the cache, building it first
// when the cache has none for the current sources. The file is shared:
// read or copy it, never write to it.
func Build(s Spec) (string, error) {
	root, err := filepath.Abs(s.Root)
	if err != nil {
		return "", err
	}
	pkg := "./" + strings.TrimPrefix(filepath.ToSlash(s.Pkg), "./")
	env, sub, ext, mode := wasmEnv(), "wasm", ".wasm", []string{"-buildmode=c-shared", "-trimpath"}
	if s.Host {
		env, sub, ext, mode = append(os.Environ(), "CGO_ENABLED=0"), "bin", "", nil
	}
	key, err := sourceKey(root, pkg, s.LDFlags, env)
	if err != nil {
		return "", err
	}
	dir, err := cacheSubdir(sub)
	if err != nil {
		return "", err
	}
	name := strings.ReplaceAll(strings.Trim(strings.TrimPrefix(pkg, "./"), "/"), "/", "_")
	out := filepath.Join(dir, name+"-"+key+ext)
	if _, err := os.Stat(out); err == nil {
		now := time.Now()
		_ = os.Chtimes(out, now, now) // in use: not pruned
		return out, nil
	}
	tmp, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return "", fmt.Errorf("buildcache: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := append([]string{"build"}, mode...)
	if s.LDFlags != "" {
		args = append(args, "-ldflags="+s.LDFlags)
	}
	cmd := exec.Command(goTool(), append(args, "-o", tmp.Name(), pkg)...)
	cmd.Dir = root
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("buildcache: build %s: %v\n%s", pkg, err, b)
	}
	if err := os.Rename(tmp.Name(), out); err != nil { // atomic: concurrent builders agree
		return "", fmt.Errorf("buildcache: %w", err)
	}
	return out, nil
}

// CompileCacheDir returns the shared directory for the compilation cache
// of the WebAssembly runtime that is the Go module runtimeModule (e.g.
// "github.com/tetratelabs/wazero"), named after the version of it that the
// go.mod in root requires and the platform: the compiled code depends on
// them besides the module's bytes, and a runtime's own cache key may not
// say so (wazero's in a test binary calls itself "dev", whatever its
// version).
func CompileCacheDir(root, runtimeModule string) (string, error) {
	v, err := moduleVersion(root, runtimeModule)
	if err != nil {
		return "", fmt.Errorf("buildcache: %w", err)
	}
	if v == "" {
		return "", fmt.Errorf("buildcache: %s/go.mod does not require %s", root, runtimeModule)
	}
	return cacheSubdir("compiled-" + sanitize(filepath.Base(runtimeModule)+"-"+v+"-"+runtime.GOOS+"-"+runtime.GOARCH))
}

// moduleVersion returns the version that the go.mod in root requires of
// module path, "" when it names none.
func moduleVersion(root, path string) (string, error) {
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == path {
			return fields[1], nil
		}
	}
	return "", sc.Err()
}

// RepoRoot is the nearest directory at or above the working directory
// holding a go.mod.
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
			return "", errors.New("buildcache: no go.mod above the working directory")
		}
		dir = parent
	}
}

// goTool is the go command of the toolchain that built this test binary
// (GOROOT/bin/go), else the one on PATH.
func goTool() string {
	if r := runtime.GOROOT(); r != "" {
		p := filepath.Join(r, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

func wasmEnv() []string {
	return append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
}

// sourceKey hashes what a build of pkg in env reads: the toolchain, the
// flags and environment that change its output, the version of each other
// module it links (a module cache's files do not change), and the contents
// of every Go and embedded file of the packages of this module (and of
// replaced ones) it links (go list -deps), and a default.pgo beside them.
func sourceKey(root, pkg, ldflags string, env []string) (string, error) {
	const tmpl = `{{if not .Standard}}{{.ImportPath}}{{"\t"}}{{with .Module}}{{if not .Replace}}{{.Version}}{{end}}{{end}}{{"\t"}}{{.Dir}}{{range .GoFiles}}{{"\t"}}{{.}}{{end}}{{range .EmbedFiles}}{{"\t"}}{{.}}{{end}}{{"\n"}}{{end}}`
	cmd := exec.Command(goTool(), "list", "-deps", "-f", tmpl, pkg)
	cmd.Dir = root
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	list, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("buildcache: go list %s: %v\n%s", pkg, err, stderr.Bytes())
	}
	h := sha256.New()
	fmt.Fprintf(h, "buildcache v1\n%s\n%s\n%q\n", runtime.Version(), ldflags, goEnv(env))
	if st, err := os.Stat(goTool()); err == nil {
		fmt.Fprintf(h, "%d %d\n", st.Size(), st.ModTime().UnixNano())
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(list)), "\n") {
		parts := strings.Split(line, "\t")
		if len(parts) < 3 {
			continue
		}
		fmt.Fprintf(h, "pkg %s %s\n", parts[0], parts[1])
		if parts[1] != "" {
			continue // another module's, at that version
		}
		for _, f := range parts[3:] {
			b, err := os.ReadFile(filepath.Join(parts[2], f))
			if err != nil {
				return "", fmt.Errorf("buildcache: %w", err)
			}
			sum := sha256.Sum256(b)
			fmt.Fprintf(h, "%s %x\n", f, sum)
		}
		// A main package's default.pgo steers the build (-pgo=auto).
		if b, err := os.ReadFile(filepath.Join(parts[2], "default.pgo")); err == nil {
			fmt.Fprintf(h, "default.pgo %x\n", sha256.Sum256(b))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// goEnv is the part of env that can change a build's output: the go
// command's and cgo's variables, less the ones naming caches and paths,
// the last setting of each, sorted.
func goEnv(env []string) []string {
	last := map[string]string{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "GO") && !strings.HasPrefix(k, "CGO_") {
			continue
		}
		switch k {
		case "GOCACHE", "GOMODCACHE", "GOPATH", "GOTMPDIR", "GOENV", "GOTELEMETRY", "GOTELEMETRYDIR", "GOPROXY", "GONOSUMDB", "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE":
			continue
		}
		last[k] = kv
	}
	out := make([]string, 0, len(last))
	for _, kv := range last {
		out = append(out, kv)
	}
	sort.Strings(out)
	return out
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// Cache housekeeping: what was not used for maxAge goes, and each
// compilation cache is cut back to its newest files past maxCompiled.
const (
	maxAge      = 3 * 24 * time.Hour
	maxCompiled = 2 << 30
)

var pruneOnce sync.Once

// cacheRoot is MINDROUTER_TEST_CACHE, else the user cache directory's
// mindrouter-test, else one in the temporary directory.
func cacheRoot() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "mindrouter-test")
	}
	return filepath.Join(os.TempDir(), "mindrouter-test-"+strconv.Itoa(os.Getuid()))
}

func cacheSubdir(name string) (string, error) {
	root := cacheRoot()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("buildcache: cache: %w", err)
	}
	pruneOnce.Do(func() { prune(root) })
	return dir, nil
}

// prune removes stale entries below root: files unused (mtime) for
// maxAge, and the oldest compiled files beyond maxCompiled in each
// compilation cache. Failures are ignored: another process may be
// pruning too, and a missing entry is only rebuilt or recompiled.
func prune(root string) {
	subdirs, _ := os.ReadDir(root)
	cutoff := time.Now().Add(-maxAge)
	for _, sd := range subdirs {
		if !sd.IsDir() {
			continue
		}
		dir := filepath.Join(root, sd.Name())
		type entry struct {
			path string
			size int64
			mod  time.Time
		}
		var keep []entry
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if info.ModTime().Before(cutoff) {
				_ = os.Remove(p)
				return nil
			}
			keep = append(keep, entry{p, info.Size(), info.ModTime()})
			return nil
		})
		if !strings.HasPrefix(sd.Name(), "compiled-") {
			continue
		}
		sort.Slice(keep, func(i, j int) bool { return keep[i].mod.After(keep[j].mod) })
		var total int64
		for _, e := range keep {
			total += e.size
			if total > maxCompiled {
				_ = os.Remove(e.path)
			}
		}
	}
}
