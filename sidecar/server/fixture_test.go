package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sidecar/collect/collecttest"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// recordedDir holds answers captured from a sidecar on a real GPU machine by
// sidecar/scripts/gpu-check.sh (see the README there). It may be empty; the
// mock-generated fixture below is always checked.
const recordedDir = "../wire/testdata/recorded"

// TestRecordedFixture replays /gpu-info and /health answers through
// wire.Client and checks that they decode strictly into the wire types and
// carry sane values. It always replays an answer generated here from the
// H200 mock through the real handler, plus every recorded fixture found.
func TestRecordedFixture(t *testing.T) {
	h := newNVMLServer(t, collecttest.NewH200(8))
	t.Run("mock-h200-gpu-info", func(t *testing.T) {
		rec := do(t, h, http.MethodGet, "/gpu-info", testKey)
		if rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		replayGPUInfo(t, rec.Body.Bytes())
	})
	t.Run("mock-h200-health", func(t *testing.T) {
		replayHealth(t, do(t, h, http.MethodGet, "/health", testKey).Body.Bytes())
	})
	t.Run("mock-h200-metrics", func(t *testing.T) {
		checkExposition(t, do(t, h, http.MethodGet, "/metrics", testKey).Body.String())
	})

	for _, pattern := range []string{"*-gpu-info.json", "*-health.json", "*-metrics.txt"} {
		files, err := filepath.Glob(filepath.Join(recordedDir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			t.Run("recorded/"+filepath.Base(f), func(t *testing.T) {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case strings.HasSuffix(f, "-gpu-info.json"):
					replayGPUInfo(t, b)
				case strings.HasSuffix(f, "-health.json"):
					replayHealth(t, b)
				default:
					checkExposition(t, string(b))
				}
			})
		}
	}
}

// serveBytes answers every keyed request with body, as a sidecar would.
func serveBytes(t *testing.T, body []byte) *wire.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(wire.HeaderKey) != testKey {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return wire.NewClient(srv.URL, testKey)
}

// decodeStrict fails on fields the wire types do not know, so fixture and
// types cannot drift apart silently.
func decodeStrict(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("strict decode: %v", err)
	}
}

var (
	versionRe = regexp.MustCompile(`^\d+\.\d+$`)
	busIDRe   = regexp.MustCompile(`^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$`)
)

func replayHealth(t *testing.T, b []byte) {
	var strict wire.Health
	decodeStrict(t, b, &strict)
	h, err := serveBytes(t, b).Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != wire.StatusOK || h.GPUCount < 1 || h.SidecarVersion == "" {
		t.Errorf("health = %+v", h)
	}
}

func replayGPUInfo(t *testing.T, b []byte) {
	var strict wire.GPUInfo
	decodeStrict(t, b, &strict)
	info, err := serveBytes(t, b).GPUInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Hostname == "" || info.Timestamp.IsZero() || info.DriverVersion == "" || info.SidecarVersion == "" {
		t.Errorf("node fields: hostname %q timestamp %v driver %q version %q",
			info.Hostname, info.Timestamp, info.DriverVersion, info.SidecarVersion)
	}
	if !versionRe.MatchString(info.CUDAVersion) {
		t.Errorf("cuda_version %q", info.CUDAVersion)
	}
	if info.GPUCount < 1 || info.GPUCount != len(info.GPUs) {
		t.Fatalf("gpu_count %d, %d entries", info.GPUCount, len(info.GPUs))
	}
	for i, g := range info.GPUs {
		if g.Index != i {
			t.Errorf("gpu %d has index %d", i, g.Index)
		}
		if g.Error != "" {
			t.Errorf("gpu %d error: %s", i, g.Error)
			continue
		}
		checkGPU(t, g)
	}
}

func checkGPU(t *testing.T, g wire.GPU) {
	t.Helper()
	pre := fmt.Sprintf("gpu %d: ", g.Index)
	if !strings.HasPrefix(g.Name, "NVIDIA") || !strings.HasPrefix(g.UUID, "GPU-") || !busIDRe.MatchString(g.PCIBusID) {
		t.Errorf(pre+"identity name %q uuid %q bus %q", g.Name, g.UUID, g.PCIBusID)
	}
	if !versionRe.MatchString(g.ComputeCapability) {
		t.Errorf(pre+"compute_capability %q", g.ComputeCapability)
	}
	if g.MemoryTotalBytes == nil || *g.MemoryTotalBytes < 1<<30 || g.MemoryUsedBytes == nil || g.MemoryFreeBytes == nil ||
		*g.MemoryUsedBytes > *g.MemoryTotalBytes || *g.MemoryFreeBytes > *g.MemoryTotalBytes {
		t.Errorf(pre+"memory total %v used %v free %v", g.MemoryTotalBytes, g.MemoryUsedBytes, g.MemoryFreeBytes)
	}
	percent := func(name string, p *int) {
		if p != nil && (*p < 0 || *p > 100) {
			t.Errorf(pre+"%s = %d", name, *p)
		}
	}
	percent("utilization_gpu", g.UtilizationGPU)
	percent("utilization_memory", g.UtilizationMemory)
	percent("fan_speed_percent", g.FanSpeedPercent)
	if g.UtilizationGPU == nil || g.UtilizationMemory == nil {
		t.Errorf("%sutilization missing", pre)
	}
	if g.TemperatureGPU == nil || *g.TemperatureGPU <= 0 || *g.TemperatureGPU > 120 {
		t.Errorf(pre+"temperature_gpu %v", g.TemperatureGPU)
	}
	if g.PowerDrawWatts == nil || g.PowerLimitWatts == nil || *g.PowerDrawWatts <= 0 || *g.PowerLimitWatts < 50 ||
		*g.PowerDrawWatts > 1.5**g.PowerLimitWatts {
		t.Errorf(pre+"power draw %v limit %v", g.PowerDrawWatts, g.PowerLimitWatts)
	}
	if g.ClockSMMHz == nil || *g.ClockSMMHz <= 0 || g.ClockMemoryMHz == nil || *g.ClockMemoryMHz <= 0 {
		t.Errorf(pre+"clocks %v %v", g.ClockSMMHz, g.ClockMemoryMHz)
	}
	if g.EnergyTotalMJ == nil {
		t.Errorf("%senergy_total_mj missing", pre)
	}
	if g.MIGMode != nil && *g.MIGMode != wire.MIGEnabled && *g.MIGMode != wire.MIGDisabled {
		t.Errorf(pre+"mig_mode %q", *g.MIGMode)
	}
	if g.Processes == nil {
		t.Errorf("%sprocesses is null, want a list", pre)
	}
	for _, p := range g.Processes {
		if p.PID == 0 {
			t.Errorf("%sprocess with pid 0", pre)
		}
	}
}
