package collect_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"

	"github.com/mindrouter/mindrouter/sidecar/collect"
	"github.com/mindrouter/mindrouter/sidecar/collect/collecttest"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newCollector(t *testing.T, lib nvml.Interface) *collect.Collector {
	t.Helper()
	c := collect.New(lib, collect.Options{
		Version:  "test",
		Now:      func() time.Time { return fixedNow },
		Hostname: func() (string, error) { return "gpu-node-1", nil },
	})
	if err := c.Init(context.Background()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return c
}

func TestGPUInfoH200(t *testing.T) {
	c := newCollector(t, collecttest.NewH200(8))
	info, err := c.GPUInfo(context.Background())
	if err != nil {
		t.Fatalf("GPUInfo: %v", err)
	}
	if info.Hostname != "gpu-node-1" || !info.Timestamp.Equal(fixedNow) || info.SidecarVersion != "test" {
		t.Errorf("node fields = %q %v %q", info.Hostname, info.Timestamp, info.SidecarVersion)
	}
	if info.DriverVersion != collecttest.DriverVersion || info.CUDAVersion != "13.0" || info.GPUCount != 8 || len(info.GPUs) != 8 {
		t.Fatalf("driver %q cuda %q count %d len %d", info.DriverVersion, info.CUDAVersion, info.GPUCount, len(info.GPUs))
	}
	if info.Errors != nil {
		t.Errorf("node errors = %v", info.Errors)
	}
	uuids := map[string]bool{}
	for i, g := range info.GPUs {
		if g.Index != i || !strings.HasPrefix(g.Name, "NVIDIA H200") || !strings.HasPrefix(g.UUID, "GPU-") {
			t.Errorf("gpu %d identity: %+v", i, g)
		}
		uuids[g.UUID] = true
		if g.Error != "" || g.Errors != nil {
			t.Errorf("gpu %d: error %q errors %v", i, g.Error, g.Errors)
		}
		if g.ComputeCapability != "9.0" {
			t.Errorf("gpu %d compute capability %q", i, g.ComputeCapability)
		}
		if g.PCIBusID == "" || !strings.HasPrefix(g.PCIBusID, "00000000:") {
			t.Errorf("gpu %d pci bus id %q", i, g.PCIBusID)
		}
		if g.MemoryTotalBytes == nil || *g.MemoryTotalBytes != 144384<<20 ||
			*g.MemoryUsedBytes != collecttest.UsedBytes || *g.MemoryUsedBytes+*g.MemoryFreeBytes != *g.MemoryTotalBytes {
			t.Errorf("gpu %d memory %v %v %v", i, g.MemoryTotalBytes, g.MemoryUsedBytes, g.MemoryFreeBytes)
		}
		if *g.MemoryTotalGB != 141 || *g.MemoryUsedGB != 4 {
			t.Errorf("gpu %d memory GB %v %v", i, *g.MemoryTotalGB, *g.MemoryUsedGB)
		}
		if *g.UtilizationGPU != 10+i || *g.UtilizationMemory != 5 || *g.TemperatureGPU != 30+i || *g.TemperatureMemory != collecttest.MemTempC {
			t.Errorf("gpu %d util/temp %d %d %d %d", i, *g.UtilizationGPU, *g.UtilizationMemory, *g.TemperatureGPU, *g.TemperatureMemory)
		}
		if *g.PowerDrawWatts != 78 || *g.PowerLimitWatts != 700 || *g.EnergyTotalMJ != collecttest.EnergyMJ {
			t.Errorf("gpu %d power %v %v %v", i, *g.PowerDrawWatts, *g.PowerLimitWatts, *g.EnergyTotalMJ)
		}
		if *g.ClockSMMHz != collecttest.ClockSMMHz || *g.ClockMemoryMHz != collecttest.ClockMemMHz {
			t.Errorf("gpu %d clocks %d %d", i, *g.ClockSMMHz, *g.ClockMemoryMHz)
		}
		if g.MIGMode == nil || *g.MIGMode != wire.MIGDisabled {
			t.Errorf("gpu %d mig mode %v", i, g.MIGMode)
		}
		if g.FanSpeedPercent != nil {
			t.Errorf("gpu %d fan speed = %d, want absent (ERROR_NOT_SUPPORTED)", i, *g.FanSpeedPercent)
		}
		if g.Processes == nil {
			t.Errorf("gpu %d processes is nil, want empty list", i)
		}
	}
	if len(uuids) != 8 {
		t.Errorf("uuids not distinct: %v", uuids)
	}
	p := info.GPUs[0].Processes
	if len(p) != 2 || p[0].PID != collecttest.ProcPID || *p[0].GPUMemoryUsedBytes != collecttest.ProcBytes ||
		p[1].PID != collecttest.HiddenProcPID || p[1].GPUMemoryUsedBytes != nil {
		t.Errorf("gpu 0 processes = %+v", p)
	}
}

func TestNotSupportedIsAbsentInJSON(t *testing.T) {
	s := collecttest.NewH200(1)
	d := collecttest.Device(s, 0)
	d.GetFieldValuesFunc = func([]nvml.FieldValue) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
	d.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	info, err := newCollector(t, s).GPUInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(info.GPUs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"fan_speed_percent", "temperature_memory", "mig_mode", `"errors"`, `"error"`} {
		if strings.Contains(string(b), field) {
			t.Errorf("%s present in %s", field, b)
		}
	}
	if !strings.Contains(string(b), `"power_draw_watts":78`) {
		t.Errorf("power_draw_watts missing from %s", b)
	}
}

func TestReadingFailureIsRecordedPerField(t *testing.T) {
	s := collecttest.NewH200(4)
	collecttest.Device(s, 2).GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	info, err := newCollector(t, s).GPUInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := info.GPUs[2]
	if g.PowerDrawWatts != nil || g.Errors["power_draw_watts"] != "ERROR_UNKNOWN" || g.Error != "" {
		t.Errorf("gpu 2: power %v errors %v error %q", g.PowerDrawWatts, g.Errors, g.Error)
	}
	if g.TemperatureGPU == nil || g.PowerLimitWatts == nil {
		t.Errorf("gpu 2 lost other readings: %+v", g)
	}
	for _, i := range []int{0, 1, 3} {
		if info.GPUs[i].Errors != nil || info.GPUs[i].PowerDrawWatts == nil {
			t.Errorf("gpu %d affected: %+v", i, info.GPUs[i].Errors)
		}
	}
}

func TestGPULostMidPoll(t *testing.T) {
	s := collecttest.NewH200(8)
	// GPU 3 is lost before its handle can be taken; GPU 5 halfway through.
	base := s.DeviceGetHandleByIndexFunc
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 3 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return base(i)
	}
	d5 := collecttest.Device(s, 5)
	d5.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	powerCalled := false
	d5.GetPowerUsageFunc = func() (uint32, nvml.Return) { powerCalled = true; return 1, nvml.SUCCESS }

	info, err := newCollector(t, s).GPUInfo(context.Background())
	if err != nil {
		t.Fatalf("GPUInfo failed as a whole: %v", err)
	}
	if len(info.GPUs) != 8 {
		t.Fatalf("len(gpus) = %d", len(info.GPUs))
	}
	g3 := info.GPUs[3]
	if g3.Index != 3 || !strings.Contains(g3.Error, "ERROR_GPU_IS_LOST") || g3.Name != "" || g3.Errors != nil {
		t.Errorf("gpu 3 = %+v", g3)
	}
	g5 := info.GPUs[5]
	if !strings.Contains(g5.Error, "ERROR_GPU_IS_LOST") || !strings.Contains(g5.Error, "temperature_gpu") {
		t.Errorf("gpu 5 error = %q", g5.Error)
	}
	if g5.Name == "" || g5.MemoryTotalBytes == nil {
		t.Errorf("gpu 5 lost readings taken before the failure: %+v", g5)
	}
	if g5.PowerDrawWatts != nil || powerCalled {
		t.Errorf("gpu 5 kept reading after it was lost")
	}
	for _, i := range []int{0, 1, 2, 4, 6, 7} {
		if g := info.GPUs[i]; g.Error != "" || g.TemperatureGPU == nil {
			t.Errorf("gpu %d affected: %q", i, g.Error)
		}
	}
}

