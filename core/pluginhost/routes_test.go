package pluginhost

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/firstparty"
	"github.com/mindrouter/mindrouter/sdk"
)

func routeTranslator(name, format string, routes ...sdk.Route) func() *sdk.Plugin {
	return func() *sdk.Plugin {
		return sdk.NewTranslator(sdk.Manifest{Name: name, Version: "1", Format: format, Routes: routes}, sdk.Unimplemented{})
	}
}

// Two plugins whose routes may serve one request are refused at load,
// naming both; selectors, methods and disjoint templates keep routes
// apart, and one translator in two modules is no conflict.
func TestNew_RouteConflicts(t *testing.T) {
	list := sdk.Route{Name: "models", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models"}
	RegisterNative("rc-openai", routeTranslator("openai-like", "openai", list,
		sdk.Route{Name: "chat", Path: "/v1/chat/completions"}))
	RegisterNative("rc-gemini", routeTranslator("gemini-like", "gemini",
		sdk.Route{Name: "list", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models", Select: []string{"header:x-goog-api-key"}},
		sdk.Route{Name: "generate", Path: "/v1/models/{model}:generateContent"},
		sdk.Route{Name: "get", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models/{model}"}))
	RegisterNative("rc-same-path", routeTranslator("other", "other", list))
	RegisterNative("rc-template", routeTranslator("other2", "other2",
		sdk.Route{Name: "gen", Path: "/v1/models/{name}:generateContent"}))
	RegisterNative("rc-exact-in-template", routeTranslator("other3", "other3",
		sdk.Route{Name: "get", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models/gpt-4"}))
	RegisterNative("rc-openai-again", routeTranslator("openai-like", "openai", list))
	RegisterNative("rc-bad-template", routeTranslator("bad", "bad", sdk.Route{Name: "x", Path: "/v1/{a}{b}"}))

	for _, tc := range []struct {
		name    string
		plugins []string
		want    string // "" loads
	}{
		{"selector and method keep apart", []string{"rc-openai", "rc-gemini"}, ""},
		{"same translator twice", []string{"rc-openai", "rc-openai-again"}, ""},
		{"same path", []string{"rc-openai", "rc-same-path"},
			`route conflict: plugin "p0" route "models" (GET /v1/models) and plugin "p1" route "models" (GET /v1/models)`},
		{"two templates", []string{"rc-gemini", "rc-template"},
			`plugin "p0" route "generate" (POST /v1/models/{model}:generateContent) and plugin "p1" route "gen" (POST /v1/models/{name}:generateContent)`},
		{"exact path inside a template", []string{"rc-gemini", "rc-exact-in-template"},
			`plugin "p0" route "get" (GET /v1/models/{model}) and plugin "p1" route "get" (GET /v1/models/gpt-4)`},
		{"bad template", []string{"rc-bad-template"}, `plugin "p0" route "x": pathtmpl: bad template`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{ABI: 2}
			for i, n := range tc.plugins {
				cfg.Plugins = append(cfg.Plugins, PluginConfig{Name: "p" + string(rune('0'+i)), Kind: sdk.KindTranslator, Path: "native:" + n, Mode: ModeTrusted})
			}
			h, err := New(context.Background(), cfg, t.TempDir(), testLogger(t))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				h.Close(context.Background())
				return
			}
			if err == nil {
				h.Close(context.Background())
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
		})
	}
}

// A plugin of an older minor version of ABI 2 still loads.
func TestCheckVersion_OlderMinor(t *testing.T) {
	for minor := uint32(0); minor <= 8; minor++ {
		if err := checkVersion(2<<16 | minor); err != nil {
			t.Fatalf("2.%d: %v", minor, err)
		}
	}
	if err := checkVersion(2<<16 | 99); err == nil {
		t.Fatal("2.99 loaded")
	}
}

// The first-party translators, separate and bundled, declare no
// conflicting routes.
func TestCheckRoutes_FirstParty(t *testing.T) {
	var ps []*Plugin
	for name, f := range firstparty.Factories {
		ps = append(ps, NewNativePlugin(name, f))
	}
	if err := CheckRoutes(ps); err != nil {
		t.Fatal(err)
	}
}

// A reload that would make two plugins claim one request is refused as a
// whole: the running set keeps serving, and no new version is swapped in.
func TestReload_RouteConflictRefused(t *testing.T) {
	RegisterNative("rr-a", routeTranslator("a", "a", sdk.Route{Name: "models", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models"}))
	RegisterNative("rr-a2", routeTranslator("a", "a", sdk.Route{Name: "models", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models"},
		sdk.Route{Name: "chat", Path: "/v1/chat"}))
	RegisterNative("rr-b", routeTranslator("b", "b", sdk.Route{Name: "list", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models"}))
	dir := t.TempDir()
	path := dir + "/plugins.yaml"
	write := func(entries string) {
		if err := os.WriteFile(path, []byte("abi: 2\nplugins:\n"+entries), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("  - {name: a, kind: translator, path: \"native:rr-a\", mode: trusted}\n")
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(context.Background(), cfg, dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	gen := h.Generation()
	// a changes (a new version) and b, new, conflicts with it.
	write("  - {name: a, kind: translator, path: \"native:rr-a2\", mode: trusted}\n  - {name: b, kind: translator, path: \"native:rr-b\", mode: trusted}\n")
	err = h.Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), `plugin "a" route "models" (GET /v1/models) and plugin "b" route "list" (GET /v1/models)`) {
		t.Fatalf("reload: %v", err)
	}
	if h.Plugin("b") != nil || len(h.Plugin("a").Manifest().Routes) != 1 || h.Generation() != gen {
		t.Fatalf("the refused reload changed the set: b %v, a routes %d, gen %d→%d", h.Plugin("b"), len(h.Plugin("a").Manifest().Routes), gen, h.Generation())
	}
	// Without the conflict the same change loads.
	write("  - {name: a, kind: translator, path: \"native:rr-a2\", mode: trusted}\n")
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(h.Plugin("a").Manifest().Routes) != 2 {
		t.Fatalf("a routes %d", len(h.Plugin("a").Manifest().Routes))
	}
}
