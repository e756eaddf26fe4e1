package server

import (
	"errors"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
)

var (
	geminiKey      = []string{"header:x-goog-api-key", "query:key"}
	geminiGenerate = sdk.Route{Name: "generate", Kind: sdk.EndpointChat, Method: "POST",
		Path: "/v1/models/{model}:generateContent", Credentials: geminiKey, Routing: &sdk.Routing{Model: "path:model"}}
	geminiStreamSSE = sdk.Route{Name: "stream-sse", Kind: sdk.EndpointChat, Method: "POST",
		Path: "/v1/models/{model}:streamGenerateContent", Select: []string{"query:alt=sse"}, Credentials: geminiKey,
		Routing: &sdk.Routing{Model: "path:model", StreamByDflt: true}}
	geminiStream = sdk.Route{Name: "stream", Kind: sdk.EndpointChat, Method: "POST",
		Path: "/v1/models/{model}:streamGenerateContent", Credentials: geminiKey,
		Routing: &sdk.Routing{Model: "path:model", StreamByDflt: true}}
	geminiList = sdk.Route{Name: "list", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models",
		Select: geminiKey, Credentials: geminiKey}
	geminiGet = sdk.Route{Name: "get", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models/{model}",
		Credentials: geminiKey, Routing: &sdk.Routing{Model: "path:model"}}
	geminiGetGated = sdk.Route{Name: "get-gated", Kind: sdk.EndpointModels, Method: "GET", Path: "/v2/models/{model}",
		Select: geminiKey, Credentials: geminiKey, Routing: &sdk.Routing{Model: "path:model"}}
)

func request(uri string, hdrs ...string) *fasthttp.Request {
	rq := new(fasthttp.Request)
	rq.SetRequestURI(uri)
	for i := 0; i+1 < len(hdrs); i += 2 {
		rq.Header.Add(hdrs[i], hdrs[i+1])
	}
	return rq
}

// Templates route model names with '/' and ':' in them, selectors pick
// between two dialects on one path, and an exact path beats a template.
func TestLookup_TemplatesAndSelectors(t *testing.T) {
	openai := translator(t, "openai", fakeTranslator{}, modelsGET, chatPOST)
	gemini := translator(t, "gemini", fakeTranslator{}, geminiGenerate, geminiStreamSSE, geminiStream, geminiList, geminiGet, geminiGetGated)
	ix := buildIndex([]*pluginhost.Plugin{openai, gemini}, 1)
	for _, tc := range []struct {
		method, uri string
		hdrs        []string
		want        string // plugin/route; "" none
		allow       string
	}{
		{"POST", "/v1/models/openai/gpt-oss-120b:generateContent", nil, "gemini/generate", ""},
		{"POST", "/v1/models/llama3.2:3b:generateContent", nil, "gemini/generate", ""},
		{"POST", "/v1/models/x:streamGenerateContent?alt=sse", nil, "gemini/stream-sse", ""},
		{"POST", "/v1/models/x:streamGenerateContent", nil, "gemini/stream", ""},
		{"POST", "/v1/models/x:streamGenerateContent?alt=json", nil, "gemini/stream", ""},
		{"GET", "/v1/models", nil, "openai/models", ""},
		{"GET", "/v1/models", []string{"x-goog-api-key", "k"}, "gemini/list", ""},
		{"GET", "/v1/models?key=k", nil, "gemini/list", ""},
		{"HEAD", "/v1/models?key=k", nil, "gemini/list", ""},
		{"GET", "/v1/models/openai/gpt-oss-120b", nil, "gemini/get", ""},
		{"GET", "/v2/models/x", nil, "", ""}, // selector-gated only, none shown: 404
		{"GET", "/v2/models/x", []string{"x-goog-api-key", "k"}, "gemini/get-gated", ""},
		{"POST", "/v2/models/x", nil, "", "GET"},
		{"POST", "/v1/chat/completions", []string{"x-goog-api-key", "k"}, "openai/chat", ""},
		{"DELETE", "/v1/models/a:generateContent", nil, "", "POST"},
		{"PUT", "/v1/models", nil, "", "GET"},
		{"POST", "/v1/models/:generateContent", nil, "", "GET"}, // only the get template matches
	} {
		rq := request(tc.uri, tc.hdrs...)
		rt, allow, _ := ix.lookup([]byte(tc.method), rq.URI().Path(), rq)
		got := ""
		if rt != nil {
			got = rt.plugin.Name() + "/" + rt.r.Name
		}
		if got != tc.want || allow != tc.allow {
			t.Errorf("%s %s %v: route %q allow %q, want %q %q", tc.method, tc.uri, tc.hdrs, got, allow, tc.want, tc.allow)
		}
	}
}

