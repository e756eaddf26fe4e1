// Package wire holds the JSON types that the MindRouter GPU sidecar serves and
// a small client that the gateway uses to poll a sidecar.
//
// The package imports only the standard library so that the gateway, which is
// built with CGO_ENABLED=0, can import it without pulling in go-nvml.
//
// Optional readings are pointers: a nil pointer (JSON null or an absent field)
// means the GPU does not support the reading (NVML ERROR_NOT_SUPPORTED) or the
// reading failed; failures other than "not supported" are listed in the
// GPU's Errors map.
package wire

import "time"

// HeaderKey is the request header that carries the shared sidecar secret.
const HeaderKey = "X-Sidecar-Key"

// DefaultAddr is the address a sidecar listens on unless configured otherwise.
const DefaultAddr = ":8007"

// Status values used in Health.Status and ErrorResponse.Status.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// Health is the body of GET /health.
//
// On success Status is "ok" and GPUCount is set. When NVML is not available
// the sidecar answers 503 with an ErrorResponse ({"status":"error",
// "reason":...}); Client.Health turns that into an *Error.
type Health struct {
	Status         string `json:"status"`
	GPUCount       int    `json:"gpu_count"`
	SidecarVersion string `json:"sidecar_version"`
}

// ErrorResponse is the body of every non-2xx answer (401, 404, 405, 503).
type ErrorResponse struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// GPUInfo is the body of GET /gpu-info: one fresh reading of every GPU on the
// node.
type GPUInfo struct {
	Hostname       string    `json:"hostname"`
	Timestamp      time.Time `json:"timestamp"` // RFC 3339, UTC
	DriverVersion  string    `json:"driver_version"`
	CUDAVersion    string    `json:"cuda_version"` // e.g. "13.0" from NVML 13000
	NVMLVersion    string    `json:"nvml_version,omitempty"`
	GPUCount       int       `json:"gpu_count"`
	SidecarVersion string    `json:"sidecar_version"`
	GPUs           []GPU     `json:"gpus"`
	// Errors holds node-level readings (driver_version, cuda_version, ...)
	// that failed, keyed by JSON field name.
	Errors map[string]string `json:"errors,omitempty"`
}

// GPU is one device's reading. Index is always set; every other field may be
// missing if the device could not be read (see Error and Errors).
type GPU struct {
	Index             int    `json:"index"`
	Name              string `json:"name,omitempty"`
	UUID              string `json:"uuid,omitempty"`
	PCIBusID          string `json:"pci_bus_id,omitempty"`
	ComputeCapability string `json:"compute_capability,omitempty"` // e.g. "9.0"

	MemoryTotalBytes *uint64 `json:"memory_total_bytes,omitempty"`
	MemoryUsedBytes  *uint64 `json:"memory_used_bytes,omitempty"`
	MemoryFreeBytes  *uint64 `json:"memory_free_bytes,omitempty"`
	// The *GB fields repeat the memory readings in GiB (2^30 bytes), rounded
	// to two decimals, as the Python sidecar reported them.
	MemoryTotalGB *float64 `json:"memory_total_gb,omitempty"`
	MemoryUsedGB  *float64 `json:"memory_used_gb,omitempty"`
	MemoryFreeGB  *float64 `json:"memory_free_gb,omitempty"`

	UtilizationGPU    *int `json:"utilization_gpu,omitempty"`    // percent
	UtilizationMemory *int `json:"utilization_memory,omitempty"` // percent

	TemperatureGPU    *int `json:"temperature_gpu,omitempty"`    // Celsius
	TemperatureMemory *int `json:"temperature_memory,omitempty"` // Celsius (HBM)

	PowerDrawWatts  *float64 `json:"power_draw_watts,omitempty"`
	PowerLimitWatts *float64 `json:"power_limit_watts,omitempty"` // enforced limit
	FanSpeedPercent *int     `json:"fan_speed_percent,omitempty"` // absent on passively cooled cards

	ClockSMMHz     *int `json:"clock_sm_mhz,omitempty"`
	ClockMemoryMHz *int `json:"clock_memory_mhz,omitempty"`

	// EnergyTotalMJ is the total energy consumed since the driver was
	// loaded, in millijoules.
	EnergyTotalMJ *uint64 `json:"energy_total_mj,omitempty"`

	MIGMode *string `json:"mig_mode,omitempty"` // "enabled" or "disabled"

	Processes []Process `json:"processes"`

	// Errors holds readings that failed for a reason other than "not
	// supported", keyed by JSON field name, e.g. {"power_draw_watts":
	// "ERROR_UNKNOWN"}.
	Errors map[string]string `json:"errors,omitempty"`
	// Error is set when the device as a whole could not be read, for example
	// ERROR_GPU_IS_LOST. Fields read before the failure may still be present.
	Error string `json:"error,omitempty"`
}

// Process is one compute process running on a GPU.
type Process struct {
	PID uint32 `json:"pid"`
	// GPUMemoryUsedBytes is nil when NVML cannot attribute memory to the
	// process (for example under MIG without the right privileges).
	GPUMemoryUsedBytes *uint64 `json:"gpu_memory_used_bytes,omitempty"`
}

// MIG mode values of GPU.MIGMode.
const (
	MIGEnabled  = "enabled"
	MIGDisabled = "disabled"
)
