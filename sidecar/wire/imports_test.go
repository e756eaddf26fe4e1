package wire_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStdlibOnly keeps the gateway CGO-free: package wire (which the gateway
// imports) and its tests may import only the standard library, so neither
// go-nvml nor anything else can reach the gateway through it. A path whose
// first element has no dot is a standard-library path; since every direct
// import is standard, so is every transitive one (what `go list -deps` would
// show).
func TestStdlibOnly(t *testing.T) {
	const self = "github.com/mindrouter/mindrouter/sidecar/wire"
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("glob package files: %v (%d files)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, f := range files {
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if path == self && strings.HasSuffix(f, "_test.go") {
				continue
			}
			if strings.Contains(first, ".") || path == "C" {
				t.Errorf("%s imports %q; package wire must import only the standard library", f, path)
			}
		}
	}
}

// TestGoListDeps asks the go command itself, when it is on PATH, for the
// non-standard dependencies of package wire: there must be none but wire.
func TestGoListDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Logf("go command not on PATH (%v); TestStdlibOnly covers the same rule", err)
		return
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, line := range strings.Fields(string(out)) {
		if line != "github.com/mindrouter/mindrouter/sidecar/wire" {
			t.Errorf("package wire depends on %s", line)
		}
		if strings.Contains(line, "go-nvml") {
			t.Errorf("package wire pulls in go-nvml via %s", line)
		}
	}
}
