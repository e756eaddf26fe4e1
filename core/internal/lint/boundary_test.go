package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// module is the gateway's module path; the SDK's is module + "/sdk".
const module = "github.com/mindrouter/mindrouter"

// A rule forbids the packages it is about (from) to reach the packages
// it forbids (to) through any chain of imports.
type rule struct {
	name string
	why  string
	// from reports whether the rule is about pkg (a path relative to the
	// module, "" for a package outside it); test says whether pkg is a
	// test variant (its _test.go files and the test main).
	from func(pkg string, test bool) bool
	to   func(pkg string) bool // pkg: relative as for from, or a full path outside the module
}

// under reports whether the relative path p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

var rules = []rule{{
	name: "core does not import plugins",
	why:  "the gateway knows plugins through the ABI only; core/cmd/mindrouter alone links the first-party plugins (plugins/firstparty)",
	from: func(p string, test bool) bool {
		return !test && under(p, "core") && !under(p, "core/cmd/mindrouter")
	},
	to: func(p string) bool { return under(p, "plugins") },
}, {
	name: "plugins and sdk do not import core",
	why:  "plugins are built against the SDK only; a test needing a wasm host gets it from a test-only package outside core",
	from: func(p string, _ bool) bool { return under(p, "plugins") || under(p, "sdk") },
	to:   func(p string) bool { return under(p, "core") },
}, {
	name: "only the sidecar imports go-nvml",
	why:  "NVML is the GPU sidecar's; the gateway reads GPUs through the sidecar's HTTP API (sidecar/wire)",
	from: func(p string, _ bool) bool { return p != "" && !under(p, "sidecar") },
	to:   func(p string) bool { return under(p, "github.com/NVIDIA/go-nvml") },
}}

// allowlist are import edges (importer → imported, relative paths) that
// violate a rule while they are being removed. The test does not follow
// them, and fails when one is no longer an import, so that an entry goes
// with its violation. It is empty: keep it so.
var allowlist = map[[2]string]string{}

// listing is one `go list` of packages to check.
type listing struct {
	dir      string   // relative to the repository root
	env      []string // added to the environment
	args     []string
	patterns []string
}

var listings = []listing{
	// Both modules natively, with every package's tests (-test), and the
	// files of the one extra build tag that changes imports' presence.
	{dir: ".", args: []string{"-test", "-tags=measure"}, patterns: []string{"./..."}},
	{dir: "sdk", args: []string{"-test"}, patterns: []string{"./..."}},
	// What the .wasm plugins are built from: their wasip1-only files.
	{dir: ".", env: []string{"GOOS=wasip1", "GOARCH=wasm"}, patterns: []string{"./plugins/..."}},
	{dir: "sdk", env: []string{"GOOS=wasip1", "GOARCH=wasm"}, patterns: []string{"./..."}},
}

// pkg is one package (or test variant) of a listing.
type pkg struct {
	ImportPath string   // "p", "p [q.test]", "p_test [p.test]", "p.test"
	Imports    []string // with variant suffixes, as ImportPath
}

// graph is the packages of every listing by import path.
type graph map[string]*pkg

