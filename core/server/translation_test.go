package server

import (
	"sync/atomic"
	"testing"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// countingTranslator decodes any body to a one-message request for model
// "m", counting its decodes.
type countingTranslator struct {
	sdk.Unimplemented
	decodes *atomic.Int64
}

func (c countingTranslator) DecodeRequest(_ *sdk.Call, _ []byte, req *canon.ChatRequest) error {
	c.decodes.Add(1)
	req.Model = "m"
	req.Messages = []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "hi"}}}}
	return nil
}

type idleAdapter struct{ sdk.Unimplemented }

var decodeRouting = &sdk.Routing{Model: "model", Stream: "stream", MaxTokens: []string{"max_tokens"}}

// decodeRoute is a chat route served by a countingTranslator, alone or
// in a bundle with an adapter.
func decodeRoute(t *testing.T, bundle bool) (*route, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	rt := chatRoute(decodeRouting)
	m := sdk.Manifest{Name: "tr", Version: "1", Format: "openai", Routes: []sdk.Route{rt.r}}
	p := pluginhost.NewNativePlugin("tr", func() *sdk.Plugin {
		if bundle {
			return sdk.NewBundle("b", "1", sdk.TranslatorPart(m, countingTranslator{decodes: &n}),
				sdk.AdapterPart(sdk.Manifest{Name: "ad", Version: "1", Format: "vllm"}, idleAdapter{}))
		}
		return sdk.NewTranslator(m, countingTranslator{decodes: &n})
	})
	if v := p.Pin(); v == nil {
		t.Fatalf("native plugin: %v", p.LastError())
	} else {
		v.Release()
	}
	rt.plugin, rt.part = p, "tr"
	return rt, &n
}

// After the decode stage the canonical request is valid, except on the
// fused fast path: a natively routed request whose translator's module
// holds adapters stays in client form until something needs it
// (canonical), which decodes once.
func TestDecode_CanonicalOrDeferredToFusion(t *testing.T) {
	s := newTestServer(t, nil)
	routed := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	unroutable := `{"model":"m","stream":"yes"}` // the translator must say what is wrong
	for _, tc := range []struct {
		name     string
		bundle   bool
		body     string
		deferred bool
	}{
		{"separate modules, routed", false, routed, false},
		{"separate modules, not routed", false, unroutable, false},
		{"bundle, routed", true, routed, true},
		{"bundle, not routed", true, unroutable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, decodes := decodeRoute(t, tc.bundle)
			ex := newEx(s, nil)
			defer ex.releaseHeld()
			ex.setRoute(rt)
			ex.body = append(ex.body[:0], tc.body...)
			if err := (precheck{s}).run(nil, ex); err != nil {
				t.Fatal(err)
			}
			if err := (decode{}).run(nil, ex); err != nil {
				t.Fatal(err)
			}
			if got := !ex.decoded; got != tc.deferred {
				t.Fatalf("deferred %v, want %v (routed %v, fusable %v)", got, tc.deferred, ex.routed, ex.fusable)
			}
			if want := int64(1); tc.deferred {
				want = 0
				if decodes.Load() != want {
					t.Fatalf("%d decodes before the canonical request was needed", decodes.Load())
				}
			} else if decodes.Load() != want || len(ex.canon) == 0 {
				t.Fatalf("%d decodes, canonical %q", decodes.Load(), ex.canon)
			}
			for range 2 {
				if err := ex.canonical(); err != nil {
					t.Fatal(err)
				}
			}
			if decodes.Load() != 1 || !ex.decoded || len(ex.canon) == 0 || ex.req.Model != "m" {
				t.Fatalf("after canonical: %d decodes, decoded %v, canonical %q, model %q", decodes.Load(), ex.decoded, ex.canon, ex.req.Model)
			}
		})
	}
}

// translationFor chooses once per attempt: unary for the unary kinds,
// fused when the adapter shares the translator's pin and the request is
// still in client form, canonical otherwise.
func TestTranslationFor(t *testing.T) {
	s := newTestServer(t, nil)
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "gpu-1", Engine: "vllm", URL: "http://127.0.0.1:1", MaxConcurrent: 1}}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := reg.Backend("gpu-1")
	rt, _ := decodeRoute(t, true)
	other, _ := decodeRoute(t, false)
	for _, tc := range []struct {
		name      string
		unary     *plugcall.Unary
		sameMod   bool // the adapter is in the translator's module
		decoded   bool
		wantFused bool
	}{
		{"fused", nil, true, false, true},
		{"one module, already canonical", nil, true, true, false},
		{"adapter in another module", nil, false, false, false},
		{"embedding", &plugcall.Embed, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := newEx(s, nil)
			defer ex.releaseHeld()
			ex.setRoute(rt)
			if err := ex.pinTranslator(); err != nil {
				t.Fatal(err)
			}
			ex.aver = ex.tver
			if !tc.sameMod {
				ex.aver = other.plugin.Pin()
			}
			ex.unary, ex.decoded = tc.unary, tc.decoded
			tr, err := ex.translationFor(b)
			if err != nil {
				t.Fatal(err)
			}
			switch got := tr.(type) {
			case unaryTranslation:
				if tc.unary == nil || got.u != tc.unary {
					t.Fatalf("unary translation %v for op set %v", got.u, tc.unary)
				}
			case fusedTranslation:
				if !tc.wantFused || tc.unary != nil {
					t.Fatal("fused")
				}
			case canonicalTranslation:
				if tc.wantFused || tc.unary != nil {
					t.Fatal("canonical")
				}
			default:
				t.Fatalf("translation %T", tr)
			}
		})
	}
}
