package pluginhost

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"

	"go.yaml.in/yaml/v3"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Mode is a plugin's isolation class (see the package doc, "Timeouts").
type Mode string

// Modes.
const (
	// ModeStrict runs the plugin in a runtime that checks for cancellation at
	// every loop back-edge: a call past its deadline is interrupted and the
	// instance discarded. Guest code runs about 5× slower (wazero v1.12).
	ModeStrict Mode = "strict"
	// ModeTrusted runs the plugin at full speed without termination checks:
	// a runaway call cannot be interrupted; a watchdog reports it.
	ModeTrusted Mode = "trusted"
)

// String returns the mode's name.
func (m Mode) String() string { return string(m) }

// Defaults applied by LoadConfig to absent keys and by New to zero limits.
//
// Memory and payload sizes come from measurements of the first-party
// plugins (core/pluginhost/memory_measure_test.go, go test -tags measure):
// the smallest memory_mb at which one call succeeds, per input shape.
//
//	openai request_decode, 16 MiB body of one string or one base64 image:  102 MiB
//	openai request_decode, 16 MiB body of 215k messages (645k JSON values): 615 MiB
//	openai request_decode, 10 MiB body of 350k messages (1<<20 values):     669 MiB
//	openai request_decode, 16 MiB body of 540k messages (1.6M values):     1200 MiB
//	vllm request_encode, canonical of the 215k-message body (22 MB):        278 MiB
//	vllm response_decode, 16 MiB response of one string:                    118 MiB
//
// Guest memory follows the number of JSON values more than the bytes (the
// plugins parse into a DOM: 0.4–0.7 KiB per value at the peak), so the
// gateway's limits.max_json_values (1<<20) bounds it along with the body
// size; a translator's canonical output of a body of many short messages
// is up to 1.83× the body. Hence max_payload_mb 32 (twice the gateway's
// 16 MiB body limit) and memory_mb 1024 (MemoryPerPayloadMB × 32). Linear
// memory is committed only as a guest grows (an idle instance stays at
// ~5 MiB whatever the cap), and pool.recycle_mb gives it back after a
// large call.
const (
	DefaultMemoryMB      = 1024
	DefaultCallTimeoutMS = 100
	DefaultStateMaxKB    = 64
	DefaultMaxPayloadMB  = 32
	DefaultGOGC          = 100
	DefaultPoolMin       = 1
	DefaultPoolMaxCalls  = 100000
	DefaultPoolWaitMS    = 1000
	DefaultPoolRecycleMB = 48
)

// MemoryPerPayloadMB is the guest memory a plugin may need per MiB of
// payload: memory_mb must be at least this × max_payload_mb, or the
// configuration is refused (a call with a payload at the limit would trap
// out of memory under load). 32 covers every measured chat-body shape
// within the gateway's default limits with ~50% headroom (worst: 669 MiB
// for 1<<20 JSON values); bodies of tiny values beyond those limits (a
// 16 MiB array of 1-byte numbers) need more than a wasm32 guest can have
// and must be refused before the plugin (limits.max_json_values).
const MemoryPerPayloadMB = 32

// Config is plugins.yaml. It is immutable once loaded; Reload builds a new one.
type Config struct {
	ABI      int            // must be abi.VersionMajor
	CacheDir string         // compilation cache dir, relative to the yaml file's dir; "" = in-memory only
	Plugins  []PluginConfig // in file order
	// Path is the file the config was loaded from ("" when built in code);
	// Reload re-reads it.
	Path string
}

// PluginConfig is one entry of plugins.yaml.
type PluginConfig struct {
	Name string
	// Kind is the module's manifest kind: translator or adapter for a
	// module of one component, bundle for a module of several (its
	// components are checked one by one at load).
	Kind sdk.Kind
	// Path is the .wasm file, relative to the yaml file's dir, or
	// "native:NAME": the plugin registered with RegisterNative under NAME,
	// compiled into the gateway (for measurement: no sandbox; see native.go).
	Path   string
	SHA256 string // optional pin (hex); a mismatch refuses the load
	// Config is the plugin's own configuration as JSON, handed to mr_init;
	// nil when absent.
	Config []byte
	Mode   Mode
	Limits Limits
	Pool   PoolConfig
}

// Limits bound one plugin's resources.
type Limits struct {
	MemoryMB      int // linear memory cap per instance (>= MemoryPerPayloadMB × MaxPayloadMB); GOMEMLIMIT is set to 75% of it
	CallTimeoutMS int // strict: per-call deadline; trusted: the watchdog's basis
	StateMaxKB    int // per-stream state blob cap, in and out
	MaxPayloadMB  int // input and output payload cap
	GOGC          int // the guest's GOGC
}

