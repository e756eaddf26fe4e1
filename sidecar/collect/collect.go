// Package collect reads GPU telemetry through NVML and turns it into wire
// types. It is the only package of the sidecar that imports go-nvml.
//
// A Collector works over nvml.Interface so that tests can inject the go-nvml
// mock servers (pkg/nvml/mock/dgxh200 and friends) instead of a real driver.
// It never calls into NVML unless Init succeeded: with no driver loaded,
// go-nvml's cgo calls would crash the process instead of returning an error.
package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// ErrNotInitialized is wrapped by every error returned while NVML is not
// initialised; the wrapping error carries the reason.
var ErrNotInitialized = errors.New("nvml not initialized")

// Options configures a Collector. Zero values pick defaults.
type Options struct {
	Version  string                 // reported as sidecar_version
	Logger   *slog.Logger           // default: discard
	Now      func() time.Time       // default: time.Now
	Hostname func() (string, error) // default: os.Hostname
}

// Collector reads GPU telemetry. It is safe for concurrent use; concurrent
// reads run in parallel (NVML is thread-safe) while Init and Shutdown wait for
// them.
type Collector struct {
	lib      nvml.Interface
	version  string
	log      *slog.Logger
	now      func() time.Time
	hostname func() (string, error)

	mu      sync.RWMutex
	ready   bool  // NVML initialised; guards every NVML call
	initErr error // why the last Init failed; nil when ready
}

// New returns a Collector over lib, for example nvml.New() or a mock server.
// NVML is not initialised until Init is called.
func New(lib nvml.Interface, o Options) *Collector {
	c := &Collector{
		lib:      lib,
		version:  o.Version,
		log:      o.Logger,
		now:      o.Now,
		hostname: o.Hostname,
		initErr:  fmt.Errorf("%w: Init has not been called", ErrNotInitialized),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.hostname == nil {
		c.hostname = os.Hostname
	}
	return c
}

// Init initialises NVML unless it already is. On failure the reason is kept
// and reported by Health and GPUInfo until a later Init succeeds.
func (c *Collector) Init(ctx context.Context) (err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: init nvml: panic: %v", ErrNotInitialized, p)
			c.log.ErrorContext(ctx, "panic in nvml init", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
		if err != nil {
			c.initErr = err
		}
	}()
	if ret := c.lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("%w: init nvml: %w%s", ErrNotInitialized, retErr(ret), initHint(ret))
	}
	c.ready, c.initErr = true, nil
	return nil
}

// initHint explains the common init failures to an operator.
func initHint(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return " (libnvidia-ml.so.1 could not be loaded: is the NVIDIA driver installed and, in a container, was it started with --gpus all?)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return " (the NVIDIA kernel driver is not running)"
	case nvml.ERROR_NO_PERMISSION:
		return " (no permission to open the NVIDIA device nodes)"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return " (libnvidia-ml does not match the loaded kernel driver; reboot or reload the driver)"
	}
	return ""
}

// RetryInit calls Init every interval while NVML is not initialised, until
// ctx is done. It logs each failure and the eventual success.
func (c *Collector) RetryInit(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.Ready() == nil {
			continue
		}
		if err := c.Init(ctx); err != nil {
			c.log.WarnContext(ctx, "nvml init retry failed", "err", err.Error(), "retry_in", interval.String())
			continue
		}
		c.log.InfoContext(ctx, "nvml initialized on retry")
	}
}

// Ready returns nil when NVML is initialised and otherwise an error wrapping
// ErrNotInitialized that says why.
func (c *Collector) Ready() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ready {
		return nil
	}
	return c.initErr
}

// Shutdown releases NVML. Later calls to Health and GPUInfo fail with
// ErrNotInitialized until Init is called again.
func (c *Collector) Shutdown() (err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return nil
	}
	c.ready = false
	c.initErr = fmt.Errorf("%w: shut down", ErrNotInitialized)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("shut down nvml: panic: %v", p)
		}
	}()
	if ret := c.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("shut down nvml: %w", retErr(ret))
	}
	return nil
}

// Health reports the GPU count, or an error saying why NVML is unusable.
func (c *Collector) Health(ctx context.Context) (h *wire.Health, err error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil, c.initErr
	}
	defer c.recoverInto(ctx, "health", &err)
	n, ret := c.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("get device count: %w", retErr(ret))
	}
	return &wire.Health{Status: wire.StatusOK, GPUCount: n, SidecarVersion: c.version}, nil
}

// GPUInfo takes one fresh reading of every GPU. A GPU that fails is reported
// in its own entry; only a failure to initialise NVML or to count devices
// fails the whole call.
func (c *Collector) GPUInfo(ctx context.Context) (info *wire.GPUInfo, err error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil, c.initErr
	}
	defer c.recoverInto(ctx, "gpu-info", &err)

	info = &wire.GPUInfo{
		Timestamp:      c.now().UTC().Truncate(time.Millisecond),
		SidecarVersion: c.version,
		GPUs:           []wire.GPU{},
	}
	if h, err := c.hostname(); err == nil {
		info.Hostname = h
	} else {
		setErr(&info.Errors, "hostname", err.Error())
	}
	c.readSystem(info)

	n, ret := c.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("get device count: %w", retErr(ret))
	}
	info.GPUCount = n
	info.GPUs = make([]wire.GPU, n)
	for i := range n {
		info.GPUs[i] = c.readGPU(ctx, i)
	}
	return info, nil
}

// readSystem fills the node-level fields; failures go to info.Errors.
func (c *Collector) readSystem(info *wire.GPUInfo) {
	if v, ret := c.lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		info.DriverVersion = v
	} else if ret != nvml.ERROR_NOT_SUPPORTED {
		setErr(&info.Errors, "driver_version", ret.Error())
	}
	if v, ret := c.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		info.CUDAVersion = CUDAVersion(v)
	} else if ret != nvml.ERROR_NOT_SUPPORTED {
		setErr(&info.Errors, "cuda_version", ret.Error())
	}
	if v, ret := c.lib.SystemGetNVMLVersion(); ret == nvml.SUCCESS {
		info.NVMLVersion = v
	} else if ret != nvml.ERROR_NOT_SUPPORTED {
		setErr(&info.Errors, "nvml_version", ret.Error())
	}
}

// recoverInto turns a panic into an error as a last resort: a bug or an
// unexpected mock must not take the sidecar down.
func (c *Collector) recoverInto(ctx context.Context, op string, err *error) {
	if p := recover(); p != nil {
		c.log.ErrorContext(ctx, "panic while reading nvml", "op", op, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		*err = fmt.Errorf("%s: internal error: panic: %v", op, p)
	}
}

// CUDAVersion formats an NVML CUDA driver version: 13000 → "13.0",
// 12040 → "12.4".
func CUDAVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// Error is an NVML return code converted to an error at the boundary. Its
// message is rendered when the error is made, while the NVML library state is
// stable: go-nvml swaps its error-string function on library load and unload.
// errors.Is(err, nvml.ERROR_GPU_IS_LOST) matches on the code.
type Error struct {
	Code nvml.Return
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Is reports whether target is the same NVML return code.
func (e *Error) Is(target error) bool {
	r, ok := target.(nvml.Return)
	return ok && r == e.Code
}

// retErr converts ret to an error; SUCCESS becomes nil, never a non-nil
// error holding SUCCESS.
func retErr(ret nvml.Return) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	return &Error{Code: ret, msg: ret.Error()}
}

func setErr(m *map[string]string, field, msg string) {
	if *m == nil {
		*m = make(map[string]string)
	}
	(*m)[field] = msg
}
