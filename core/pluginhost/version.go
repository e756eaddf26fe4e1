package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// initTimeout bounds instantiation (_initialize), mr_abi_version and
// mr_init of strict plugins.
const initTimeout = 10 * time.Second

// Plugin is a named plugin. Its current Version changes on hot reload; the
// Plugin (and its metrics) stays.
type Plugin struct {
	name    string
	host    *Host // nil for native plugins
	current atomic.Pointer[Version]
	metrics pluginMetrics
	seq     atomic.Uint64
	lastErr atomic.Pointer[error]
	trapLog trapLog

	partsMu sync.Mutex
	parts   []*partCounter // a bundle's per-component counters, by name
}

// Name returns the plugin's name from plugins.yaml.
func (p *Plugin) Name() string { return p.name }

// Manifest returns the manifest of the current version (zero once closed).
func (p *Plugin) Manifest() sdk.Manifest {
	if v := p.current.Load(); v != nil {
		return v.manifest
	}
	return sdk.Manifest{}
}

// Pin returns the current version with its reference count raised, or nil
// when the plugin was removed or the host closed. A stream pins once and
// calls that version until Release, so it finishes on the version (and
// state-blob layout) it started with even if a reload swaps in another.
// Pin does not allocate.
func (p *Plugin) Pin() *Version {
	for {
		v := p.current.Load()
		if v == nil {
			return nil
		}
		if v.acquire() {
			return v
		}
		// v was retired and released between Load and acquire: reload.
	}
}

// Call pins the current version for one call.
func (p *Plugin) Call(ctx context.Context, op abi.Op, in CallInput, out *Result) error {
	v := p.Pin()
	if v == nil {
		return fmt.Errorf("pluginhost: plugin %q %s: %w", p.name, op, ErrClosed)
	}
	err := v.Call(ctx, op, in, out)
	v.Release()
	return err
}

