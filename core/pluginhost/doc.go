// Package pluginhost runs MindRouter's WebAssembly plugins — API-format
// translators and backend adapters built with package sdk as GOOS=wasip1
// reactors — through wazero, on the gateway's hot path.
//
// # Lifecycle
//
// New (and Reload, for changed plugins) does, per plugin of plugins.yaml:
// read the file and check the optional sha256 pin; compile it once per
// isolation class and process (every Host of the process shares it: see
// shared.go), serialised process-wide and through the compilation cache
// (wazero#2459/#2547: never compile the same bytes concurrently); check the
// exports and their exact signatures (_initialize, mr_abi_version,
// mr_buf, mr_init, mr_call) and the imports against an allowlist (mr_v2.log,
// mr_v2.f32_format and f32_parse (floats.go), and the WASI functions the
// Go runtime needs; no path_open, no sockets);
// instantiate one instance, check mr_abi_version (major 2, minor ≤ ours),
// mr_init with the plugin's config as JSON, validate the manifest (name,
// kind as in plugins.yaml), run a self-test call (OpErrorEncode or
// OpErrorDecode; an error status passes, a trap does not), and fill the
// pool to min in the background. Errors name the plugin and file:
//
//	pluginhost: plugin "openai" (plugins/openai.wasm): bad export: missing export "mr_call"
//
// # Bundles
//
// A module may serve several components (sdk.NewBundle): plugins.yaml
// says kind: bundle, and its manifest has kind "bundle" with the
// components' manifests in Components, in index order. The manifest is
// checked per component as a module of one is checked — a name, unique in
// the bundle; kind translator or adapter; a supported ABI — with errors
// naming the component:
//
//	pluginhost: plugin "firstparty" (plugins/bundle.wasm): bad manifest: component 2 "vllm": name already used by component 1
//
// and the self-test runs once per component, addressed by its index in
// the call header (CallInput.Translator or Adapter). A module of one
// component must have the kind plugins.yaml gives it and no Components. A
// bundle is one Plugin with one pool: every instance serves every
// component, and the server uses the fused ops when a request's
// translator and adapter are in it. Reload treats a bundle like any
// plugin: a new build is a new version; replacing it by separate modules
// (or back) retires it and adds them.
//
// Inspect runs the same checks on a file without a plugins.yaml entry (for
// the conformance kit and a "plugin check" command).
//
// Precompile (and the internal/precompile command) fills the on-disk cache
// ahead of time, e.g. when building a container image: a cold compile of a
// 3.6 MB Go plugin takes 0.5–4 s, a cache hit tens of milliseconds.
//
// # Calls
//
// Plugin.Pin returns the current Version with a reference; Version.Call
// runs one op on a pooled instance; Release drops the reference. A stream
// pins once and uses that version to the end, so a hot reload never changes
// the state-blob layout under it. Plugin.Call pins around one call.
//
// A call writes the ABI call header, state, meta and payload straight into
// the guest's input buffer (its address is cached per instance; mr_buf is
// called only when a larger input arrives), calls mr_call through a cached
// api.Function with a per-instance stack, reads the result area in place,
// and copies it into the caller's Result, whose slices are reused. In
// trusted mode a call allocates nothing on the host.
//
// Any trap, timeout or protocol violation discards the instance (a Go
// runtime that threw is in an undefined state); plugin errors are data
// (*StatusError, instance kept; its message, which can echo client input,
// cut to 512 bytes on a UTF-8 boundary with "…").
//
// A trap writes one warning line: plugin, version, op, request id and a
// reason of at most 256 bytes (the Go runtime's "fatal error: ..." lines
// from the guest's stderr and wazero's error), at most 20 per second per
// plugin (the next line counts the suppressed ones). The guest's output
// during the call (a Go runtime prints a dozen stack lines) and wazero's
// stack trace go to one debug record only: output written during a call
// is held until the call ends, and emitted as ordinary plugin output when
// it did not trap.
//
// # Pools
//
// Each version has an explicit bounded pool: a LIFO stack of idle
// instances (the most recently used one is the likeliest to be in the CPU
// caches), a hand-off channel for waiters, and a live counter (not
// sync.Pool: wazero keeps every module linked until Close, so dropped
// instances would leak ~4.5 MiB each). Get takes an idle instance, else
// instantiates while live < max (the slow
// path, logged and counted: 2–6 ms and ~25–50k allocations), else waits
// until the caller's deadline (pool.wait_ms without one) and fails with
// ErrPoolTimeout. A ctx marked WithoutWaitLimit has no pool.wait_ms bound:
// the gateway marks the calls of a stream already streaming, so a chunk
// that waits for an instance while the process is short of CPU arrives
// late instead of cutting the stream (measured before: 1,000 slow streams
// at load ~21 on 2 cores lost hundreds to "no free plugin instance:
// waited 1s"). Waiters are served in arrival order. Put discards instances after an error, after max_calls,
// or once their linear memory passed pool.recycle_mb (48 MiB, at most 75%
// of memory_mb: a Go guest never shrinks its memory, so this gives back
// what one large call took), and replaces each at once in the background.
// The replacement inherits the discarded instance's slot: a discarded
// instance never counts against max, the pool never shrinks, and callers
// that trap again and again cannot instantiate on their request path ahead
// of others; a caller that finds no idle instance while replacements are
// on their way waits for one of them (in arrival order). So a trap costs
// its own request only: callers with good input keep being served while
// others trap continuously. Refill tops the pool up to min, and beyond
// while more callers wait than instances are on their way. Calls are
// CPU-bound and never block inside the guest, so max defaults to
// GOMAXPROCS+1.
//
// # Timeouts: strict and trusted modes
//
// wazero v1.12 offers no cheap way to stop a running guest. Without
// WithCloseOnContextDone a call cannot be interrupted, and because guest
// code runs in a non-preemptible trampoline, a long call also blocks every
// GC stop-the-world: one runaway plugin freezes the whole gateway. With it,
// wazero checks for cancellation at every loop back-edge (calling out to
// Go) and watches the context from a goroutine per call: the guest runs
// about 5× slower on real translators and each call costs ~0.3 µs and 3
// allocations more. The choice, per plugin (mode in plugins.yaml):
//
//   - strict (the default for every plugin not marked trusted): a Runtime
//     with WithCloseOnContextDone(true). Each call has a deadline of
//     call_timeout_ms, or the caller's ctx deadline if sooner. A call past
//     it returns ErrTimeout within about the timeout plus ~10 ms, the
//     instance is discarded and replaced; other plugins and goroutines keep
//     running throughout, and GC is not blocked for long (back-edge checks
//     are preemption points, if slow ones). The deadline is enforced by the
//     host's timekeeper goroutine, which sleeps in a raw nanosleep rather
//     than on a Go timer: a timer armed on the P that then runs the guest
//     is not serviced until the call ends (measured: a 300 ms deadline
//     fired after 1.8 s with both Ps busy). The timekeeper cancels the
//     instance's context; wazero closes the module. Each instance has one
//     context for its lifetime, so the host adds no allocation per call;
//     wazero adds 3 (its watcher goroutine). A caller's cancellation
//     without a deadline is checked before the call, not during it.
//   - trusted (first-party plugins that passed the conformance kit, fuzzing
//     included): a Runtime without termination checks, at full speed and
//     with zero allocations per call. A runaway call cannot be stopped. The
//     timekeeper tracks every in-flight call's start time and, when one
//     exceeds max(10 × call_timeout_ms, 2 s), logs plugin, op and request
//     id at error level, marks the version unhealthy (metric
//     mindrouter_plugin_info ... 0) and calls the OnStuckCall hook, where
//     the gateway may choose to exit and be restarted by its supervisor.
//     Limitation: once a GC starts while the call runs, the whole process
//     stalls, the timekeeper included, until the call returns — it catches
//     slow calls, not every infinite loop. That is the price of trusted.
//
// The timekeeper wakes every 10 ms (sooner for a strict deadline) while
// calls are being made; once none has started for 100 ms and none runs,
// it parks on a channel, and the next call's start wakes it: an idle
// gateway does not wake 100 times a second.
//
// Each isolation class (mode × memory_mb) has its own wazero Runtime per
// compilation cache, shared by the process's Hosts and closed with its
// last compiled module; all classes share one compilation cache (the mode
// is part of wazero's cache key). A Host's Close closes the instances of
// its versions still pinned, not the shared Runtime.
// Revisit when wazero releases cheap termination checks (PRs #2524, #2533:
// ~1.05× overhead): strict could then be the only mode.
//
// # Sandbox
//
// No filesystem, no network, no args; environment GOMEMLIMIT (75% of
// memory_mb) and GOGC only; linear memory capped at memory_mb
// (WithMemoryLimitPages: an allocation past it makes the Go runtime throw,
// a trap); crypto/rand as the random source (per-instance map seeds); real
// wall and monotonic clocks; nanosleep a no-op (a guest cannot park a
// gateway goroutine); stdout, stderr and mr_v2.log go to a per-plugin log
// limited to 20 lines/s (dropped lines are counted), each line cut to
// 1 KiB; anonymous module names; _initialize as the start function.
// Inputs above state_max_kb or max_payload_mb are refused (ErrTooLarge),
// results above them rejected.
//
// # Memory and payload limits
//
// memory_mb (default 1024) must be at least MemoryPerPayloadMB (32) ×
// max_payload_mb (default 32), or the configuration is refused at load:
// the first-party plugins parse JSON into a DOM and need up to 669 MiB for
// a chat body within the gateway's default limits (16 MiB, 1<<20 JSON
// values), and a translator's canonical output can be 1.83× its input
// (see the defaults in config.go for the measurements). The cap costs
// nothing until used: wazero commits linear memory only as a guest grows
// (measured: 9 idle first-party instances add the same 110 MiB of RSS
// under a 64, 1024 or 4096 MiB cap), and recycle_mb returns it after a
// large call (RSS back to 119 MiB after a 15 MB call; 223 MiB if kept).
// The worst case is pool.max × memory_mb when every instance serves a
// maximal body at once.
//
// # Hot reload
//
// Reload re-reads plugins.yaml and the wasm files; a plugin whose bytes or
// settings changed is loaded as a new Version through the full pipeline
// above and swapped in atomically (atomic.Pointer). The old version keeps
// serving its in-flight calls and pinned streams; its instances are closed
// when its last reference goes. A broken new version (unreadable,
// sha256 mismatch, failing checks or self-test) is refused: logged,
// counted, kept in Plugin.LastError, and the old version keeps serving.
// Removed plugins are retired the same way; new ones are added. Watch polls
// the files (mtime and size, sha256 on change), debounces one interval and
// reloads; SIGHUP reloads at once.
//
// # Metrics
//
// WriteMetrics writes, per plugin: calls by op, error statuses, traps,
// timeouts, protocol errors, pool failures, stuck calls, instantiations
// (and slow-path ones), discarded instances, dropped log lines, reloads,
// a call latency histogram, instances live/idle per live version, and
// version info. For a bundle, calls by component and op too
// (mindrouter_plugin_component_calls_total{plugin,component,op}; a fused
// op counts for its "translator+adapter" pair, e.g. "openai+vllm"), and
// for every plugin its components (mindrouter_plugin_component_info).
// Recording a call touches atomics only.
//
// # Native plugins
//
// A plugins.yaml entry with path "native:NAME" serves the sdk.Plugin
// registered with RegisterNative under NAME — plugin code compiled into
// the gateway (core/cmd/mindrouter registers the first-party plugins
// listed in package plugins/firstparty) — through the same Host API: Pin, Call, Manifest,
// pools, limits, metrics (sha256 "native:NAME"), reload. The server cannot
// tell it from a .wasm plugin. It is for measuring the WebAssembly tax and
// for tests: there is no sandbox, and calls cannot be interrupted (native
// plugins always run as trusted). NewNativePlugin serves one outside a Host.
//
// See package conformance for the plugin conformance kit.
package pluginhost
