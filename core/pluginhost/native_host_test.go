package pluginhost

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/bundle"
	"github.com/mindrouter/mindrouter/plugins/firstparty"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

var registerOnce sync.Once

// registerFirstParty registers the first-party plugins as native ones,
// as core/cmd/mindrouter does for the gateway binary (a test may import
// plugins/; the package's own code may not).
func registerFirstParty() {
	registerOnce.Do(func() {
		for name, f := range firstparty.Factories {
			RegisterNative(name, f)
		}
	})
}

// mustNative is the first-party bundle as a native Plugin outside a Host.
func mustNative(t *testing.T) *Plugin {
	t.Helper()
	p := NewNativePlugin("firstparty-native", bundle.New)
	if err := p.LastError(); err != nil {
		t.Fatal(err)
	}
	return p
}

// A plugins.yaml entry "native:NAME" loads the registered plugin through
// the Host like a .wasm one, and gives the .wasm build's bytes.
func TestNative_FromConfig(t *testing.T) {
	registerFirstParty()
	cfg, err := ParseConfig([]byte(`abi: 2
plugins:
  - {name: firstparty, kind: bundle, path: "native:firstparty", pool: {min: 1}}
  - {name: openai, kind: translator, path: "native:openai", mode: trusted}
  - {name: vllm, kind: adapter, path: "native:vllm"}
`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(context.Background(), cfg, t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	p := h.Plugin("firstparty")
	v := p.Pin()
	if st := v.Stats(); st.Mode != ModeTrusted || st.SHA256 != "native:firstparty" || p.Manifest().Kind != sdk.KindBundle {
		t.Fatalf("stats %+v manifest %+v", st, p.Manifest())
	}
	v.Release()

	// The same bytes as the canonical path over native single modules and
	// as the .wasm bundle.
	f, c := fusedVsCanonical(t, p, h.Plugin("openai"), h.Plugin("vllm"), 0, 0, fpVLLM)
	if !bytes.Equal(f, c) {
		t.Fatalf("native fused %s, native canonical %s", f, c)
	}
	w := bundleHost(t, bundleEntry(t, "firstparty"))
	wf, _ := fusedVsCanonical(t, w.Plugin("firstparty"), w.Plugin("firstparty"), w.Plugin("firstparty"), fpOpenAI, fpVLLM, fpVLLM)
	if !bytes.Equal(f, wf) {
		t.Fatalf("native %s, wasm %s", f, wf)
	}

	var b strings.Builder
	h.WriteMetrics(&b)
	for _, want := range []string{
		`mindrouter_plugin_calls_total{plugin="firstparty",op="fused_request"} 1`,
		`mindrouter_plugin_component_calls_total{plugin="firstparty",component="openai+vllm",op="fused_request"} 1`,
		`mindrouter_plugin_info{plugin="firstparty",version="0.1.0",seq="1",sha256="native:firstparty",mode="trusted",kind="bundle"`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// Reload: unchanged entries stay; a native entry replaced by a .wasm one
	// and back is a new version each time.
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := p.Pin(); v.Stats().Seq != 1 {
		t.Fatalf("an unchanged native plugin was reloaded: %+v", v.Stats())
	} else {
		v.Release()
	}
}

func TestNative_Refused(t *testing.T) {
	registerFirstParty()
	for _, tt := range []struct {
		name, yaml, want string
	}{
		{"unknown", `{name: x, kind: bundle, path: "native:nope"}`,
			`pluginhost: plugin "x" (native:nope): no native plugin "nope" is compiled into this binary (registered: `},
		{"kind", `{name: x, kind: translator, path: "native:firstparty"}`,
			`kind "bundle", plugins.yaml says "translator"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte("abi: 2\nplugins:\n  - " + tt.yaml + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			h, err := New(context.Background(), cfg, t.TempDir(), testLogger(t))
			if err == nil {
				h.Close(context.Background())
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want %q", err, tt.want)
			}
			if tt.name == "unknown" && !strings.Contains(err.Error(), "firstparty") {
				t.Fatalf("error %q does not list the registered names", err)
			}
		})
	}
	for _, tt := range []struct{ yaml, want string }{
		{`{name: x, kind: bundle, path: "native:", mode: trusted}`, `a native plugin's name must match`},
		{`{name: x, kind: bundle, path: "native:firstparty", sha256: "` + strings.Repeat("ab", 32) + `"}`, `has no file to pin`},
	} {
		if _, err := ParseConfig([]byte("abi: 2\nplugins:\n  - " + tt.yaml + "\n")); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// Native calls allocate nothing on the host either.
func TestNative_CallInput(t *testing.T) {
	p := mustNative(t)
	var out Result
	if err := p.Call(context.Background(), abi.OpFusedRequest, CallInput{Translator: fpOpenAI, Adapter: fpOllama, Meta: chatRoute, Payload: chatBody}, &out); err != nil {
		t.Fatal(err)
	}
	if path, _ := abi.MetaGet(out.Meta, abi.MetaPath); string(path) != "/api/chat" {
		t.Fatalf("ollama path %q", path)
	}
}