// LastError is the error of the last failed load of this plugin during a
// reload, or nil when the last attempt succeeded.
func (p *Plugin) LastError() error {
	if e := p.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// swap makes v current (nil: remove) and retires the previous version.
func (p *Plugin) swap(v *Version) {
	if p.host != nil {
		defer p.host.gen.Add(1)
	}
	if old := p.current.Swap(v); old != nil {
		old.Release() // the plugin's own reference
	}
}

// Version is one loaded build of a plugin with its own instance pool.
// Calls on a Version are safe for concurrent use.
type Version struct {
	plugin      *Plugin
	host        *Host // nil for native plugins
	seq         uint64
	cfg         PluginConfig // defaults applied
	sha         string
	fingerprint string
	manifest    sdk.Manifest
	mod         *compiled // nil for native plugins
	sink        *logSink
	factory     func() *sdk.Plugin // native plugins
	pool        *pool
	// A bundle's component counters by index, and by translator × adapter
	// index (t*len(parts)+a) for fused calls; nil for a module of one.
	parts, fused []*partCounter
	loaded       time.Time

	strict     bool
	timeout    time.Duration
	stateMax   int
	payloadMax int

	answers answers // response shapes its calls left (answers.go)

	refs      atomic.Int64 // 1 for being current + 1 per Pin
	unhealthy atomic.Bool
	destroyed chan struct{}
}

// Manifest returns this version's manifest.
func (v *Version) Manifest() sdk.Manifest { return v.manifest }

// MaxPayload is the largest call payload and meta this version takes, in
// bytes (limits.max_payload_mb); 0 for none.
func (v *Version) MaxPayload() int { return v.payloadMax }

// Healthy is false once the watchdog saw a call of this version overrun its
// hard limit.
func (v *Version) Healthy() bool { return !v.unhealthy.Load() }

// VersionStats describes a version for diagnostics and the conformance kit.
type VersionStats struct {
	Seq       uint64 // 1 for the first load of the plugin, then +1 per reload
	SHA256    string
	Mode      Mode
	Loaded    time.Time
	Live      int    // instances in existence
	Idle      int    // of which idle
	MaxMemory uint32 // largest linear memory of a live instance after its last call, bytes
	Healthy   bool
}

// Stats returns v's current figures.
func (v *Version) Stats() VersionStats {
	live, idle, mem := v.pool.stats()
	return VersionStats{Seq: v.seq, SHA256: v.sha, Mode: v.cfg.Mode, Loaded: v.loaded,
		Live: live, Idle: idle, MaxMemory: mem, Healthy: v.Healthy()}
}

func (v *Version) acquire() bool {
	for {
		n := v.refs.Load()
		if n <= 0 {
			return false
		}
		if v.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference taken by Pin. When a retired version's last
// reference goes, its instances are closed.
func (v *Version) Release() {
	if v == nil {
		return
	}
	if v.refs.Add(-1) == 0 {
		go v.destroy()
	}
}

func (v *Version) destroy() {
	v.pool.close()
	if v.host != nil {
		v.host.releaseCompiled(v.mod)
		v.host.forget(v)
	}
	close(v.destroyed)
}

// Call runs op on a pooled instance. It returns nil, a *StatusError (the
// plugin reported an error; out is filled), or an error wrapping ErrTrap,
// ErrTimeout, ErrProtocol, ErrPoolTimeout, ErrClosed or ErrTooLarge. In
// trusted mode it does not allocate once out's slices have grown.
func (v *Version) Call(ctx context.Context, op abi.Op, in CallInput, out *Result) error {
	if v == nil {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return v.errorf(op, err, "before the call")
	}
	start := mono()
	inst, err := v.pool.get(ctx)
	if err != nil {
		v.plugin.metrics.poolFailures.Add(1)
		return v.errorf(op, err, "acquire instance")
	}
	bad, err := inst.do(ctx, op, &in, out)
	v.pool.put(inst, bad)
	v.plugin.metrics.record(op, out.Status, err, mono()-start)
	v.recordPart(op, &in)
	return err
}

// CallFresh runs op on a new instance that is closed afterwards: a
// diagnostic (determinism checks), far too slow for the request path.
func (v *Version) CallFresh(ctx context.Context, op abi.Op, in CallInput, out *Result) error {
	inst, _, err := v.instantiate(ctx, false)
	if err != nil {
		return err
	}
	p := v.pool
	p.mu.Lock()
	p.all[inst] = struct{}{} // visible to the timekeeper
	p.mu.Unlock()
	_, err = inst.do(ctx, op, &in, out)
	p.mu.Lock()
	delete(p.all, inst)
	p.mu.Unlock()
	inst.close()
	return err
}

func (v *Version) errorf(op abi.Op, sentinel error, format string, a ...any) error {
	return fmt.Errorf("pluginhost: plugin %q %s: %w: %s", v.plugin.name, op, sentinel, fmt.Sprintf(format, a...))
}

func (v *Version) logger() *slog.Logger { return v.sink.logger }

func (v *Version) newInstance(ctx context.Context) (*instance, error) {
	in, _, err := v.instantiate(ctx, false)
	if err == nil {
		v.plugin.metrics.instantiations.Add(1)
	}
	return in, err
}

// instantiate creates an instance and initialises it: _initialize,
// mr_abi_version, mr_init(config). It returns the manifest JSON when
// manifest is set.
func (v *Version) instantiate(ctx context.Context, manifest bool) (*instance, []byte, error) {
	if v.factory != nil {
		return v.instantiateNative(manifest)
	}
	if v.strict {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, initTimeout)
		defer cancel()
	}
	ictx := experimental.WithMemoryAllocator(context.WithValue(ctx, sinkKey{}, v.sink), memAllocator)
	out := newGuestOutput(v.sink)
	mod, err := v.mod.rt.InstantiateModule(ictx, v.mod.cm, moduleConfig(&v.cfg, out))
	if err != nil {
		return nil, nil, fmt.Errorf("instantiate: %w", err)
	}
	in := &instance{v: v, mod: mod, mem: mod.Memory(), out: out,
		call: mod.ExportedFunction(abi.ExportCall), buf: mod.ExportedFunction(abi.ExportBuf)}
	// One context per instance for all its calls; the timekeeper cancels
	// it when a strict call overruns, and the instance is then discarded.
	// The instance rides in the context too, so mr_v2.log lines can name
	// the request the instance is serving.
	base := context.WithValue(context.WithValue(context.Background(), sinkKey{}, v.sink), instanceKey{}, in)
	in.ctx, in.cancel = context.WithCancel(base)
	guestSinks.Store(mod, v.sink)
	payload, err := in.initGuest(ictx, manifest)
	if err != nil {
		in.close()
		return nil, nil, err
	}
	return in, payload, nil
}

func (in *instance) initGuest(ctx context.Context, manifest bool) ([]byte, error) {
	if in.mem == nil {
		return nil, fmt.Errorf("%w: no memory export", errExport)
	}
	var st [1]uint64
	if err := in.mod.ExportedFunction(abi.ExportABIVersion).CallWithStack(ctx, st[:]); err != nil {
		return nil, fmt.Errorf("%s: %w", abi.ExportABIVersion, err)
	}
	if err := checkVersion(uint32(st[0])); err != nil {
		return nil, err
	}
	conf := in.v.cfg.Config
	if err := in.grow(ctx, 0, uint32(max(len(conf), 1))); err != nil {
		return nil, fmt.Errorf("%s: %w", abi.ExportBuf, err)
	}
	in.mem.Write(in.inPtr, conf)
	st[0] = uint64(len(conf))
	if err := in.mod.ExportedFunction(abi.ExportInit).CallWithStack(ctx, st[:]); err != nil {
		return nil, fmt.Errorf("%s: %w", abi.ExportInit, err)
	}
	ptr, n := abi.Unpack(st[0])
	view, ok := in.mem.Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("%w: %s result outside memory", errManifest, abi.ExportInit)
	}
	return initResult(view, manifest)
}

// initResult checks an mr_init result area and copies the manifest out.
func initResult(area []byte, manifest bool) ([]byte, error) {
	r, err := abi.ParseResult(area)
	if err != nil {
		return nil, fmt.Errorf("%w: %s result: %v", errManifest, abi.ExportInit, err)
	}
	if r.Status != abi.StatusOK {
		return nil, fmt.Errorf("%w: %s: %s: %s", errManifest, abi.ExportInit, r.Status, r.Error)
	}
	if !manifest {
		return nil, nil
	}
	return append([]byte(nil), r.Payload...), nil
}

func (v *Version) instantiateNative(manifest bool) (*instance, []byte, error) {
	p := v.factory()
	payload, err := initResult(p.Init(v.cfg.Config), manifest)
	if err != nil {
		return nil, nil, err
	}
	return &instance{v: v, native: p}, payload, nil
}

// parseManifest validates the manifest JSON against plugins.yaml: a name,
// the kind plugins.yaml gives (any kind when it gives none, for Inspect),
// a supported ABI, and for a bundle each component (checkParts).
func parseManifest(raw []byte, pc *PluginConfig) (sdk.Manifest, error) {
	var m sdk.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%w: %v", errManifest, err)
	}
	var errs []error
	if m.Name == "" {
		errs = append(errs, fmt.Errorf("%w: empty name", errManifest))
	}
	if pc.Kind != "" && m.Kind != pc.Kind { // "" only from Inspect
		hint := ""
		switch {
		case m.Kind == sdk.KindBundle:
			hint = " (a module of several components: use kind: bundle)"
		case pc.Kind == sdk.KindBundle:
			hint = " (a module of one component: use its kind)"
		}
		errs = append(errs, fmt.Errorf("%w: kind %q, plugins.yaml says %q%s", errManifest, m.Kind, pc.Kind, hint))
	}
	if m.ABI != 0 {
		if err := checkVersion(m.ABI); err != nil {
			errs = append(errs, fmt.Errorf("%w: %v", errManifest, err))
		}
	}
	errs = append(errs, checkParts(&m)...)
	return m, errors.Join(errs...)
}

