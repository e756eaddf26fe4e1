package server

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// gpuFamily is one per-GPU metric: its value comes from a GPU entry and is
// skipped where the reading is absent.
type gpuFamily struct {
	name, help, typ string
	value           func(g *wire.GPU) (float64, bool)
}

var gpuFamilies = []gpuFamily{
	{"mindrouter_gpu_up", "1 if the GPU could be read, 0 if it failed as a whole (for example ERROR_GPU_IS_LOST).", "gauge",
		func(g *wire.GPU) (float64, bool) { return b2f(g.Error == ""), true }},
	{"mindrouter_gpu_utilization_percent", "Percent of time over the last sample period that a kernel was running on the GPU.", "gauge",
		func(g *wire.GPU) (float64, bool) { return intp(g.UtilizationGPU) }},
	{"mindrouter_gpu_memory_utilization_percent", "Percent of time over the last sample period that device memory was read or written.", "gauge",
		func(g *wire.GPU) (float64, bool) { return intp(g.UtilizationMemory) }},
	{"mindrouter_gpu_memory_total_bytes", "Total device memory in bytes.", "gauge",
		func(g *wire.GPU) (float64, bool) { return u64p(g.MemoryTotalBytes) }},
	{"mindrouter_gpu_memory_used_bytes", "Used device memory in bytes.", "gauge",
		func(g *wire.GPU) (float64, bool) { return u64p(g.MemoryUsedBytes) }},
	{"mindrouter_gpu_memory_free_bytes", "Free device memory in bytes.", "gauge",
		func(g *wire.GPU) (float64, bool) { return u64p(g.MemoryFreeBytes) }},
	{"mindrouter_gpu_temperature_celsius", "GPU core temperature in degrees Celsius.", "gauge",
		func(g *wire.GPU) (float64, bool) { return intp(g.TemperatureGPU) }},
	{"mindrouter_gpu_memory_temperature_celsius", "GPU memory (HBM) temperature in degrees Celsius.", "gauge",
		func(g *wire.GPU) (float64, bool) { return intp(g.TemperatureMemory) }},
	{"mindrouter_gpu_power_draw_watts", "Current power draw in watts.", "gauge",
		func(g *wire.GPU) (float64, bool) { return f64p(g.PowerDrawWatts) }},
	{"mindrouter_gpu_power_limit_watts", "Enforced power limit in watts.", "gauge",
		func(g *wire.GPU) (float64, bool) { return f64p(g.PowerLimitWatts) }},
	{"mindrouter_gpu_fan_speed_percent", "Fan speed in percent of maximum (absent on passively cooled GPUs).", "gauge",
		func(g *wire.GPU) (float64, bool) { return intp(g.FanSpeedPercent) }},
	{"mindrouter_gpu_sm_clock_hertz", "Current SM clock in hertz.", "gauge",
		func(g *wire.GPU) (float64, bool) { v, ok := intp(g.ClockSMMHz); return v * 1e6, ok }},
	{"mindrouter_gpu_memory_clock_hertz", "Current memory clock in hertz.", "gauge",
		func(g *wire.GPU) (float64, bool) { v, ok := intp(g.ClockMemoryMHz); return v * 1e6, ok }},
	{"mindrouter_gpu_energy_joules_total", "Energy consumed since the driver was loaded, in joules.", "counter",
		func(g *wire.GPU) (float64, bool) { v, ok := u64p(g.EnergyTotalMJ); return v / 1000, ok }},
	{"mindrouter_gpu_mig_enabled", "1 if MIG mode is enabled on the GPU.", "gauge",
		func(g *wire.GPU) (float64, bool) {
			if g.MIGMode == nil {
				return 0, false
			}
			return b2f(*g.MIGMode == wire.MIGEnabled), true
		}},
	{"mindrouter_gpu_processes", "Number of compute processes running on the GPU.", "gauge",
		func(g *wire.GPU) (float64, bool) { return float64(len(g.Processes)), g.Error == "" }},
}

