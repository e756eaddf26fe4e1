package pluginhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// bundleWasm is the first-party bundle built by testutil (plugins/bundle:
// openai 0, vllm 1, ollama 2) and the compilation cache it was
// precompiled into.
func bundleWasm(t *testing.T) (path, cache string) {
	t.Helper()
	set := firstParty(t)
	bs, err := testutil.BuildBundle()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(bs.Dir, "bundle.wasm"), set.cache
}

// Component indexes of the first-party bundle.
const (
	fpOpenAI uint16 = 0
	fpVLLM   uint16 = 1
	fpOllama uint16 = 2
)

var (
	chatBody  = []byte(`{"model":"qwen3-8b","messages":[{"role":"user","content":"hello"}],"max_tokens":16}`)
	chatRoute = abi.AppendMeta(abi.AppendMeta(nil, abi.MetaRoute, "chat"), abi.MetaKind, "chat")
)

func bundleHost(t *testing.T, entries ...PluginConfig) *Host {
	t.Helper()
	_, cache := bundleWasm(t)
	h, err := New(context.Background(), &Config{ABI: 2, CacheDir: cache, Plugins: entries}, "", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func bundleEntry(t *testing.T, name string) PluginConfig {
	path, _ := bundleWasm(t)
	return PluginConfig{Name: name, Kind: sdk.KindBundle, Path: path, Mode: ModeTrusted, Pool: PoolConfig{Min: 1, Max: 2}}
}

// fusedVsCanonical makes a fused request on p (translator 0 + adapter a)
// and the canonical pair of calls on tp and ap, and returns both bodies.
func fusedVsCanonical(t *testing.T, fp *Plugin, tp, ap *Plugin, ti, ai uint16, a uint16) (fused, canonical []byte) {
	t.Helper()
	ctx := context.Background()
	var f, d, e Result
	if err := fp.Call(ctx, abi.OpFusedRequest, CallInput{Translator: fpOpenAI, Adapter: a, Meta: chatRoute, Payload: chatBody}, &f); err != nil {
		t.Fatal(err)
	}
	if err := tp.Call(ctx, abi.OpRequestDecode, CallInput{Translator: ti, Adapter: ai, Meta: chatRoute, Payload: chatBody}, &d); err != nil {
		t.Fatal(err)
	}
	if err := ap.Call(ctx, abi.OpRequestEncode, CallInput{Translator: ti, Adapter: ai, Payload: d.Payload}, &e); err != nil {
		t.Fatal(err)
	}
	if p, _ := abi.MetaGet(f.Meta, abi.MetaPath); len(p) == 0 {
		t.Fatalf("fused request without a backend path: meta %q", f.Meta)
	}
	return f.Payload, e.Payload
}

func TestBundle_LoadsComponentsAndFuses(t *testing.T) {
	h := bundleHost(t, bundleEntry(t, "firstparty"))
	p := h.Plugin("firstparty")
	m := p.Manifest()
	if m.Kind != sdk.KindBundle || m.Name != "firstparty" || len(m.Parts()) != 6 {
		t.Fatalf("manifest %+v", m)
	}
	for i, want := range []string{"openai", "vllm", "ollama", "anthropic", "ollama-api", "openai-responses"} {
		if c, _ := m.Part(uint16(i)); c.Name != want {
			t.Fatalf("component %d is %q, want %q", i, c.Name, want)
		}
	}
	for _, a := range []uint16{fpVLLM, fpOllama} {
		f, c := fusedVsCanonical(t, p, p, p, fpOpenAI, a, a)
		if !bytes.Equal(f, c) {
			t.Errorf("adapter %d: fused %s, canonical %s", a, f, c)
		}
	}
	// An op naming a component of the wrong kind is the plugin's error.
	var out Result
	err := p.Call(context.Background(), abi.OpRequestEncode, CallInput{Adapter: fpOpenAI, Payload: []byte(`{}`)}, &out)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != abi.StatusUnsupported || !strings.Contains(se.Msg, "openai") {
		t.Fatalf("adapter op on the translator: %v", err)
	}

	var b strings.Builder
	h.WriteMetrics(&b)
	text := b.String()
	for _, want := range []string{
		`mindrouter_plugin_calls_total{plugin="firstparty",op="fused_request"} 2`,
		`mindrouter_plugin_calls_total{plugin="firstparty",op="request_decode"} 2`,
		`mindrouter_plugin_component_calls_total{plugin="firstparty",component="openai+vllm",op="fused_request"} 1`,
		`mindrouter_plugin_component_calls_total{plugin="firstparty",component="openai+ollama",op="fused_request"} 1`,
		`mindrouter_plugin_component_calls_total{plugin="firstparty",component="openai",op="request_decode"} 2`,
		`mindrouter_plugin_component_calls_total{plugin="firstparty",component="vllm",op="request_encode"} 1`,
		`mindrouter_plugin_component_calls_total{plugin="firstparty",component="ollama",op="request_encode"} 1`,
		`mindrouter_plugin_component_calls_total{plugin="firstparty",component="openai",op="request_encode"} 1`,
		`mindrouter_plugin_info{plugin="firstparty",version="0.1.0",seq="1",`,
		`kind="bundle"`,
		`mindrouter_plugin_component_info{plugin="firstparty",index="0",component="openai",kind="translator",format="openai",`,
		`mindrouter_plugin_component_info{plugin="firstparty",index="2",component="ollama",kind="adapter",format="ollama",`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, `op="unknown"`) {
		t.Errorf("a call counted as op unknown:\n%s", text)
	}
}

// A translator in one module and an adapter in another: the canonical
// path, as before bundles, gives the bundle's fused bytes.
func TestBundle_SeparateModulesCanonicalPath(t *testing.T) {
	set := firstParty(t)
	entry := func(name string, kind sdk.Kind) PluginConfig {
		return PluginConfig{Name: name, Kind: kind, Path: set.wasm(name), Mode: ModeTrusted, Pool: PoolConfig{Min: 1, Max: 2}}
	}
	h := bundleHost(t, bundleEntry(t, "firstparty"), entry("openai", sdk.KindTranslator),
		entry("vllm", sdk.KindAdapter), entry("ollama", sdk.KindAdapter))
	for _, a := range []struct {
		name string
		idx  uint16
	}{{"vllm", fpVLLM}, {"ollama", fpOllama}} {
		f, c := fusedVsCanonical(t, h.Plugin("firstparty"), h.Plugin("openai"), h.Plugin(a.name), 0, 0, a.idx)
		if !bytes.Equal(f, c) {
			t.Errorf("%s: bundle fused %s, separate modules %s", a.name, f, c)
		}
	}
}

func TestBundle_KindChecks(t *testing.T) {
	set := firstParty(t)
	path, cache := bundleWasm(t)
	for _, tt := range []struct {
		name string
		pc   PluginConfig
		want string
	}{
		{"bundle as translator", PluginConfig{Name: "x", Kind: sdk.KindTranslator, Path: path, Mode: ModeTrusted},
			`kind "bundle", plugins.yaml says "translator" (a module of several components: use kind: bundle)`},
		{"translator as bundle", PluginConfig{Name: "x", Kind: sdk.KindBundle, Path: set.wasm("openai"), Mode: ModeTrusted},
			`kind "translator", plugins.yaml says "bundle" (a module of one component: use its kind)`},
		{"adapter as translator", PluginConfig{Name: "x", Kind: sdk.KindTranslator, Path: set.wasm("vllm"), Mode: ModeTrusted},
			`kind "adapter", plugins.yaml says "translator"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := New(context.Background(), &Config{ABI: 2, CacheDir: cache, Plugins: []PluginConfig{tt.pc}}, "", testLogger(t))
			if err == nil {
				h.Close(context.Background())
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), `pluginhost: plugin "x" (`) {
				t.Fatalf("error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestParseManifest_Components(t *testing.T) {
	comp := func(name, kind string) string {
		return fmt.Sprintf(`{"name":%q,"version":"1","kind":%q,"format":"f","abi":%d}`, name, kind, abi.Version)
	}
	bundle := func(kind string, comps ...string) string {
		return fmt.Sprintf(`{"name":"b","version":"1","kind":%q,"abi":%d,"components":[%s]}`, kind, abi.Version, strings.Join(comps, ","))
	}
	for _, tt := range []struct {
		name, raw string
		kind      sdk.Kind
		want      []string // "" : accepted
	}{
		{"ok", bundle("bundle", comp("t", "translator"), comp("a", "adapter")), sdk.KindBundle, nil},
		{"ok for inspect", bundle("bundle", comp("t", "translator")), "", nil},
		{"no components", bundle("bundle"), sdk.KindBundle, []string{`bundle "b" lists no components`}},
		{"duplicate", bundle("bundle", comp("t", "translator"), comp("a", "adapter"), comp("t", "adapter")), sdk.KindBundle,
			[]string{`component 2 "t": name already used by component 0`}},
		{"empty name", bundle("bundle", comp("", "adapter")), sdk.KindBundle, []string{"component 0: empty name"}},
		{"bad kind", bundle("bundle", comp("t", "translator"), comp("x", "codec")), sdk.KindBundle,
			[]string{`component 1 "x": kind "codec", must be translator or adapter`}},
		{"nested", bundle("bundle", bundle("bundle", comp("t", "translator"))), sdk.KindBundle,
			[]string{`component 0 "b": kind "bundle", must be translator or adapter`, `component 0 "b": lists components of its own`}},
		{"component abi", bundle("bundle", strings.Replace(comp("t", "translator"), fmt.Sprint(abi.Version), fmt.Sprint(3<<16), 1)), sdk.KindBundle,
			[]string{`component 0 "t": unsupported ABI version: plugin speaks ABI 3.0`}},
		{"single with components", bundle("translator", comp("t", "translator")), sdk.KindTranslator,
			[]string{`a translator lists 1 components; only a bundle`}},
		{"unknown kind", comp("t", "codec"), "", []string{`kind "codec": must be translator, adapter or bundle`}},
		{"kind mismatch", comp("t", "adapter"), sdk.KindBundle, []string{`kind "adapter", plugins.yaml says "bundle"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseManifest([]byte(tt.raw), &PluginConfig{Kind: tt.kind})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, errManifest) {
				t.Fatalf("err %v, want a manifest error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// spy components count their self-test calls.
type spyTranslator struct {
	sdk.Unimplemented
	calls *atomic.Int64
}

func (s spyTranslator) EncodeError(*sdk.Call, *canon.Error, *sdk.Output) error {
	s.calls.Add(1)
	return sdk.ErrUnsupported
}

type spyAdapter struct {
	sdk.Unimplemented
	calls *atomic.Int64
}

func (s spyAdapter) DecodeError(_ *sdk.Call, status int, _ []byte, _ *canon.Error) error {
	if status == 500 {
		s.calls.Add(1)
	}
	return sdk.ErrUnsupported
}

// The load-time self-test runs once per component, addressed by its index.
func TestBundle_SelfTestPerComponent(t *testing.T) {
	var calls [3]atomic.Int64
	RegisterNative("test-spy-bundle", func() *sdk.Plugin {
		return sdk.NewBundle("spy", "1",
			sdk.AdapterPart(sdk.Manifest{Name: "a0", Version: "1", Format: "x"}, spyAdapter{calls: &calls[0]}),
			sdk.TranslatorPart(sdk.Manifest{Name: "t1", Version: "1", Format: "y"}, spyTranslator{calls: &calls[1]}),
			sdk.AdapterPart(sdk.Manifest{Name: "a2", Version: "1", Format: "z"}, spyAdapter{calls: &calls[2]}))
	})
	h := newTestHost(t, PluginConfig{Name: "spy", Kind: sdk.KindBundle, Path: "native:test-spy-bundle", Mode: ModeStrict, Pool: PoolConfig{Min: 0, Max: 1}})
	if h.Plugin("spy").Manifest().Kind != sdk.KindBundle {
		t.Fatal("not loaded as a bundle")
	}
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("component %d: %d self-test calls, want 1", i, n)
		}
	}
}

// reloadBundle is a plugins.yaml directory on the first-party build.
type reloadBundle struct {
	*reloadDir
	cache string
}

func newReloadBundle(t *testing.T) *reloadBundle {
	path, cache := bundleWasm(t)
	set := firstParty(t)
	d := &reloadBundle{newReloadDir(t), cache}
	for name, from := range map[string]string{"bundle.wasm": path, "openai.wasm": set.wasm("openai"),
		"vllm.wasm": set.wasm("vllm"), "ollama.wasm": set.wasm("ollama")} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		d.write(name, b)
	}
	return d
}

func (d *reloadBundle) yaml(entries string) {
	d.write("plugins.yaml", []byte("abi: 2\ncache_dir: "+d.cache+"\nplugins:\n"+entries))
}

const (
	bundleYAML   = "  - {name: firstparty, kind: bundle, path: bundle.wasm, mode: trusted, pool: {min: 1, max: 2}}\n"
	separateYAML = "  - {name: openai, kind: translator, path: openai.wasm, mode: trusted, pool: {min: 1, max: 2}}\n" +
		"  - {name: vllm, kind: adapter, path: vllm.wasm, mode: trusted, pool: {min: 1, max: 2}}\n" +
		"  - {name: ollama, kind: adapter, path: ollama.wasm, mode: trusted, pool: {min: 1, max: 2}}\n"
)

func names(h *Host) string {
	var n []string
	for _, p := range h.Plugins() {
		n = append(n, p.Name()+":"+string(p.Manifest().Kind))
	}
	return strings.Join(n, " ")
}

// withCustomSection returns wasm with a custom section appended: other
// bytes (another sha256), the same code.
func withCustomSection(wasm []byte, payload string) []byte {
	name := "mindrouter-test"
	body := append([]byte{byte(len(name))}, name...)
	body = append(body, payload...)
	out := append(append([]byte(nil), wasm...), 0, byte(len(body))) // id 0; size < 128: one LEB128 byte
	return append(out, body...)
}

func TestBundle_Reload(t *testing.T) {
	d := newReloadBundle(t)
	d.yaml(bundleYAML)
	h := d.reloadDir.host()
	ctx := context.Background()
	fused := func(v *Version) error {
		var out Result
		return v.Call(ctx, abi.OpFusedRequest, CallInput{Translator: fpOpenAI, Adapter: fpVLLM, Meta: chatRoute, Payload: chatBody}, &out)
	}
	p := h.Plugin("firstparty")
	v1 := p.Pin()

	// A new build of the bundle: a new version; the pinned one keeps serving.
	wasm, err := os.ReadFile(filepath.Join(d.dir, "bundle.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(d.dir, "bundle-next.wasm")
	if err := os.WriteFile(next, withCustomSection(wasm, "v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Precompile(d.cache, next+"=trusted"); err != nil {
		t.Fatal(err)
	}
	d.yaml(strings.Replace(bundleYAML, "bundle.wasm", "bundle-next.wasm", 1))
	if err := h.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	v2 := p.Pin()
	if v2 == v1 || v2.Stats().Seq != 2 || v2.Stats().SHA256 == v1.Stats().SHA256 || v2.Manifest().Kind != sdk.KindBundle {
		t.Fatalf("after reload: v1 %+v, v2 %+v", v1.Stats(), v2.Stats())
	}
	if err := errors.Join(fused(v1), fused(v2)); err != nil {
		t.Fatal(err)
	}
	v2.Release()

	// The bundle replaced by separate modules: the bundle is retired (its
	// pinned version still serves), the three modules serve.
	d.yaml(separateYAML)
	if err := h.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(h); got != "openai:translator vllm:adapter ollama:adapter" || h.Plugin("firstparty") != nil || p.Pin() != nil {
		t.Fatalf("plugins %s", got)
	}
	if err := fused(v1); err != nil {
		t.Fatalf("pinned bundle version after its removal: %v", err)
	}
	v1.Release()
	f, c := fusedVsCanonical(t, mustNative(t), h.Plugin("openai"), h.Plugin("vllm"), 0, 0, fpVLLM)
	if !bytes.Equal(f, c) {
		t.Fatalf("separate modules after reload: %s vs %s", c, f)
	}

	// And back to the bundle.
	d.yaml(bundleYAML)
	if err := h.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(h); got != "firstparty:bundle" {
		t.Fatalf("plugins %s", got)
	}
	back := h.Plugin("firstparty").Pin()
	defer back.Release()
	if err := fused(back); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	h.WriteMetrics(&b)
	if !strings.Contains(b.String(), `mindrouter_plugin_component_calls_total{plugin="firstparty",component="openai+vllm",op="fused_request"} 1`) {
		t.Errorf("metrics after reloads:\n%s", b.String())
	}
}

// The repository's plugins.yaml loads the first-party bundle and the
// Gemini translator, and the
// alternatives it shows commented out (separate modules; native) are valid
// entries.
func TestRepoPluginsYAML(t *testing.T) {
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "plugins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The bundle, then the Gemini translator (a module of its own).
	if len(cfg.Plugins) != 2 {
		t.Fatalf("plugins %+v", cfg.Plugins)
	}
	if g := cfg.Plugins[1]; g.Name != "gemini" || g.Kind != sdk.KindTranslator || g.Path != "plugins/gemini.wasm" || g.Mode != ModeTrusted {
		t.Fatalf("gemini entry %+v", g)
	}
	pc := cfg.Plugins[0]
	if pc.Name != "firstparty" || pc.Kind != sdk.KindBundle || pc.Path != "plugins/bundle.wasm" || pc.Mode != ModeTrusted || pc.Pool.Min != 3 {
		t.Fatalf("bundle entry %+v", pc)
	}
	path, cache := bundleWasm(t)
	pc.Path = path
	h, err := New(context.Background(), &Config{ABI: cfg.ABI, CacheDir: cache, Plugins: []PluginConfig{pc}}, "", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	h.Close(context.Background())

	// Uncommented, the alternatives replace the bundle entry.
	var head, alt, native []string
	inPlugins := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case line == "plugins:":
			inPlugins = true
			head = append(head, line)
		case !inPlugins:
			head = append(head, line)
		case strings.HasPrefix(line, "  # - {name: firstparty"):
			native = append(native, "  "+strings.TrimPrefix(line, "  # "))
		case strings.HasPrefix(line, "  # - "), strings.HasPrefix(line, "  #   "):
			alt = append(alt, "  "+strings.TrimPrefix(line, "  # "))
		}
	}
	for _, tt := range []struct {
		entries []string
		want    string
	}{
		{alt, "openai:translator:plugins/openai.wasm anthropic:translator:plugins/anthropic.wasm ollama-api:translator:plugins/ollamaapi.wasm " +
			"openai-responses:translator:plugins/responses.wasm vllm:adapter:plugins/vllm.wasm ollama:adapter:plugins/ollama.wasm"},
		{native, "firstparty:bundle:native:firstparty"},
	} {
		c, err := ParseConfig([]byte(strings.Join(append(head, tt.entries...), "\n")))
		if err != nil {
			t.Fatalf("%v\n%s", err, strings.Join(tt.entries, "\n"))
		}
		var got []string
		for _, p := range c.Plugins {
			got = append(got, p.Name+":"+string(p.Kind)+":"+p.Path)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("alternative %s, want %s", got, tt.want)
		}
	}
}
