package collect

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime/debug"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// gpuReader reads one device. Each reading goes through read, which sorts the
// NVML return into "got it", "not supported" (field left nil), "failed"
// (recorded in g.Errors) or "device gone" (recorded in g.Error; later readings
// are skipped).
type gpuReader struct {
	c   *Collector
	ctx context.Context
	g   *wire.GPU
	dev nvml.Device
}

// fatalReturns mean the device itself is unusable, not just one reading.
func isFatal(ret nvml.Return) bool {
	return ret == nvml.ERROR_GPU_IS_LOST || ret == nvml.ERROR_RESET_REQUIRED || ret == nvml.ERROR_UNINITIALIZED
}

// read runs fn, which performs one NVML call and returns its code, and
// reports whether the reading succeeded. A panic inside fn is recorded as a
// failed reading.
func (r *gpuReader) read(field string, fn func() nvml.Return) (ok bool) {
	if r.g.Error != "" {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			r.c.log.ErrorContext(r.ctx, "panic while reading gpu", "gpu", r.g.Index, "field", field,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			setErr(&r.g.Errors, field, fmt.Sprintf("internal error: panic: %v", p))
			ok = false
		}
	}()
	ret := fn()
	switch {
	case ret == nvml.SUCCESS:
		return true
	case ret == nvml.ERROR_NOT_SUPPORTED:
		return false
	case isFatal(ret):
		r.g.Error = fmt.Sprintf("read %s of gpu %d: %s", field, r.g.Index, ret.Error())
		return false
	default:
		setErr(&r.g.Errors, field, ret.Error())
		return false
	}
}

// readGPU reads every field of device i. It never fails as a whole: problems
// are reported inside the returned entry.
func (c *Collector) readGPU(ctx context.Context, i int) wire.GPU {
	g := wire.GPU{Index: i, Processes: []wire.Process{}}
	r := &gpuReader{c: c, ctx: ctx, g: &g}

	var dev nvml.Device
	var ret nvml.Return
	if !r.read("handle", func() nvml.Return { dev, ret = c.lib.DeviceGetHandleByIndex(i); return ret }) {
		if g.Error == "" {
			g.Error = fmt.Sprintf("get handle of gpu %d: %s", i, firstErr(g.Errors, "handle", "not supported"))
		}
		g.Errors = nil
		return g
	}
	if dev == nil {
		g.Error = fmt.Sprintf("get handle of gpu %d: nil device", i)
		return g
	}
	r.dev = dev
	r.identity()
	r.memory()
	r.utilization()
	r.thermal()
	r.power()
	r.clocks()
	r.mig()
	r.processes()
	return g
}

func firstErr(m map[string]string, key, def string) string {
	if v, ok := m[key]; ok {
		return v
	}
	return def
}