func TestPanicInReadingIsRecovered(t *testing.T) {
	// The bare dgxh200 fake leaves most reading funcs nil; calling one panics.
	info, err := newCollector(t, dgxh200.New()).GPUInfo(context.Background())
	if err != nil {
		t.Fatalf("GPUInfo: %v", err)
	}
	g := info.GPUs[0]
	if g.Name == "" || g.MemoryTotalBytes == nil {
		t.Errorf("readings the fake supports are missing: %+v", g)
	}
	if !strings.Contains(g.Errors["utilization"], "panic") {
		t.Errorf("errors = %v, want a recovered panic for utilization", g.Errors)
	}
}

func TestPanicInSystemReadingIsRecovered(t *testing.T) {
	s := collecttest.NewH200(1)
	s.DeviceGetCountFunc = nil // the mock panics
	c := newCollector(t, s)
	if _, err := c.GPUInfo(context.Background()); err == nil || !strings.Contains(err.Error(), "panic") {
		t.Errorf("GPUInfo err = %v", err)
	}
	if _, err := c.Health(context.Background()); err == nil || !strings.Contains(err.Error(), "panic") {
		t.Errorf("Health err = %v", err)
	}
}

func TestInitFailure(t *testing.T) {
	s := collecttest.NewH200(1)
	s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	s.DeviceGetCountFunc = func() (int, nvml.Return) {
		t.Error("DeviceGetCount called without NVML initialised")
		return 0, nvml.ERROR_UNINITIALIZED
	}
	c := collect.New(s, collect.Options{})
	err := c.Init(context.Background())
	if !errors.Is(err, collect.ErrNotInitialized) || !errors.Is(err, nvml.ERROR_LIBRARY_NOT_FOUND) {
		t.Fatalf("Init err = %v", err)
	}
	if !strings.Contains(err.Error(), "libnvidia-ml.so.1") || !strings.Contains(err.Error(), "--gpus all") {
		t.Errorf("reason lacks a hint: %v", err)
	}
	if _, herr := c.Health(context.Background()); herr == nil || herr.Error() != err.Error() {
		t.Errorf("Health err = %v", herr)
	}
	if _, gerr := c.GPUInfo(context.Background()); !errors.Is(gerr, collect.ErrNotInitialized) {
		t.Errorf("GPUInfo err = %v", gerr)
	}
	if c.Ready() == nil {
		t.Error("Ready() = nil after failed init")
	}
	if err := c.Shutdown(); err != nil {
		t.Errorf("Shutdown of uninitialised collector: %v", err)
	}
}