// PoolConfig sizes one plugin version's instance pool.
type PoolConfig struct {
	Min      int // instances kept warm (0: scale to zero)
	Max      int // 0 = GOMAXPROCS+1
	MaxCalls int // recycle an instance after this many calls; 0 = never
	WaitMS   int // how long a call waits for a free instance when its ctx has no deadline (not for WithoutWaitLimit: a streaming chunk)
	// RecycleMB replaces an instance whose linear memory passed it after
	// a call (a Go guest never shrinks its memory, so one large call
	// would keep it grown); at most 75% of limits.memory_mb applies.
	RecycleMB int
}

// Raw forms: pointers tell absent from zero so defaults apply only to
// absent keys. Decoded with KnownFields, so unknown keys are errors.
type rawConfig struct {
	ABI      *int        `yaml:"abi"`
	CacheDir string      `yaml:"cache_dir"`
	Plugins  []rawPlugin `yaml:"plugins"`
}

type rawPlugin struct {
	Name   string    `yaml:"name"`
	Kind   string    `yaml:"kind"`
	Path   string    `yaml:"path"`
	SHA256 string    `yaml:"sha256"`
	Config yaml.Node `yaml:"config"`
	Mode   string    `yaml:"mode"`
	Limits rawLimits `yaml:"limits"`
	Pool   rawPool   `yaml:"pool"`
}

type rawLimits struct {
	MemoryMB      *int `yaml:"memory_mb"`
	CallTimeoutMS *int `yaml:"call_timeout_ms"`
	StateMaxKB    *int `yaml:"state_max_kb"`
	MaxPayloadMB  *int `yaml:"max_payload_mb"`
	GOGC          *int `yaml:"gogc"`
}

type rawPool struct {
	Min       *int `yaml:"min"`
	Max       *int `yaml:"max"`
	MaxCalls  *int `yaml:"max_calls"`
	WaitMS    *int `yaml:"wait_ms"`
	RecycleMB *int `yaml:"recycle_mb"`
}