func (r *gpuReader) identity() {
	d, g := r.dev, r.g
	r.read("name", func() (ret nvml.Return) { g.Name, ret = d.GetName(); return })
	r.read("uuid", func() (ret nvml.Return) { g.UUID, ret = d.GetUUID(); return })
	var pci nvml.PciInfo
	if r.read("pci_bus_id", func() (ret nvml.Return) { pci, ret = d.GetPciInfo(); return }) {
		g.PCIBusID = cString(pci.BusId[:])
	}
	var major, minor int
	if r.read("compute_capability", func() (ret nvml.Return) { major, minor, ret = d.GetCudaComputeCapability(); return }) {
		g.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
}

func (r *gpuReader) memory() {
	var m nvml.Memory
	if !r.read("memory", func() (ret nvml.Return) { m, ret = r.dev.GetMemoryInfo(); return }) {
		return
	}
	g := r.g
	g.MemoryTotalBytes, g.MemoryUsedBytes, g.MemoryFreeBytes = &m.Total, &m.Used, &m.Free
	g.MemoryTotalGB, g.MemoryUsedGB, g.MemoryFreeGB = ptr(gib(m.Total)), ptr(gib(m.Used)), ptr(gib(m.Free))
}

func (r *gpuReader) utilization() {
	var u nvml.Utilization
	if r.read("utilization", func() (ret nvml.Return) { u, ret = r.dev.GetUtilizationRates(); return }) {
		r.g.UtilizationGPU, r.g.UtilizationMemory = ptr(int(u.Gpu)), ptr(int(u.Memory))
	}
}

func (r *gpuReader) thermal() {
	var t, fan uint32
	if r.read("temperature_gpu", func() (ret nvml.Return) { t, ret = r.dev.GetTemperature(nvml.TEMPERATURE_GPU); return }) {
		r.g.TemperatureGPU = ptr(int(t))
	}
	fv := []nvml.FieldValue{{FieldId: nvml.FI_DEV_MEMORY_TEMP}}
	if r.read("temperature_memory", func() nvml.Return {
		if ret := r.dev.GetFieldValues(fv); ret != nvml.SUCCESS {
			return ret
		}
		return nvml.Return(fv[0].NvmlReturn)
	}) {
		if v, ok := fieldUint(fv[0]); ok {
			r.g.TemperatureMemory = ptr(int(v))
		}
	}
	if r.read("fan_speed_percent", func() (ret nvml.Return) { fan, ret = r.dev.GetFanSpeed(); return }) {
		r.g.FanSpeedPercent = ptr(int(fan))
	}
}

func (r *gpuReader) power() {
	var mw, limit uint32
	var mj uint64
	if r.read("power_draw_watts", func() (ret nvml.Return) { mw, ret = r.dev.GetPowerUsage(); return }) {
		r.g.PowerDrawWatts = ptr(float64(mw) / 1000)
	}
	if r.read("power_limit_watts", func() (ret nvml.Return) { limit, ret = r.dev.GetEnforcedPowerLimit(); return }) {
		r.g.PowerLimitWatts = ptr(float64(limit) / 1000)
	}
	if r.read("energy_total_mj", func() (ret nvml.Return) { mj, ret = r.dev.GetTotalEnergyConsumption(); return }) {
		r.g.EnergyTotalMJ = &mj
	}
}

func (r *gpuReader) clocks() {
	var sm, mem uint32
	if r.read("clock_sm_mhz", func() (ret nvml.Return) { sm, ret = r.dev.GetClockInfo(nvml.CLOCK_SM); return }) {
		r.g.ClockSMMHz = ptr(int(sm))
	}
	if r.read("clock_memory_mhz", func() (ret nvml.Return) { mem, ret = r.dev.GetClockInfo(nvml.CLOCK_MEM); return }) {
		r.g.ClockMemoryMHz = ptr(int(mem))
	}
}

func (r *gpuReader) mig() {
	var current int
	if r.read("mig_mode", func() (ret nvml.Return) { current, _, ret = r.dev.GetMigMode(); return }) {
		mode := wire.MIGDisabled
		if current == nvml.DEVICE_MIG_ENABLE {
			mode = wire.MIGEnabled
		}
		r.g.MIGMode = &mode
	}
}

func (r *gpuReader) processes() {
	var procs []nvml.ProcessInfo
	if !r.read("processes", func() (ret nvml.Return) { procs, ret = r.dev.GetComputeRunningProcesses(); return }) {
		return
	}
	for _, p := range procs {
		wp := wire.Process{PID: p.Pid}
		// NVML_VALUE_NOT_AVAILABLE is (unsigned long long)-1.
		if p.UsedGpuMemory != math.MaxUint64 {
			wp.GPUMemoryUsedBytes = ptr(p.UsedGpuMemory)
		}
		r.g.Processes = append(r.g.Processes, wp)
	}
}

// fieldUint decodes an NVML field value of an integer type.
func fieldUint(v nvml.FieldValue) (uint64, bool) {
	b := v.Value[:]
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return binary.NativeEndian.Uint64(b), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		if n := int64(binary.NativeEndian.Uint64(b)); n >= 0 {
			return uint64(n), true
		}
	case nvml.VALUE_TYPE_SIGNED_INT:
		if n := int32(binary.NativeEndian.Uint32(b)); n >= 0 {
			return uint64(n), true
		}
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.NativeEndian.Uint16(b)), true
	case nvml.VALUE_TYPE_DOUBLE:
		if f := math.Float64frombits(binary.NativeEndian.Uint64(b)); f >= 0 && !math.IsNaN(f) {
			return uint64(f), true
		}
	}
	return 0, false
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func gib(b uint64) float64 { return math.Round(float64(b)/(1<<30)*100) / 100 }

func ptr[T any](v T) *T { return &v }