// maxComponents is the most components a bundle may have: a call header
// names one with a u16.
const maxComponents = 1 << 16

// checkParts checks the manifest's kind and, for a bundle, each component
// as a module of one would be checked (a name, unique in the bundle; kind
// translator or adapter; a supported ABI), with errors naming the
// component by index and name.
func checkParts(m *sdk.Manifest) []error {
	var errs []error
	add := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{errManifest}, a...)...))
	}
	switch m.Kind {
	case sdk.KindTranslator, sdk.KindAdapter:
		if len(m.Components) > 0 {
			add("a %s lists %d components; only a bundle (kind %q) has components", m.Kind, len(m.Components), sdk.KindBundle)
		}
		return errs
	case sdk.KindBundle:
	default:
		add("kind %q: must be translator, adapter or bundle", m.Kind)
		return errs
	}
	switch n := len(m.Components); {
	case n == 0:
		add("bundle %q lists no components", m.Name)
	case n > maxComponents:
		add("bundle %q lists %d components; a call header addresses at most %d", m.Name, n, maxComponents)
	}
	seen := make(map[string]int, len(m.Components))
	for i := range m.Components {
		c := &m.Components[i]
		where := fmt.Sprintf("component %d %q", i, c.Name)
		if c.Name == "" {
			add("component %d: empty name", i)
		} else if j, dup := seen[c.Name]; dup {
			add("%s: name already used by component %d", where, j)
		} else {
			seen[c.Name] = i
		}
		if c.Kind != sdk.KindTranslator && c.Kind != sdk.KindAdapter {
			add("%s: kind %q, must be translator or adapter", where, c.Kind)
		}
		if len(c.Components) > 0 {
			add("%s: lists components of its own; bundles do not nest", where)
		}
		if c.ABI != 0 {
			if err := checkVersion(c.ABI); err != nil {
				add("%s: %v", where, err)
			}
		}
	}
	return errs
}

