package pluginhost

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

func kindOf(s string) sdk.Kind { return sdk.Kind(s) }

var errorInput = CallInput{Payload: []byte(`{"status":404,"type":"not_found","message":"no such model"}`)}

func TestNew_LoadsAndCalls(t *testing.T) {
	for _, mode := range []Mode{ModeTrusted, ModeStrict} {
		t.Run(string(mode), func(t *testing.T) {
			h := newTestHost(t, plugin("good", "good", "translator", mode))
			p := h.Plugin("good")
			if p == nil {
				t.Fatal("plugin not found")
			}
			if m := p.Manifest(); m.Name != "good" || m.Version != "A" || m.Kind != sdk.KindTranslator {
				t.Fatalf("manifest %+v", m)
			}
			var out Result
			if err := p.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); err != nil {
				t.Fatal(err)
			}
			if got := string(out.Payload); got != `{"v":"A","msg":"no such model"}` {
				t.Fatalf("payload %s", got)
			}
			if st, _ := abi.MetaGet(out.Meta, "status"); string(st) != "404" {
				t.Fatalf("meta %q", out.Meta)
			}
		})
	}
}

func TestNew_Refuses(t *testing.T) {
	tests := []struct {
		name string
		pc   PluginConfig
		want string
	}{
		{"abi2", plugin("x", "abi2", "translator", ModeTrusted),
			fmt.Sprintf("plugin speaks ABI 3.0, host speaks %d.%d", abi.VersionMajor, abi.VersionMinor)},
		{"noexport", plugin("x", "noexport", "translator", ModeTrusted), `missing export "mr_call"`},
		{"fsimport", plugin("x", "fsimport", "translator", ModeTrusted), "forbidden import wasi_snapshot_preview1.path_open"},
		{"kind", plugin("x", "good", "adapter", ModeTrusted), `kind "translator", plugins.yaml says "adapter"`},
		{"sha", func() PluginConfig {
			pc := plugin("x", "good", "translator", ModeTrusted)
			pc.SHA256 = strings.Repeat("ab", 32)
			return pc
		}(), "sha256 mismatch"},
		{"missing file", func() PluginConfig {
			pc := plugin("x", "good", "translator", ModeTrusted)
			pc.Path = "nope.wasm"
			return pc
		}(), "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &Config{ABI: 2, CacheDir: cacheDir, Plugins: []PluginConfig{tt.pc}}
			h, err := New(context.Background(), cfg, testDir, testLogger(t))
			if err == nil {
				h.Close(context.Background())
				t.Fatal("loaded")
			}
			prefix := `pluginhost: plugin "x" (` + tt.pc.Path + `): `
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want prefix %q and %q", err, prefix, tt.want)
			}
		})
	}
}
