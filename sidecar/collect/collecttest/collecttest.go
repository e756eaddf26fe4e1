// Package collecttest builds go-nvml mock servers that behave like a real
// NVIDIA H200 node, for tests of the sidecar that need no GPU.
//
// It starts from go-nvml's dgxh200 fake and fills in the readings that fake
// leaves unset, with values close to those seen on a real idle H200: fan
// speed answers ERROR_NOT_SUPPORTED (passively cooled), the CUDA driver
// version is 13000, and GPU 0 runs two compute processes.
package collecttest

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// Reading values every device of NewH200 reports (GPU i adds i to
// utilization and temperature).
const (
	DriverVersion   = "580.159.04"
	CUDADriver      = 13000
	PowerMilliwatts = 78000
	LimitMilliwatts = 700000
	EnergyMJ        = 123456789
	ClockSMMHz      = 345
	ClockMemMHz     = 3201
	MemTempC        = 40
	UsedBytes       = 4 << 30
	ProcPID         = 4242
	ProcBytes       = 3 << 30
	HiddenProcPID   = 4243 // its memory is NVML_VALUE_NOT_AVAILABLE
)

// NewH200 returns an n-GPU H200 mock server with every reading the sidecar
// uses filled in.
func NewH200(n int) *server.Server {
	s := dgxh200.NewWithGPUs(gpus.Multiple(n, gpus.H200_SXM5_141GB)...)
	s.DriverVersion = DriverVersion
	s.CudaDriverVersion = CUDADriver
	for i := range s.Devices {
		FillReadings(Device(s, i))
	}
	return s
}

// Device returns device i of s as the mock type, to override its funcs.
func Device(s *server.Server, i int) *server.Device {
	return s.Devices[i].(*server.Device)
}

// FillReadings sets the funcs the dgxh200 fake leaves nil.
func FillReadings(d *server.Device) {
	i := d.Index
	d.MemoryInfo.Used = UsedBytes
	d.MemoryInfo.Free = d.MemoryInfo.Total - UsedBytes
	busID := fmt.Sprintf("00000000:%02X:00.0", 0x18+i)
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId, Bus: uint32(0x18 + i)}
		for j := range busID {
			p.BusId[j] = int8(busID[j])
		}
		return p, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: uint32(10 + i), Memory: 5}, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		return uint32(30 + i), nvml.SUCCESS
	}
	d.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
		for k := range fv {
			if fv[k].FieldId != nvml.FI_DEV_MEMORY_TEMP {
				fv[k].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				continue
			}
			fv[k].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
			fv[k].NvmlReturn = uint32(nvml.SUCCESS)
			binary.NativeEndian.PutUint32(fv[k].Value[:], MemTempC)
		}
		return nvml.SUCCESS
	}
	d.GetFanSpeedFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return PowerMilliwatts, nvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return LimitMilliwatts, nvml.SUCCESS }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return EnergyMJ, nvml.SUCCESS }
	d.GetClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		switch t {
		case nvml.CLOCK_SM:
			return ClockSMMHz, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return ClockMemMHz, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		if i != 0 {
			return nil, nvml.SUCCESS
		}
		return []nvml.ProcessInfo{
			{Pid: ProcPID, UsedGpuMemory: ProcBytes},
			{Pid: HiddenProcPID, UsedGpuMemory: math.MaxUint64},
		}, nvml.SUCCESS
	}
}
