package ollama

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func probe(t *testing.T, name, status string, body []byte) (canon.Discovery, result) {
	t.Helper()
	meta := []string{"probe", name}
	if status != "" {
		meta = append(meta, "status", status)
	}
	r := newHarness().call(t, abi.OpProbeDecode, 0, nil, body, meta...)
	var d canon.Discovery
	if r.Status == abi.StatusOK {
		if err := d.DecodeJSON(r.Payload); err != nil {
			t.Fatalf("output %q does not decode: %v", r.Payload, err)
		}
	}
	return d, r
}

func ptr[T any](v T) *T { return &v }

func TestDecodeProbe(t *testing.T) {
	for _, tc := range []struct {
		name, probe, status, file string
		want                      canon.Discovery
	}{
		{"tags", "models", "200", "tags.json", canon.Discovery{Models: []canon.DiscoveredModel{
			{Name: "deepseek-r1:latest", SizeBytes: 4683075271, Family: "qwen2", Capabilities: []string{"completion", "thinking"}},
			{Name: "llama3.2:latest", SizeBytes: 2019393189, Family: "llama"},
			{Name: "gpt-oss:120b-cloud", SizeBytes: 384, Capabilities: []string{"completion", "tools", "thinking"}},
		}}},
		{"ps", "loaded", "200", "ps.json", canon.Discovery{Models: []canon.DiscoveredModel{
			{Name: "mistral:latest", Loaded: true, SizeBytes: 5137025024, Family: "llama"},
			{Name: "gemma3:27b", Loaded: true, SizeBytes: 17179869184, Family: "gemma3", ContextLength: 32768},
		}}},
		{"ps empty", "loaded", "200", "ps_empty.json", canon.Discovery{}},
		{"version", "health", "200", "version.json", canon.Discovery{Healthy: ptr(true), Version: "0.12.6"}},
		{"version no status", "health", "", "version.json", canon.Discovery{Healthy: ptr(false)}},
		{"tags no status", "models", "", "ps_empty.json", canon.Discovery{}},
		{"tags down", "models", "500", "tags.json", canon.Discovery{Healthy: ptr(false)}},
		{"ps down", "loaded", "404", "ps.json", canon.Discovery{Healthy: ptr(false)}},
		{"version down", "health", "503", "version.json", canon.Discovery{Healthy: ptr(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, r := probe(t, tc.probe, tc.status, readFile(t, "probe/"+tc.file))
			if r.Status != abi.StatusOK {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestDecodeProbe_Health(t *testing.T) {
	for _, tc := range []struct {
		status, body string
		healthy      bool
	}{
		{"200", "garbage", true},
		{"200", "", true},
		{"204", "", true},
		{"500", `{"error":"boom"}`, false},
		{"0", "", false},
	} {
		d, r := probe(t, "health", tc.status, []byte(tc.body))
		if r.Status != abi.StatusOK || d.Healthy == nil || *d.Healthy != tc.healthy {
			t.Errorf("%s %q: status %s %q healthy %v", tc.status, tc.body, r.Status, r.Error, d.Healthy)
		}
	}
}

func TestDecodeProbe_Errors(t *testing.T) {
	for _, tc := range []struct{ probe, status, body, want string }{
		{"models", "200", `{"models":{}}`, "models is not an array"},
		{"models", "200", `<html>`, "invalid JSON"},
		{"loaded", "200", `[]`, "not a JSON object"},
		{"metrics", "200", `{}`, `unknown probe "metrics"`},
		{"health", "OK", `{}`, "is not a number"},
	} {
		_, r := probe(t, tc.probe, tc.status, []byte(tc.body))
		if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s %s %q: %s %q, want bad_input containing %q", tc.probe, tc.status, tc.body, r.Status, r.Error, tc.want)
		}
	}
}

func TestManifest(t *testing.T) {
	m := newHarness().p.Manifest()
	if m.Name != "ollama" || m.Kind != "adapter" || m.Format != "ollama" || m.Framing != "ndjson" ||
		m.StateVersion != 2 || m.Version != "0.1.0" || m.ABI != abi.Version {
		t.Errorf("manifest %+v", m)
	}
	var probes []string
	for _, p := range m.Probes {
		probes = append(probes, p.Name+" "+p.Method+" "+p.Path)
	}
	want := "models GET /api/tags,loaded GET /api/ps,health GET /api/version,show POST /api/show"
	if got := strings.Join(probes, ","); got != want {
		t.Errorf("probes %s, want %s", got, want)
	}
	if show := m.Probes[len(m.Probes)-1]; !show.PerModel || show.Body != `{"model":{{model}}}` {
		t.Errorf("show probe %+v: want per model, body {\"model\":{{model}}}", show)
	}
	r, err := abi.ParseResult(newHarness().p.Init(nil))
	if err != nil || r.Status != abi.StatusOK || !strings.Contains(string(r.Payload), `"framing":"ndjson"`) {
		t.Errorf("init: %v %s %s", err, r.Status, r.Payload)
	}
}

// The per-model /api/show probe (ABI 2.4) reports the model's canonical
// capabilities (Ollama words the gateway does not use dropped; none
// listed: unknown), family and trained context window (model_info
// <arch>.context_length), which the gateway bounds by max_num_ctx and
// sends as num_ctx.
func TestDecodeProbe_Show(t *testing.T) {
	show := func(status, body string) (canon.Discovery, result) {
		t.Helper()
		r := newHarness().call(t, abi.OpProbeDecode, 0, nil, []byte(body), "probe", "show", "status", status, "model", "llava:7b")
		var d canon.Discovery
		if r.Status == abi.StatusOK {
			if err := d.DecodeJSON(r.Payload); err != nil {
				t.Fatalf("output %q does not decode: %v", r.Payload, err)
			}
		}
		return d, r
	}
	d, r := show("200", `{"details":{"family":"llama"},"model_info":{"general.architecture":"llama","llama.context_length":131072},"capabilities":["completion","vision","insert","tools"]}`)
	want := canon.Discovery{Models: []canon.DiscoveredModel{{Name: "llava:7b", Family: "llama", ContextLength: 131072, Capabilities: []string{"completion", "vision", "tools"}}}}
	if r.Status != abi.StatusOK || !cmp.Equal(d, want) {
		t.Errorf("show: %s %s\n%s", r.Status, r.Error, cmp.Diff(want, d))
	}
	d, r = show("200", `{"details":{"family":"llama"}}`) // an Ollama before capabilities
	if r.Status != abi.StatusOK || len(d.Models) != 1 || d.Models[0].Capabilities != nil {
		t.Errorf("no capabilities: %s %+v", r.Status, d)
	}
	d, r = show("200", `{"model_info":{"general.architecture":"qwen3","llama.context_length":4096}}`) // another architecture's key
	if r.Status != abi.StatusOK || len(d.Models) != 1 || d.Models[0].ContextLength != 0 {
		t.Errorf("foreign context_length: %s %+v", r.Status, d)
	}
	d, r = show("404", `{"error":"model 'llava:7b' not found"}`)
	if r.Status != abi.StatusOK || d.Healthy == nil || *d.Healthy || len(d.Models) != 0 {
		t.Errorf("404: %s %+v", r.Status, d)
	}
	if _, r = show("200", `[1]`); r.Status != abi.StatusBadInput {
		t.Errorf("not an object: %s", r.Status)
	}
}