// selfTest makes one representative call per component that must not
// trap: an error encode (translators) or decode (adapters), which every
// plugin can do, addressed to the component's index. An error status
// (even unsupported) passes; a trap, timeout or malformed result fails,
// naming the component in a bundle.
func (v *Version) selfTest(ctx context.Context, in *instance) error {
	parts := v.manifest.Parts()
	for i := range parts {
		if err := selfTestPart(ctx, in, uint16(i), parts[i].Kind); err != nil {
			if v.manifest.Kind == sdk.KindBundle {
				return fmt.Errorf("component %d %q: %w", i, parts[i].Name, err)
			}
			return err
		}
	}
	return nil
}

func selfTestPart(ctx context.Context, in *instance, idx uint16, kind sdk.Kind) error {
	var ci CallInput
	op := abi.OpErrorEncode
	if kind == sdk.KindAdapter {
		op = abi.OpErrorDecode
		ci.Adapter = idx
		ci.Meta = abi.AppendMeta(nil, "status", "500")
		ci.Payload = []byte(`{"error":{"message":"pluginhost self-test"}}`)
	} else {
		ci.Translator = idx
		ci.Payload = []byte(`{"status":500,"type":"internal","message":"pluginhost self-test"}`)
	}
	var out Result
	bad, err := in.do(ctx, op, &ci, &out)
	var se *StatusError
	if bad || (err != nil && !errors.As(err, &se)) {
		return fmt.Errorf("%w: %s: %w", errSelfTest, op, err)
	}
	return nil
}

// fingerprint identifies what a reload compares: the bytes and every
// setting that shapes a version.
func fingerprint(sha string, pc *PluginConfig) string {
	b, _ := json.Marshal(struct {
		SHA string
		PC  *PluginConfig
	}{sha, pc})
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// compiled is a compiled module shared by the versions (of every Host in
// the process) of one Runtime with identical bytes.
type compiled struct {
	key  compiledKey
	rt   wazero.Runtime
	cm   wazero.CompiledModule
	refs int // guarded by shared.mu
}

type compiledKey struct {
	rt  runtimeKey
	sha string
}