// A template route's lookup, selectors included, makes no allocation.
func TestLookup_TemplateNoAllocs(t *testing.T) {
	openai := translator(t, "openai", fakeTranslator{}, modelsGET, chatPOST)
	gemini := translator(t, "gemini", fakeTranslator{}, geminiGenerate, geminiStreamSSE, geminiStream, geminiList, geminiGet)
	ix := buildIndex([]*pluginhost.Plugin{openai, gemini}, 1)
	gen := request("/v1/models/openai/gpt-oss-120b:generateContent")
	sse := request("/v1/models/openai/gpt-oss-120b:streamGenerateContent?alt=sse")
	list := request("/v1/models", "X-Goog-Api-Key", "k")
	post, get := []byte("POST"), []byte("GET")
	gp, sp, lp := gen.URI().Path(), sse.URI().Path(), list.URI().Path()
	if n := testing.AllocsPerRun(100, func() {
		if rt, _, _ := ix.lookup(post, gp, gen); rt == nil || rt.r.Name != "generate" {
			t.Fatal("generate")
		}
		if rt, _, _ := ix.lookup(post, sp, sse); rt == nil || rt.r.Name != "stream-sse" {
			t.Fatal("stream-sse")
		}
		if rt, _, _ := ix.lookup(get, lp, list); rt == nil || rt.r.Name != "list" {
			t.Fatal("list")
		}
	}); n != 0 {
		t.Fatalf("lookup allocates %v times", n)
	}
}

func TestKeyFromRequest(t *testing.T) {
	pl := newRoutePlaces(geminiGenerate, nil)
	for _, tc := range []struct {
		name, uri string
		hdrs      []string
		want      string
		err       error
	}{
		{"goog header", "/x", []string{"x-goog-api-key", "mr2_a"}, "mr2_a", nil},
		{"query key", "/x?alt=sse&key=mr2_b", nil, "mr2_b", nil},
		{"bearer", "/x", []string{"Authorization", "Bearer mr2_c"}, "mr2_c", nil},
		{"same twice", "/x?key=mr2_a", []string{"x-goog-api-key", "mr2_a"}, "mr2_a", nil},
		{"different", "/x?key=mr2_b", []string{"x-goog-api-key", "mr2_a"}, "", errAmbiguousKey},
		{"header and bearer differ", "/x", []string{"x-goog-api-key", "mr2_a", "Authorization", "Bearer mr2_c"}, "", errAmbiguousKey},
		{"header twice", "/x", []string{"x-goog-api-key", "mr2_a", "X-Goog-Api-Key", "mr2_a"}, "", errAmbiguousKey},
		{"query twice", "/x?key=mr2_a&key=mr2_a", nil, "", errAmbiguousKey},
		{"none", "/x", nil, "", nil},
	} {
		key, err := keyFromRequest(request(tc.uri, tc.hdrs...), &pl)
		if string(key) != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: key %q err %v, want %q %v", tc.name, key, err, tc.want, tc.err)
		}
	}
	// A route that declares no credentials reads only the standard headers.
	var none routePlaces
	if key, _ := keyFromRequest(request("/x?key=mr2_b", "x-goog-api-key", "mr2_a"), &none); len(key) != 0 {
		t.Fatalf("undeclared places read: %q", key)
	}
}

func TestWithoutParams(t *testing.T) {
	creds := newRoutePlaces(geminiGenerate, nil).creds
	for q, want := range map[string]string{
		"alt=sse&key=mr2_x": "alt=sse",
		"key=mr2_x":         "",
		"key=a&alt=sse&b=1": "alt=sse&b=1",
		"keys=1&&alt=sse":   "keys=1&alt=sse",
		"":                  "",
	} {
		if got := string(withoutParams(nil, []byte(q), creds)); got != want {
			t.Errorf("%q: %q, want %q", q, got, want)
		}
	}
}
