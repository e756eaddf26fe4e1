package pluginhost

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Load-time check failures (wrapped in a *LoadError).
var (
	errExport   = errors.New("bad export")
	errImport   = errors.New("forbidden import")
	errVersion  = errors.New("unsupported ABI version")
	errManifest = errors.New("bad manifest")
	errChecksum = errors.New("sha256 mismatch")
	errSelfTest = errors.New("self-test failed")
)

const wasiModule = wasi_snapshot_preview1.ModuleName

// allowedImports is every import a plugin may have: the host log function,
// the float text functions (floats.go) and the WASI functions the Go runtime needs (no filesystem beyond the
// preopen probe and stdio, no sockets, no path_open).
var allowedImports = map[string]bool{
	abi.ImportModule + "." + abi.ImportLog:       true,
	abi.ImportModule + "." + abi.ImportF32Format: true,
	abi.ImportModule + "." + abi.ImportF32Parse:  true,
	wasiModule + ".sched_yield":                  true,
	wasiModule + ".proc_exit":                    true,
	wasiModule + ".args_get":                     true,
	wasiModule + ".args_sizes_get":               true,
	wasiModule + ".clock_time_get":               true,
	wasiModule + ".environ_get":                  true,
	wasiModule + ".environ_sizes_get":            true,
	wasiModule + ".fd_write":                     true,
	wasiModule + ".random_get":                   true,
	wasiModule + ".poll_oneoff":                  true,
	wasiModule + ".fd_close":                     true,
	wasiModule + ".fd_fdstat_get":                true,
	wasiModule + ".fd_fdstat_set_flags":          true,
	wasiModule + ".fd_prestat_get":               true,
	wasiModule + ".fd_prestat_dir_name":          true,
}

type signature struct{ params, results []api.ValueType }

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// requiredExports are the ABI v1 exports and their exact signatures.
var requiredExports = []struct {
	name string
	sig  signature
}{
	{abi.ExportInitialize, signature{nil, nil}},
	{abi.ExportABIVersion, signature{nil, []api.ValueType{i32}}},
	{abi.ExportBuf, signature{[]api.ValueType{i32}, []api.ValueType{i32}}},
	{abi.ExportInit, signature{[]api.ValueType{i32}, []api.ValueType{i64}}},
	{abi.ExportCall, signature{[]api.ValueType{i32, i32}, []api.ValueType{i64}}},
}

// checkModule inspects a compiled module before anything of it runs.
func checkModule(cm wazero.CompiledModule) error {
	var errs []error
	exports := cm.ExportedFunctions()
	for _, want := range requiredExports {
		def, ok := exports[want.name]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: missing export %q", errExport, want.name))
			continue
		}
		if !slices.Equal(def.ParamTypes(), want.sig.params) || !slices.Equal(def.ResultTypes(), want.sig.results) {
			errs = append(errs, fmt.Errorf("%w: export %q has signature %s, want %s", errExport, want.name,
				sigString(def.ParamTypes(), def.ResultTypes()), sigString(want.sig.params, want.sig.results)))
		}
	}
	for _, def := range cm.ImportedFunctions() {
		mod, name, _ := def.Import()
		if !allowedImports[mod+"."+name] {
			errs = append(errs, fmt.Errorf("%w %s.%s", errImport, mod, name))
		}
	}
	for _, def := range cm.ImportedMemories() {
		mod, name, _ := def.Import()
		errs = append(errs, fmt.Errorf("%w: memory %s.%s", errImport, mod, name))
	}
	return errors.Join(errs...)
}

func sigString(params, results []api.ValueType) string {
	s := "("
	for i, p := range params {
		if i > 0 {
			s += ","
		}
		s += api.ValueTypeName(p)
	}
	s += ")->("
	for i, r := range results {
		if i > 0 {
			s += ","
		}
		s += api.ValueTypeName(r)
	}
	return s + ")"
}

// checkVersion accepts the same major version and a minor no newer than ours.
func checkVersion(v uint32) error {
	major, minor := v>>16, v&0xffff
	if major != abi.VersionMajor || minor > abi.VersionMinor {
		return fmt.Errorf("%w: plugin speaks ABI %d.%d, host speaks %d.%d",
			errVersion, major, minor, abi.VersionMajor, abi.VersionMinor)
	}
	return nil
}

// rtClass is an isolation class. wazero applies the termination checks and
// the memory cap per Runtime, so each (mode, memory limit) pair gets one
// Runtime; all share one compilation cache. With the default limits that is
// two Runtimes: strict and trusted.
type rtClass struct {
	strict   bool
	memPages uint32
}

