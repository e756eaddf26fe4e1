package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	nvmlserver "github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/mindrouter/mindrouter/sidecar/collect"
	"github.com/mindrouter/mindrouter/sidecar/collect/collecttest"
	"github.com/mindrouter/mindrouter/sidecar/server"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// newNVMLServer wires the real collector over an NVML mock into the handler,
// as main does.
func newNVMLServer(t *testing.T, lib *nvmlserver.Server) *server.Server {
	t.Helper()
	col := collect.New(lib, collect.Options{Version: "test", Hostname: func() (string, error) { return "gpu-node-1", nil }})
	_ = col.Init(context.Background()) // failures are what some tests want
	t.Cleanup(func() { _ = col.Shutdown() })
	return newServer(t, server.Config{Source: col, CacheTTL: -1})
}

func TestGPUInfoOverH200Mock(t *testing.T) {
	h := newNVMLServer(t, collecttest.NewH200(8))
	rec := do(t, h, http.MethodGet, "/gpu-info", testKey)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"hostname", "timestamp", "driver_version", "cuda_version", "gpu_count", "sidecar_version", "gpus"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("gpu-info lacks %q", k)
		}
	}
	if raw["cuda_version"] != "13.0" || raw["gpu_count"] != 8.0 {
		t.Errorf("cuda %v count %v", raw["cuda_version"], raw["gpu_count"])
	}
	gpu0 := raw["gpus"].([]any)[0].(map[string]any)
	for _, k := range []string{"index", "name", "uuid", "pci_bus_id", "compute_capability",
		"memory_total_bytes", "memory_used_bytes", "memory_free_bytes", "memory_total_gb", "memory_used_gb", "memory_free_gb",
		"utilization_gpu", "utilization_memory", "temperature_gpu", "temperature_memory",
		"power_draw_watts", "power_limit_watts", "clock_sm_mhz", "clock_memory_mhz", "energy_total_mj", "mig_mode", "processes"} {
		if _, ok := gpu0[k]; !ok {
			t.Errorf("gpu 0 lacks %q", k)
		}
	}
	for _, k := range []string{"fan_speed_percent", "errors", "error"} {
		if _, ok := gpu0[k]; ok {
			t.Errorf("gpu 0 has %q = %v, want absent", k, gpu0[k])
		}
	}
	procs := gpu0["processes"].([]any)
	if len(procs) != 2 || procs[0].(map[string]any)["gpu_memory_used_bytes"] != float64(collecttest.ProcBytes) {
		t.Errorf("processes = %v", procs)
	}
}

func TestNVMLInitFailureOverMock(t *testing.T) {
	lib := collecttest.NewH200(1)
	lib.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	h := newNVMLServer(t, lib)
	for _, path := range []string{"/health", "/gpu-info"} {
		rec := do(t, h, http.MethodGet, path, testKey)
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: %d", path, rec.Code)
			continue
		}
		if e := decodeError(t, rec); !strings.Contains(e.Reason, "ERROR_LIBRARY_NOT_FOUND") || !strings.Contains(e.Reason, "libnvidia-ml.so.1") {
			t.Errorf("%s reason = %q", path, e.Reason)
		}
	}
	rec := do(t, h, http.MethodGet, "/metrics", testKey)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "mindrouter_sidecar_nvml_up 0\n") ||
		strings.Contains(rec.Body.String(), "mindrouter_gpu_") {
		t.Errorf("metrics without nvml: %d\n%s", rec.Code, rec.Body)
	}
	if rec := do(t, h, http.MethodGet, "/health", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no key while nvml down: %d", rec.Code)
	}
}

func TestGPUErroringMidPollOverMock(t *testing.T) {
	lib := collecttest.NewH200(4)
	collecttest.Device(lib, 1).GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST
	}
	collecttest.Device(lib, 2).GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	h := newNVMLServer(t, lib)
	rec := do(t, h, http.MethodGet, "/gpu-info", testKey)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var info wire.GPUInfo
	if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	if g := info.GPUs[1]; !strings.Contains(g.Error, "ERROR_GPU_IS_LOST") || g.UtilizationGPU != nil {
		t.Errorf("gpu 1 = error %q util %v", g.Error, g.UtilizationGPU)
	}
	if g := info.GPUs[2]; g.Error != "" || g.Errors["clock_sm_mhz"] != "ERROR_UNKNOWN" || g.Errors["clock_memory_mhz"] != "ERROR_UNKNOWN" || g.UtilizationGPU == nil {
		t.Errorf("gpu 2 = error %q errors %v", g.Error, g.Errors)
	}
	for _, i := range []int{0, 3} {
		if g := info.GPUs[i]; g.Error != "" || g.Errors != nil || g.UtilizationGPU == nil {
			t.Errorf("gpu %d affected: %q %v", i, g.Error, g.Errors)
		}
	}
	body := do(t, h, http.MethodGet, "/metrics", testKey).Body.String()
	for _, want := range []string{
		`mindrouter_gpu_up{gpu="1",uuid="` + info.GPUs[1].UUID + `",name="` + info.GPUs[1].Name + `"} 0`,
		`mindrouter_gpu_up{gpu="0",uuid="` + info.GPUs[0].UUID + `",name="` + info.GPUs[0].Name + `"} 1`,
		`mindrouter_gpu_reading_error{gpu="2",uuid="` + info.GPUs[2].UUID + `",name="` + info.GPUs[2].Name + `",field="clock_sm_mhz"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestHealthOverMock(t *testing.T) {
	h := newNVMLServer(t, collecttest.NewH200(8))
	rec := do(t, h, http.MethodGet, "/health", testKey)
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"status":"ok","gpu_count":8,"sidecar_version":"test"}` {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}
