package pluginhost

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugins.yaml")
	yaml := `abi: 2
cache_dir: .cache/wazero
plugins:
  - name: openai
    kind: translator
    path: plugins/openai.wasm
    sha256: ""
    config: {default_max_tokens: 1024, models: [a, b]}
    mode: trusted
    limits: {memory_mb: 256, call_timeout_ms: 50, state_max_kb: 16, max_payload_mb: 8}
    pool: {min: 2, max: 0, max_calls: 1000}
  - name: vllm
    kind: adapter
    path: plugins/vllm.wasm
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.ABI != 2 || c.CacheDir != ".cache/wazero" || c.Path != path || len(c.Plugins) != 2 {
		t.Fatalf("config %+v", c)
	}
	o := c.Plugins[0]
	if o.Name != "openai" || o.Kind != sdk.KindTranslator || o.Mode != ModeTrusted ||
		string(o.Config) != `{"default_max_tokens":1024,"models":["a","b"]}` ||
		o.Limits != (Limits{MemoryMB: 256, CallTimeoutMS: 50, StateMaxKB: 16, MaxPayloadMB: 8, GOGC: DefaultGOGC}) ||
		o.Pool != (PoolConfig{Min: 2, Max: 0, MaxCalls: 1000, WaitMS: DefaultPoolWaitMS, RecycleMB: DefaultPoolRecycleMB}) {
		t.Errorf("openai %+v", o)
	}
	v := c.Plugins[1]
	if v.Mode != ModeStrict || v.Config != nil || v.Limits.MemoryMB != DefaultMemoryMB ||
		v.Pool.Min != DefaultPoolMin || v.Pool.MaxCalls != DefaultPoolMaxCalls {
		t.Errorf("defaults %+v", v)
	}
	if d := v.withDefaults(); d.Pool.Max != runtime.GOMAXPROCS(0)+1 {
		t.Errorf("pool max %d", d.Pool.Max)
	}
}

func TestParseConfig_Errors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top-level key", "abi: 2\nplugin: []\n", []string{"field plugin not found"}},
		{"unknown plugin key", "abi: 2\nplugins:\n  - {name: a, kind: adapter, path: a.wasm, timeout: 3}\n", []string{"field timeout not found"}},
		{"unknown limits key", "abi: 2\nplugins:\n  - {name: a, kind: adapter, path: a.wasm, limits: {memory: 3}}\n", []string{"field memory not found"}},
		{"empty", "", []string{"empty config"}},
		{"every problem", `abi: 1
plugins:
  - {name: "Bad Name", kind: filter, path: "", sha256: xyz, mode: fast, limits: {memory_mb: 1}, pool: {min: 5, max: 2}}
  - {name: dup, kind: adapter, path: a.wasm}
  - {name: dup, kind: adapter, path: b.wasm}
`, []string{"abi: must be 2, got 1", "name: must match", `kind: must be translator, adapter or bundle, got "filter"`,
			"path: required", "sha256: must be 64 hex digits", `mode: must be strict or trusted, got "fast"`,
			"limits.memory_mb: 1 out of range", "pool: min 5 > max 2", `duplicate name "dup"`}},
		{"config with non-string keys", "abi: 2\nplugins:\n  - name: a\n    kind: adapter\n    path: a.wasm\n    config: {1: x}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml))
			if err == nil {
				if tt.want != nil {
					t.Fatal("no error")
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestParseConfig_MemoryForPayload: memory_mb must hold MemoryPerPayloadMB
// per MiB of max_payload_mb (defaults included), or the config is refused
// at load with an error naming the key, instead of calls trapping out of
// memory under load.
func TestParseConfig_MemoryForPayload(t *testing.T) {
	if DefaultMemoryMB < MemoryPerPayloadMB*DefaultMaxPayloadMB {
		t.Fatalf("the defaults break the rule: memory_mb %d, max_payload_mb %d", DefaultMemoryMB, DefaultMaxPayloadMB)
	}
	for _, tt := range []struct {
		limits string
		want   string // "" = accepted
	}{
		{"{}", ""},
		{"{memory_mb: 64, max_payload_mb: 2}", ""},
		{"{memory_mb: 4096, max_payload_mb: 128}", ""},
		{"{memory_mb: 64}", "limits.memory_mb: 64 MiB is too small for limits.max_payload_mb 32"},
		{"{max_payload_mb: 64}", "limits.memory_mb: 1024 MiB is too small for limits.max_payload_mb 64"},
		{"{memory_mb: 512, max_payload_mb: 32}", "set memory_mb to at least 1024 or max_payload_mb to at most 16"},
	} {
		y := "abi: " + strconv.Itoa(abi.VersionMajor) + "\nplugins:\n  - {name: a, kind: adapter, path: a.wasm, limits: " + tt.limits + "}\n"
		_, err := ParseConfig([]byte(y))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.limits, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err %v, want %q", tt.limits, err, tt.want)
		}
	}
}