// newRuntime builds the Runtime of one class with the host modules plugins
// link against: WASI preview 1 (the allowlist above is enforced before
// instantiation) and mr_v2.
func newRuntime(ctx context.Context, c rtClass, cache wazero.CompilationCache) (wazero.Runtime, error) {
	rc := wazero.NewRuntimeConfigCompiler().
		WithCloseOnContextDone(c.strict).
		WithMemoryLimitPages(c.memPages).
		WithCompilationCache(cache)
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, fmt.Errorf("pluginhost: instantiate wasi: %w", err)
	}
	b := r.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostLog), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").
		Export(abi.ImportLog)
	_, err := ExportFloatFuncs(b).Instantiate(ctx)
	if err != nil {
		r.Close(ctx)
		return nil, fmt.Errorf("pluginhost: instantiate %s: %w", abi.ImportModule, err)
	}
	return r, nil
}

// moduleConfig is the sandbox of one instance: no filesystem, no network,
// no args, an environment of GOMEMLIMIT and GOGC only, real clocks, crypto
// randomness (distinct map-hash seeds per instance), nanosleep left a no-op
// (a guest cannot park a gateway goroutine), stdout/stderr into the
// plugin's rate-limited log through guestOutput (held during a call).
func moduleConfig(pc *PluginConfig, out *guestOutput) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(abi.ExportInitialize).
		WithEnv("GOMEMLIMIT", strconv.Itoa(pc.Limits.MemoryMB*3/4)+"MiB").
		WithEnv("GOGC", strconv.Itoa(pc.Limits.GOGC)).
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime().
		WithStdout(&out.stdout).
		WithStderr(&out.stderr)
}

// logLinesPerSecond bounds each plugin's log (see logSink).
const logLinesPerSecond = 20

// logSink is a plugin's log: guest stdout, stderr and mr_v2.log lines, at
// most logLinesPerSecond per plugin; the rest are counted and dropped.
type logSink struct {
	logger  *slog.Logger // already carries plugin=<name>
	window  atomic.Int64 // unix second of the current window
	count   atomic.Int32
	dropped *atomic.Uint64
}

func newLogSink(logger *slog.Logger, dropped *atomic.Uint64) *logSink {
	return &logSink{logger: logger, dropped: dropped}
}

func (s *logSink) allow() bool {
	now := time.Now().Unix()
	if w := s.window.Load(); w != now && s.window.CompareAndSwap(w, now) {
		s.count.Store(0)
	}
	if s.count.Add(1) > logLinesPerSecond {
		s.dropped.Add(1)
		return false
	}
	return true
}

// emit logs one guest line, cut to maxLogLine bytes on a UTF-8 boundary.
func (s *logSink) emit(level slog.Level, stream string, line []byte, attrs ...slog.Attr) {
	if len(line) == 0 || !s.allow() {
		return
	}
	var text string
	if len(line) > maxLogLine {
		text = string(line[:cutUTF8(line, maxLogLine-len(ellipsis))]) + ellipsis
	} else {
		text = string(line)
	}
	attrs = append(attrs, slog.String("stream", stream), slog.String("line", text))
	s.logger.LogAttrs(context.Background(), level, "plugin output", attrs...)
}

type sinkKey struct{}

// instanceKey carries the calling *instance in its call context.
type instanceKey struct{}

// reqIDAttr renders a call's request id as 16 hex digits: the gateway's
// request ids ("chatcmpl-<32 hex>") begin with these digits, so plugin log
// lines and access log lines can be matched.
func reqIDAttr(id uint64) slog.Attr {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[id&0xf]
		id >>= 4
	}
	return slog.String("req_id", string(b[:]))
}

// hostLog implements mr_v2.log(level, ptr, len). The sink is found by the
// calling module (registered when the instance is created) or, during
// _initialize, by the context InstantiateModule was given.
func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	level := slog.Level(int32(uint32(stack[0])))
	ptr, n := uint32(stack[1]), uint32(stack[2])
	n = min(n, maxLogLine+1) // one more byte than a line may have: emit sees it must cut
	sink, _ := guestSinks.Load(mod)
	s, _ := sink.(*logSink)
	if s == nil {
		s, _ = ctx.Value(sinkKey{}).(*logSink)
	}
	if s == nil {
		return
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		return
	}
	if in, ok := ctx.Value(instanceKey{}).(*instance); ok {
		s.emit(level, "log", b, reqIDAttr(in.reqID.Load()))
		return
	}
	s.emit(level, "log", b)
}
