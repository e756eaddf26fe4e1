package vllm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func probe(t *testing.T, name, status string, body []byte) (canon.Discovery, result) {
	t.Helper()
	meta := map[string]string{"probe": name}
	if status != "" {
		meta["status"] = status
	}
	r := callOp(t, newPlugin(), abi.OpProbeDecode, 0, nil, meta, body)
	var d canon.Discovery
	if r.Status == abi.StatusOK {
		if err := d.DecodeJSON(r.Payload); err != nil {
			t.Fatalf("canonical discovery: %v\n%s", err, r.Payload)
		}
	}
	return d, r
}

func TestProbeModels(t *testing.T) {
	d, r := probe(t, "models", "200", readTestdata(t, "probes", "models.json"))
	if r.Status != abi.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Error)
	}
	want := canon.Discovery{Models: []canon.DiscoveredModel{
		{Name: "Qwen/Qwen3-8B", Loaded: true, ContextLength: 32768},
		{Name: "sql-lora", Loaded: true},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, body := range []string{"", "nope", `{"object":"list"}`, `{"data":{}}`} {
		if _, r := probe(t, "models", "200", []byte(body)); r.Status != abi.StatusBadInput || !strings.Contains(r.Error, "models probe") {
			t.Errorf("%q: %s %q", body, r.Status, r.Error)
		}
	}
	d, _ = probe(t, "models", "200", []byte(`{"data":[]}`))
	if len(d.Models) != 0 || d.Healthy != nil {
		t.Errorf("empty list: %+v", d)
	}
	d, r = probe(t, "models", "500", []byte("Internal Server Error"))
	if r.Status != abi.StatusOK || d.Healthy == nil || *d.Healthy {
		t.Errorf("500: %+v %s", d, r.Status)
	}
}

func TestProbeHealth(t *testing.T) {
	for status, want := range map[string]bool{"200": true, "204": true, "503": false, "500": false, "": false, "x": false} {
		d, r := probe(t, "health", status, nil)
		if r.Status != abi.StatusOK || d.Healthy == nil || *d.Healthy != want {
			t.Errorf("status %q: healthy %v (%s)", status, d.Healthy, r.Status)
		}
	}
}

func TestProbeMetrics(t *testing.T) {
	cases := []struct {
		name, body string
		want       canon.Discovery
	}{
		{"v1 data parallel", string(readTestdata(t, "probes", "metrics_v1.txt")),
			canon.Discovery{HasLoad: true, Running: 7, Waiting: 1, KVCacheUsage: 0.5}},
		{"v0", string(readTestdata(t, "probes", "metrics_v0.txt")),
			canon.Discovery{HasLoad: true, Running: 2, Waiting: 5, KVCacheUsage: 0.4375}},
		{"newer name wins", "vllm:gpu_cache_usage_perc 0.9\nvllm:kv_cache_usage_perc 0.1\n",
			canon.Discovery{HasLoad: true, KVCacheUsage: 0.1}},
		{"crlf, timestamps, odd labels", "vllm:num_requests_running{model_name=\"a}b\\\"c\",x=\"\"} 2 1700000000000\r\n" +
			"  vllm:num_requests_waiting 3e+00\r\nvllm:kv_cache_usage_perc{} 1.5\n",
			canon.Discovery{HasLoad: true, Running: 2, Waiting: 3, KVCacheUsage: 1}},
		{"bad samples skipped", "vllm:num_requests_running NaN\nvllm:num_requests_running +Inf\nvllm:num_requests_running\n" +
			"vllm:num_requests_running{unterminated=\"} 4\nvllm:num_requests_running abc\nvllm:num_requests_running_x 9\n" +
			"vllm:num_requests_waiting -2\n",
			canon.Discovery{HasLoad: true}},
		{"not vllm", "# HELP up\nup 1\n", canon.Discovery{}},
		{"empty", "", canon.Discovery{}},
		{"huge sums stay finite", "vllm:num_requests_running 1e308\nvllm:num_requests_running 1e308\nvllm:kv_cache_usage_perc 1e308\nvllm:kv_cache_usage_perc 1e308\n",
			canon.Discovery{HasLoad: true, Running: 1e12, KVCacheUsage: 1}},
	}
	for _, tc := range cases {
		d, r := probe(t, "metrics", "200", []byte(tc.body))
		if r.Status != abi.StatusOK {
			t.Fatalf("%s: %s %s", tc.name, r.Status, r.Error)
		}
		if diff := cmp.Diff(tc.want, d); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	d, _ := probe(t, "metrics", "503", []byte("vllm:num_requests_running 1\n"))
	if d.HasLoad || d.Healthy == nil || *d.Healthy {
		t.Errorf("503 metrics: %+v", d)
	}
}

func TestProbeUnknown(t *testing.T) {
	if _, r := probe(t, "loaded", "200", nil); r.Status != abi.StatusBadInput || !strings.Contains(r.Error, "unknown probe") {
		t.Errorf("%s %q", r.Status, r.Error)
	}
}

func TestManifest(t *testing.T) {
	m := newPlugin().Manifest()
	if m.Name != "vllm" || m.Version != "0.1.0" || m.Kind != "adapter" || m.Format != "vllm" || m.Framing != "sse" ||
		m.StateVersion != 2 || len(m.Probes) != 3 {
		t.Errorf("%+v", m)
	}
	r := callOp(t, newPlugin(), abi.OpRequestDecode, 0, nil, nil, nil)
	if r.Status != abi.StatusUnsupported {
		t.Errorf("translator op: %s", r.Status)
	}
}
