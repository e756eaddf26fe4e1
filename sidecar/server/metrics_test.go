package server_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sidecar/collect/collecttest"
	"github.com/mindrouter/mindrouter/sidecar/server"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

var (
	helpLine   = regexp.MustCompile(`^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) \S.*$`)
	typeLine   = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (gauge|counter)$`)
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (\S+)$`)
)

// checkExposition validates the Prometheus text format 0.0.4 line by line:
// every sample belongs to the family announced just before it, each family
// is announced once, and values parse as floats.
func checkExposition(t *testing.T, body string) map[string]int {
	t.Helper()
	if !strings.HasSuffix(body, "\n") {
		t.Error("exposition does not end in a newline")
	}
	samples := map[string]int{}
	seen := map[string]bool{}
	current := ""
	for n, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		switch {
		case helpLine.MatchString(line):
			name := helpLine.FindStringSubmatch(line)[1]
			if seen[name] {
				t.Errorf("line %d: family %s announced twice", n+1, name)
			}
			seen[name], current = true, name
		case typeLine.MatchString(line):
			if name := typeLine.FindStringSubmatch(line)[1]; name != current {
				t.Errorf("line %d: TYPE for %s after HELP for %s", n+1, name, current)
			}
		case sampleLine.MatchString(line):
			m := sampleLine.FindStringSubmatch(line)
			if m[1] != current {
				t.Errorf("line %d: sample of %s inside family %s", n+1, m[1], current)
			}
			if _, err := strconv.ParseFloat(m[3], 64); err != nil {
				t.Errorf("line %d: value %q: %v", n+1, m[3], err)
			}
			samples[m[1]]++
		default:
			t.Errorf("line %d is not valid exposition format: %q", n+1, line)
		}
	}
	return samples
}

func TestMetricsFormatOverH200Mock(t *testing.T) {
	h := newNVMLServer(t, collecttest.NewH200(8))
	rec := do(t, h, http.MethodGet, "/metrics", testKey)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	samples := checkExposition(t, body)
	for _, name := range []string{
		"mindrouter_gpu_up", "mindrouter_gpu_utilization_percent", "mindrouter_gpu_memory_utilization_percent",
		"mindrouter_gpu_memory_total_bytes", "mindrouter_gpu_memory_used_bytes", "mindrouter_gpu_memory_free_bytes",
		"mindrouter_gpu_temperature_celsius", "mindrouter_gpu_memory_temperature_celsius",
		"mindrouter_gpu_power_draw_watts", "mindrouter_gpu_power_limit_watts",
		"mindrouter_gpu_sm_clock_hertz", "mindrouter_gpu_memory_clock_hertz",
		"mindrouter_gpu_energy_joules_total", "mindrouter_gpu_mig_enabled", "mindrouter_gpu_processes",
	} {
		if samples[name] != 8 {
			t.Errorf("%s: %d samples, want 8", name, samples[name])
		}
	}
	if samples["mindrouter_gpu_fan_speed_percent"] != 0 || strings.Contains(body, "fan_speed") {
		t.Error("fan speed exported although NOT_SUPPORTED")
	}
	if samples["mindrouter_gpu_process_memory_used_bytes"] != 1 { // the other process has no attributable memory
		t.Errorf("process memory samples = %d", samples["mindrouter_gpu_process_memory_used_bytes"])
	}
	for _, want := range []string{
		"mindrouter_sidecar_nvml_up 1",
		"mindrouter_gpu_count 8",
		`mindrouter_sidecar_info{version="test",driver_version="580.159.04",cuda_version="13.0"} 1`,
		"# TYPE mindrouter_gpu_energy_joules_total counter",
		`,name="NVIDIA H200 141GB HBM3e"} 700` + "\n", // power limit, watts
		`mindrouter_gpu_memory_total_bytes{gpu="0",`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !regexp.MustCompile(`mindrouter_gpu_sm_clock_hertz\{gpu="0",uuid="GPU-[0-9a-f-]+",name="[^"]+"\} 345000000\n`).MatchString(body) {
		t.Error("sm clock sample missing or not in hertz")
	}
	if !regexp.MustCompile(`mindrouter_gpu_memory_total_bytes\{gpu="0",[^}]*\} 151397597184\n`).MatchString(body) {
		t.Error("memory total not printed as a plain integer")
	}
}

type staticSource struct{ info *wire.GPUInfo }

func (s staticSource) Health(context.Context) (*wire.Health, error) {
	return &wire.Health{Status: "ok"}, nil
}
func (s staticSource) GPUInfo(context.Context) (*wire.GPUInfo, error) {
	return s.info, nil
}

func TestMetricsEscapesLabels(t *testing.T) {
	util := 7
	info := &wire.GPUInfo{GPUCount: 1, GPUs: []wire.GPU{{
		Index: 0, UUID: `GPU-"quoted"`, Name: "back\\slash\nnewline", UtilizationGPU: &util,
		Errors: map[string]string{"power_draw_watts": "ERROR_UNKNOWN"},
	}}}
	h := newServer(t, server.Config{Source: staticSource{info}})
	body := do(t, h, http.MethodGet, "/metrics", testKey).Body.String()
	checkExposition(t, body)
	want := `mindrouter_gpu_utilization_percent{gpu="0",uuid="GPU-\"quoted\"",name="back\\slash\nnewline"} 7` + "\n"
	if !strings.Contains(body, want) {
		t.Errorf("escaped sample missing; body:\n%s", body)
	}
}