func TestRetryInit(t *testing.T) {
	s := collecttest.NewH200(2)
	var attempts atomic.Int32
	s.InitFunc = func() nvml.Return {
		if attempts.Add(1) < 3 {
			return nvml.ERROR_DRIVER_NOT_LOADED
		}
		return nvml.SUCCESS
	}
	c := collect.New(s, collect.Options{})
	if err := c.Init(context.Background()); !errors.Is(err, nvml.ERROR_DRIVER_NOT_LOADED) {
		t.Fatalf("first Init err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.RetryInit(ctx, time.Millisecond) }()
	deadline := time.Now().Add(5 * time.Second)
	for c.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not ready after retries: %v", c.Ready())
		}
		time.Sleep(time.Millisecond)
	}
	h, err := c.Health(context.Background())
	if err != nil || h.GPUCount != 2 || h.Status != wire.StatusOK {
		t.Errorf("Health = %+v, %v", h, err)
	}
	time.Sleep(10 * time.Millisecond) // more ticks: no further Init once ready
	cancel()
	<-done
	if n := attempts.Load(); n != 3 {
		t.Errorf("Init called %d times, want 3", n)
	}
	_ = c.Shutdown()
}

func TestShutdown(t *testing.T) {
	s := collecttest.NewH200(1)
	var shutdowns atomic.Int32
	s.ShutdownFunc = func() nvml.Return { shutdowns.Add(1); return nvml.SUCCESS }
	c := newCollector(t, s)
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if n := shutdowns.Load(); n != 1 {
		t.Errorf("nvml Shutdown called %d times", n)
	}
	if _, err := c.Health(context.Background()); !errors.Is(err, collect.ErrNotInitialized) {
		t.Errorf("Health after Shutdown: %v", err)
	}
}

// TestConcurrentUse runs polls against Init/Shutdown cycles under -race.
func TestConcurrentUse(t *testing.T) {
	c := newCollector(t, collecttest.NewH200(2))
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if info, err := c.GPUInfo(ctx); err == nil && len(info.GPUs) != 2 {
					t.Errorf("len(gpus) = %d", len(info.GPUs))
				}
				_, _ = c.Health(ctx)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			_ = c.Shutdown()
			_ = c.Init(ctx)
		}
	})
	wg.Wait()
}

func TestCUDAVersion(t *testing.T) {
	for v, want := range map[int]string{13000: "13.0", 12040: "12.4", 12020: "12.2", 11080: "11.8", 12090: "12.9"} {
		if got := collect.CUDAVersion(v); got != want {
			t.Errorf("CUDAVersion(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestErrorMatchesReturn(t *testing.T) {
	s := collecttest.NewH200(1)
	s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	_, err := newCollector(t, s).Health(context.Background())
	var ne *collect.Error
	if !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || !errors.As(err, &ne) || ne.Code != nvml.ERROR_GPU_IS_LOST {
		t.Errorf("err = %v", err)
	}
	if errors.Is(err, nvml.SUCCESS) {
		t.Error("error matches SUCCESS")
	}
}
