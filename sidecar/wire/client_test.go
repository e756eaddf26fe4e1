package wire_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sidecar/wire"
)

const key = "s3cret-test-key"

func fakeSidecar(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(wire.HeaderKey) != key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"status":"error","reason":"missing or invalid X-Sidecar-Key header"}`))
			return
		}
		if r.Method != http.MethodGet {
			t.Errorf("method = %s", r.Method)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestClientHealth(t *testing.T) {
	srv := fakeSidecar(t, 200, `{"status":"ok","gpu_count":8,"sidecar_version":"1.2.3"}`)
	h, err := wire.NewClient(srv.URL+"/", key).Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if *h != (wire.Health{Status: "ok", GPUCount: 8, SidecarVersion: "1.2.3"}) {
		t.Errorf("health = %+v", h)
	}
}

func TestClientGPUInfo(t *testing.T) {
	body := `{"hostname":"n1","timestamp":"2026-11-30T12:00:00Z","driver_version":"580.159.04",
	"cuda_version":"13.0","gpu_count":1,"sidecar_version":"dev","future_field":true,
	"gpus":[{"index":0,"name":"NVIDIA H200","uuid":"GPU-x","memory_total_bytes":150754820096,
	"utilization_gpu":3,"power_draw_watts":78.5,"fan_speed_percent":null,"energy_total_mj":42,
	"processes":[{"pid":7,"gpu_memory_used_bytes":1024}]}]}`
	info, err := wire.NewClient(fakeSidecar(t, 200, body).URL, key).GPUInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := info.GPUs[0]
	if info.CUDAVersion != "13.0" || !info.Timestamp.Equal(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)) ||
		*g.MemoryTotalBytes != 150754820096 || *g.UtilizationGPU != 3 || *g.PowerDrawWatts != 78.5 ||
		g.FanSpeedPercent != nil || *g.EnergyTotalMJ != 42 || *g.Processes[0].GPUMemoryUsedBytes != 1024 {
		t.Errorf("decoded %+v / %+v", info, g)
	}
}

func TestClientErrors(t *testing.T) {
	unavailable := fakeSidecar(t, 503, `{"status":"error","reason":"nvml not initialized: ERROR_LIBRARY_NOT_FOUND"}`)
	_, err := wire.NewClient(unavailable.URL, key).GPUInfo(context.Background())
	var we *wire.Error
	if !errors.As(err, &we) || we.StatusCode != 503 || !wire.IsUnavailable(err) ||
		!strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("503: err = %v", err)
	}

	_, err = wire.NewClient(unavailable.URL, "wrong").Health(context.Background())
	if !wire.IsUnauthorized(err) || wire.IsUnavailable(err) {
		t.Errorf("401: err = %v", err)
	}

	garbage := fakeSidecar(t, 200, `not json`)
	if _, err = wire.NewClient(garbage.URL, key).Health(context.Background()); err == nil || !strings.Contains(err.Error(), "decode") {
		t.Errorf("bad body: err = %v", err)
	}

	if _, err = wire.NewClient("http://127.0.0.1:1", key).Health(context.Background()); err == nil {
		t.Error("unreachable sidecar: no error")
	}
}

func TestClientTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(block) })
	start := time.Now()
	_, err := wire.NewClient(srv.URL, key, wire.WithTimeout(50*time.Millisecond)).Health(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %s", d)
	}
}

func TestClientStringHidesKey(t *testing.T) {
	c := wire.NewClient("http://n1:8007", key)
	if s := c.String(); strings.Contains(s, key) {
		t.Errorf("String() = %q leaks the key", s)
	}
}