// renderMetrics writes the Prometheus text exposition (format 0.0.4) of info.
// When err is set, NVML is not usable and only the sidecar's own series are
// written, with mindrouter_sidecar_nvml_up 0.
func renderMetrics(version string, info *wire.GPUInfo, err error) []byte {
	var w metricsWriter
	up := err == nil && info != nil

	w.header("mindrouter_sidecar_info", "Sidecar build and driver information.", "gauge")
	labels := [][2]string{{"version", version}}
	if up {
		labels = append(labels, [2]string{"driver_version", info.DriverVersion}, [2]string{"cuda_version", info.CUDAVersion})
	}
	w.sample("mindrouter_sidecar_info", labels, 1)

	w.header("mindrouter_sidecar_nvml_up", "1 if NVML is initialised and GPUs can be read.", "gauge")
	w.sample("mindrouter_sidecar_nvml_up", nil, b2f(up))
	if !up {
		return w.Bytes()
	}

	w.header("mindrouter_gpu_count", "Number of GPUs NVML reports.", "gauge")
	w.sample("mindrouter_gpu_count", nil, float64(info.GPUCount))

	gpuLabels := make([][][2]string, len(info.GPUs))
	for i := range info.GPUs {
		g := &info.GPUs[i]
		gpuLabels[i] = [][2]string{{"gpu", strconv.Itoa(g.Index)}, {"uuid", g.UUID}, {"name", g.Name}}
	}
	for _, f := range gpuFamilies {
		wroteHeader := false
		for i := range info.GPUs {
			v, ok := f.value(&info.GPUs[i])
			if !ok {
				continue
			}
			if !wroteHeader {
				w.header(f.name, f.help, f.typ)
				wroteHeader = true
			}
			w.sample(f.name, gpuLabels[i], v)
		}
	}

	w.perProcess(info, gpuLabels)
	w.readingErrors(info, gpuLabels)
	return w.Bytes()
}

func (w *metricsWriter) perProcess(info *wire.GPUInfo, gpuLabels [][][2]string) {
	const name = "mindrouter_gpu_process_memory_used_bytes"
	wroteHeader := false
	for i := range info.GPUs {
		for _, p := range info.GPUs[i].Processes {
			if p.GPUMemoryUsedBytes == nil {
				continue
			}
			if !wroteHeader {
				w.header(name, "Device memory used by one compute process, in bytes.", "gauge")
				wroteHeader = true
			}
			w.sample(name, append(gpuLabels[i][:3:3], [2]string{"pid", strconv.FormatUint(uint64(p.PID), 10)}), float64(*p.GPUMemoryUsedBytes))
		}
	}
}

func (w *metricsWriter) readingErrors(info *wire.GPUInfo, gpuLabels [][][2]string) {
	const name = "mindrouter_gpu_reading_error"
	wroteHeader := false
	for i := range info.GPUs {
		fields := make([]string, 0, len(info.GPUs[i].Errors))
		for f := range info.GPUs[i].Errors {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			if !wroteHeader {
				w.header(name, "1 for each reading that failed in the last poll (other than not supported).", "gauge")
				wroteHeader = true
			}
			w.sample(name, append(gpuLabels[i][:3:3], [2]string{"field", f}), 1)
		}
	}
}

type metricsWriter struct{ bytes.Buffer }

func (w *metricsWriter) header(name, help, typ string) {
	w.WriteString("# HELP " + name + " " + helpEscaper.Replace(help) + "\n")
	w.WriteString("# TYPE " + name + " " + typ + "\n")
}

func (w *metricsWriter) sample(name string, labels [][2]string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l[0] + `="` + labelEscaper.Replace(l[1]) + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatValue(v))
	w.WriteByte('\n')
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func intp(p *int) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p), true
}

func u64p(p *uint64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p), true
}

func f64p(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}