func TestImportBoundaries(t *testing.T) {
	root := repoRoot(t)
	g := graph{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(listings))
	for i, l := range listings {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkgs, err := goList(filepath.Join(root, l.dir), l)
			errs[i] = err
			mu.Lock()
			defer mu.Unlock()
			for _, p := range pkgs {
				// Listings differ only in what they add (tests, wasip1
				// files): keep every import any of them saw.
				if q, ok := g[p.ImportPath]; ok {
					for _, imp := range p.Imports {
						if !slices.Contains(q.Imports, imp) {
							q.Imports = append(q.Imports, imp)
						}
					}
					continue
				}
				g[p.ImportPath] = p
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(g) < 100 {
		t.Fatalf("go list found %d packages: not the repository", len(g))
	}
	used := map[[2]string]bool{}
	for _, v := range check(g, rules, allowlist, used) {
		t.Error(v)
	}
	for e, why := range allowlist {
		if !used[e] {
			t.Errorf("allowlist: %s no longer imports %s (%s): remove the entry", e[0], e[1], why)
		}
	}
}

// violation is one forbidden import edge, found from a package a rule is
// about through chain (from that package to the imported one).
type violation struct {
	rule  *rule
	chain []string // relative paths, test variants marked
}

func (v violation) String() string {
	n := len(v.chain)
	s := fmt.Sprintf("%s imports %s: %q is broken (%s)", v.chain[n-2], v.chain[n-1], v.rule.name, v.rule.why)
	if n > 2 {
		s += "\n\treached from " + strings.Join(v.chain, " -> ")
	}
	return s
}

// check walks g from every package each rule is about and returns the
// forbidden edges it reaches, each once per rule with the shortest chain
// that reaches it (just the edge when the importer is itself a package of
// the rule), in a stable order; used gets the allowlisted edges met (and
// not followed).
func check(g graph, rules []rule, allow map[[2]string]string, used map[[2]string]bool) []violation {
	roots := make([]string, 0, len(g))
	for k := range g {
		roots = append(roots, k)
	}
	slices.Sort(roots)
	var out []violation
	for i := range rules {
		r := &rules[i]
		found := map[[2]string][]string{} // edge → shortest chain
		for _, k := range roots {
			p, test := rel(k)
			if !r.from(p, test) {
				continue
			}
			// Breadth first: the chains found are shortest from k.
			parent := map[string]string{k: ""}
			queue := []string{k}
			for len(queue) > 0 {
				cur := queue[0]
				queue = queue[1:]
				q := g[cur]
				if q == nil {
					continue
				}
				from, _ := rel(cur)
				for _, imp := range q.Imports {
					to, _ := rel(imp)
					if to == "" {
						to = strip(imp)
					}
					edge := [2]string{from, to}
					if _, ok := allow[edge]; ok {
						used[edge] = true
						continue
					}
					if r.to(to) {
						if c, ok := found[edge]; !ok || len(chain(parent, cur, imp)) < len(c) {
							found[edge] = chain(parent, cur, imp)
						}
						continue
					}
					if _, ok := parent[imp]; !ok {
						parent[imp] = cur
						queue = append(queue, imp)
					}
				}
			}
		}
		edges := make([][2]string, 0, len(found))
		for e := range found {
			edges = append(edges, e)
		}
		slices.SortFunc(edges, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
		for _, e := range edges {
			out = append(out, violation{rule: r, chain: found[e]})
		}
	}
	return out
}

// chain is the path from the walk's start to imp, through cur.
func chain(parent map[string]string, cur, imp string) []string {
	c := []string{name(imp)}
	for k := cur; k != ""; k = parent[k] {
		c = append(c, name(k))
	}
	slices.Reverse(c)
	return c
}

// name is a package's relative path for messages, "(test)" marking a
// test variant.
func name(k string) string {
	p, test := rel(k)
	if p == "" {
		p = strip(k)
	}
	if test {
		p += " (test)"
	}
	return p
}

// strip drops a test variant's " [p.test]" suffix.
func strip(k string) string {
	if i := strings.IndexByte(k, ' '); i >= 0 {
		return k[:i]
	}
	return k
}

// rel returns a package's path relative to the module ("" outside it) and
// whether k is a test variant: compiled for a test (" [p.test]"), an
// external test package (p_test) or a test main (p.test).
func rel(k string) (p string, test bool) {
	test = strings.Contains(k, " [")
	k = strip(k)
	if strings.HasSuffix(k, ".test") {
		test, k = true, strings.TrimSuffix(k, ".test")
	}
	if strings.HasSuffix(k, "_test") {
		test, k = true, strings.TrimSuffix(k, "_test")
	}
	if k == module {
		return ".", test
	}
	p, ok := strings.CutPrefix(k, module+"/")
	if !ok {
		return "", test
	}
	return p, test
}

// goList runs `go list -deps -json` for l in dir.
func goList(dir string, l listing) ([]*pkg, error) {
	args := append([]string{"list", "-deps", "-json=ImportPath,Imports"}, l.args...)
	args = append(args, l.patterns...)
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), l.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s go %s (in %s): %w\n%s", strings.Join(l.env, " "), strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	var pkgs []*pkg
	d := json.NewDecoder(&stdout)
	for {
		p := new(pkg)
		if err := d.Decode(p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list in %s: %w", dir, err)
		}
		pkgs = append(pkgs, p)
	}
}

// goTool is the go command of the toolchain that built the test, else
// the one on PATH.
func goTool() string {
	if r := runtime.GOROOT(); r != "" {
		if p := filepath.Join(r, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// repoRoot is the directory of the gateway's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		t.Fatal("not in a module")
	}
	return filepath.Dir(mod)
}