// LoadConfig reads and validates plugins.yaml strictly: unknown keys are
// errors, and every problem found is reported (errors.Join).
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pluginhost: read config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("pluginhost: %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// ParseConfig parses and validates plugins.yaml bytes.
func ParseConfig(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var raw rawConfig
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty config")
		}
		return nil, err
	}
	c := &Config{ABI: orDefault(raw.ABI, 0), CacheDir: raw.CacheDir}
	var errs []error
	for i := range raw.Plugins {
		pc, err := raw.Plugins[i].resolve()
		if err != nil {
			errs = append(errs, fmt.Errorf("plugins[%d]: %w", i, err))
		}
		c.Plugins = append(c.Plugins, pc)
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

func (r *rawPlugin) resolve() (PluginConfig, error) {
	pc := PluginConfig{
		Name: r.Name, Kind: sdk.Kind(r.Kind), Path: r.Path, SHA256: r.SHA256, Mode: Mode(r.Mode),
		Limits: Limits{
			MemoryMB:      orDefault(r.Limits.MemoryMB, DefaultMemoryMB),
			CallTimeoutMS: orDefault(r.Limits.CallTimeoutMS, DefaultCallTimeoutMS),
			StateMaxKB:    orDefault(r.Limits.StateMaxKB, DefaultStateMaxKB),
			MaxPayloadMB:  orDefault(r.Limits.MaxPayloadMB, DefaultMaxPayloadMB),
			GOGC:          orDefault(r.Limits.GOGC, DefaultGOGC),
		},
		Pool: PoolConfig{
			Min:       orDefault(r.Pool.Min, DefaultPoolMin),
			Max:       orDefault(r.Pool.Max, 0),
			MaxCalls:  orDefault(r.Pool.MaxCalls, DefaultPoolMaxCalls),
			WaitMS:    orDefault(r.Pool.WaitMS, DefaultPoolWaitMS),
			RecycleMB: orDefault(r.Pool.RecycleMB, DefaultPoolRecycleMB),
		},
	}
	if pc.Mode == "" {
		pc.Mode = ModeStrict
	}
	if r.Config.Kind == 0 {
		return pc, nil
	}
	var v any
	if err := r.Config.Decode(&v); err != nil {
		return pc, fmt.Errorf("config: %w", err)
	}
	if v == nil {
		return pc, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return pc, fmt.Errorf("config (line %d): not representable as JSON: %w", r.Config.Line, err)
	}
	pc.Config = b
	return pc, nil
}

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// Validate reports every problem in c (errors.Join). Zero limits are
// accepted here and replaced by defaults in New.
func (c *Config) Validate() error {
	var errs []error
	if c.ABI != abi.VersionMajor {
		errs = append(errs, fmt.Errorf("abi: must be %d, got %d", abi.VersionMajor, c.ABI))
	}
	seen := map[string]bool{}
	for i := range c.Plugins {
		pc := &c.Plugins[i]
		if err := pc.validate(); err != nil {
			errs = append(errs, fmt.Errorf("plugins[%d] %q: %w", i, pc.Name, err))
		}
		if seen[pc.Name] {
			errs = append(errs, fmt.Errorf("plugins[%d]: duplicate name %q", i, pc.Name))
		}
		seen[pc.Name] = true
	}
	return errors.Join(errs...)
}

func (pc *PluginConfig) validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !nameRE.MatchString(pc.Name) {
		add("name: must match %s", nameRE)
	}
	if pc.Kind != sdk.KindTranslator && pc.Kind != sdk.KindAdapter && pc.Kind != sdk.KindBundle {
		add("kind: must be translator, adapter or bundle, got %q", pc.Kind)
	}
	native, isNative := nativeName(pc.Path)
	switch {
	case pc.Path == "":
		add("path: required")
	case isNative && !nameRE.MatchString(native):
		add("path: %q: a native plugin's name must match %s", pc.Path, nameRE)
	case isNative && pc.SHA256 != "":
		add("sha256: a native plugin (%s) has no file to pin", pc.Path)
	}
	if pc.SHA256 != "" {
		if b, err := hex.DecodeString(pc.SHA256); err != nil || len(b) != 32 {
			add("sha256: must be 64 hex digits")
		}
	}
	if pc.Mode != ModeStrict && pc.Mode != ModeTrusted {
		add("mode: must be strict or trusted, got %q", pc.Mode)
	}
	if len(pc.Config) > 0 && !json.Valid(pc.Config) {
		add("config: not valid JSON")
	}
	l := &pc.Limits
	checkRange := func(key string, v, lo, hi int) {
		if v != 0 && (v < lo || v > hi) {
			add("%s: %d out of range [%d, %d]", key, v, lo, hi)
		}
	}
	checkRange("limits.memory_mb", l.MemoryMB, 4, 4096)
	checkRange("limits.call_timeout_ms", l.CallTimeoutMS, 1, 600000)
	checkRange("limits.state_max_kb", l.StateMaxKB, 1, 1<<20)
	checkRange("limits.max_payload_mb", l.MaxPayloadMB, 1, 1024)
	checkRange("limits.gogc", l.GOGC, 10, 10000)
	if mem, pay := orZero(l.MemoryMB, DefaultMemoryMB), orZero(l.MaxPayloadMB, DefaultMaxPayloadMB); mem >= 4 && pay >= 1 && mem < MemoryPerPayloadMB*pay {
		add("limits.memory_mb: %d MiB is too small for limits.max_payload_mb %d: a plugin may need %d MiB of memory per MiB of payload, "+
			"so a payload near the limit would trap out of memory; set memory_mb to at least %d or max_payload_mb to at most %d",
			mem, pay, MemoryPerPayloadMB, MemoryPerPayloadMB*pay, max(mem/MemoryPerPayloadMB, 1))
	}
	p := &pc.Pool
	if p.Min < 0 || p.Max < 0 || p.MaxCalls < 0 || p.WaitMS < 0 || p.RecycleMB < 0 {
		add("pool: values must not be negative")
	}
	if p.Max > 0 && p.Min > p.Max {
		add("pool: min %d > max %d", p.Min, p.Max)
	}
	if p.Max > 4096 || p.Min > 4096 {
		add("pool: more than 4096 instances")
	}
	return errors.Join(errs...)
}

// withDefaults returns pc with zero limits replaced by defaults and Max
// resolved.
func (pc PluginConfig) withDefaults() PluginConfig {
	l := &pc.Limits
	if l.MemoryMB == 0 {
		l.MemoryMB = DefaultMemoryMB
	}
	if l.CallTimeoutMS == 0 {
		l.CallTimeoutMS = DefaultCallTimeoutMS
	}
	if l.StateMaxKB == 0 {
		l.StateMaxKB = DefaultStateMaxKB
	}
	if l.MaxPayloadMB == 0 {
		l.MaxPayloadMB = DefaultMaxPayloadMB
	}
	if l.GOGC == 0 {
		l.GOGC = DefaultGOGC
	}
	if pc.Mode == "" {
		pc.Mode = ModeStrict
	}
	if _, ok := nativeName(pc.Path); ok {
		pc.Mode = ModeTrusted // native code cannot be interrupted: there is no strict mode
	}
	if pc.Pool.Max == 0 {
		pc.Pool.Max = max(runtime.GOMAXPROCS(0)+1, pc.Pool.Min)
	}
	if pc.Pool.WaitMS == 0 {
		pc.Pool.WaitMS = DefaultPoolWaitMS
	}
	if pc.Pool.RecycleMB == 0 {
		pc.Pool.RecycleMB = DefaultPoolRecycleMB
	}
	return pc
}

// orZero is v, or def when v is 0 (a limit New replaces by its default).
func orZero(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
