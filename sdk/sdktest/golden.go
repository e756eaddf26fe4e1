package sdktest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is -update: Golden rewrites its files instead of comparing. A
// test package importing sdktest gets the flag and must not define its
// own. MINDROUTER_UPDATE_GOLDEN=1 does the same.
var update = flag.Bool("update", false, "sdktest: rewrite golden files with the output they are compared with")

func updating() bool { return *update || os.Getenv("MINDROUTER_UPDATE_GOLDEN") == "1" }

// Golden compares got with the file at path, failing the test with a line
// diff when they differ; under -update it writes got there instead
// (creating directories). JSON documents are compared pretty-printed
// (two-space indent, key order and number text kept), so a golden file
// may be written by hand in any layout and diffs are by field; anything
// else is compared byte for byte (SSE and NDJSON transcripts included).
func Golden(tb testing.TB, path string, got []byte) {
	tb.Helper()
	got = pretty(got)
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run the test with -update to create it)", err)
	}
	want = pretty(want)
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs (-want +got; rerun with -update to accept):\n%s", path,
			cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")))
	}
}

// pretty indents a JSON document (ending it with a newline) and returns
// anything else unchanged.
func pretty(b []byte) []byte {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') || !json.Valid(t) {
		return b
	}
	var out bytes.Buffer
	if err := json.Indent(&out, t, "", "  "); err != nil {
		return b
	}
	out.WriteByte('\n')
	return out.Bytes()
}
