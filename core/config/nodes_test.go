package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParse_Nodes(t *testing.T) {
	dir := t.TempDir()
	const fileKey, envKey = "sk-from-file-123", "sk-from-env-456"
	if err := os.WriteFile(filepath.Join(dir, "gpu2.key"), []byte(fileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MR_TEST_SIDECAR_KEY", envKey)
	t.Setenv("MR_TEST_EMPTY", "")
	const backends = "backends: [{name: b1, engine: vllm, url: 'http://x', node: gpu1, gpus: [0, 1]}]\n"
	good := backends + `nodes:
  - {name: gpu1, sidecar_url: "http://gpu1:8007", sidecar_key_env: MR_TEST_SIDECAR_KEY}
  - {name: gpu2, sidecar_url: "https://gpu2:8007", sidecar_key_file: gpu2.key}
`
	c, err := Parse([]byte(good), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 2 || string(c.Nodes[0].SidecarKey) != envKey || string(c.Nodes[1].SidecarKey) != fileKey {
		t.Fatalf("nodes %v: keys not read from the variable and the file (relative to the config)", c.Nodes)
	}
	if b := c.Backends[0]; b.Node != "gpu1" || fmt.Sprint(b.GPUs) != "[0 1]" {
		t.Errorf("backend placement %+v", b)
	}
	// Neither fmt nor slog shows a key.
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("nodes", "node", c.Nodes[0], "nodes", c.Nodes)
	fmt.Fprintf(&buf, "%v %s %+v %#v", c.Nodes, c.Nodes[1], c.Nodes, c.Nodes)
	raw, _ := json.Marshal(c.Nodes)
	y, _ := yaml.Marshal(c.Nodes[0].SidecarKey)
	buf.Write(raw)
	buf.Write(y)
	if s := buf.String(); strings.Contains(s, envKey) || strings.Contains(s, fileKey) || !strings.Contains(s, "gpu1") {
		t.Errorf("printed nodes show a key (or nothing): %s", s)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"no name", "nodes: [{sidecar_url: 'http://a:1', sidecar_key_env: MR_TEST_SIDECAR_KEY}]\n", "nodes[0].name: required"},
		{"duplicate", "nodes: [{name: a, sidecar_url: 'http://a:1', sidecar_key_env: MR_TEST_SIDECAR_KEY}, {name: a, sidecar_url: 'http://a:1', sidecar_key_env: MR_TEST_SIDECAR_KEY}]\n", `nodes[1].name: duplicate "a"`},
		{"bad url", "nodes: [{name: a, sidecar_url: 'gpu1:8007', sidecar_key_env: MR_TEST_SIDECAR_KEY}]\n", "nodes[0].sidecar_url"},
		{"no key source", "nodes: [{name: a, sidecar_url: 'http://a:1'}]\n", "sidecar_key_env or sidecar_key_file required"},
		{"two key sources", "nodes: [{name: a, sidecar_url: 'http://a:1', sidecar_key_env: X, sidecar_key_file: y}]\n", "not both"},
		{"a key literal is not a field", "nodes: [{name: a, sidecar_url: 'http://a:1', sidecar_key: sk-literal}]\n", "sidecar_key"},
		{"unset variable", "nodes: [{name: a, sidecar_url: 'http://a:1', sidecar_key_env: MR_TEST_UNSET_VAR}]\n", "$MR_TEST_UNSET_VAR is unset or empty"},
		{"empty variable", "nodes: [{name: a, sidecar_url: 'http://a:1', sidecar_key_env: MR_TEST_EMPTY}]\n", "$MR_TEST_EMPTY is unset or empty"},
		{"missing file", "nodes: [{name: a, sidecar_url: 'http://a:1', sidecar_key_file: nope.key}]\n", "nodes[0].sidecar_key_file"},
		{"gpus without node", "backends: [{name: b, engine: vllm, url: 'http://x', gpus: [0]}]\n", "backends[0].gpus: needs node"},
		{"negative gpu", "backends: [{name: b, engine: vllm, url: 'http://x', node: a, gpus: [-1]}]\n", "-1 is not a GPU index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), envKey) || strings.Contains(err.Error(), "sk-literal") && tc.name != "a key literal is not a field" {
				t.Errorf("the error shows a key: %v", err)
			}
		})
	}
}
