package server

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
)

var (
	chatPOST = sdk.Route{Name: "chat", Kind: sdk.EndpointChat, Method: "POST", Path: "/v1/chat/completions",
		Routing: &sdk.Routing{Model: "model", Stream: "stream"}}
	modelsGET = sdk.Route{Name: "models", Kind: sdk.EndpointModels, Method: "GET", Path: "/v1/models"}
)

func TestBuildIndex_Lookup(t *testing.T) {
	openai := translator(t, "openai", fakeTranslator{}, modelsGET, chatPOST,
		// GET then POST on one path: Allow lists them in manifest order.
		sdk.Route{Name: "models", Method: "GET", Path: "/v1/both"},
		sdk.Route{Name: "chat", Method: "POST", Path: "/v1/both"},
		// No method: POST.
		sdk.Route{Name: "chat", Path: "/api/chat", StreamContentType: "application/x-ndjson",
			Routing: &sdk.Routing{Model: "model"}})
	// A second translator repeating a route: the first plugin keeps it;
	// its other method on that path is added.
	other := translator(t, "other", fakeTranslator{}, sdk.Route{Name: "chat", Method: "POST", Path: "/v1/chat/completions"},
		sdk.Route{Name: "models", Method: "GET", Path: "/v1/chat/completions"})
	adapter := pluginhost.NewNativePlugin("vllm", func() *sdk.Plugin {
		return sdk.NewAdapter(sdk.Manifest{Name: "vllm", Format: "vllm",
			Routes: []sdk.Route{{Name: "chat", Method: "POST", Path: "/adapter"}}}, sdk.Unimplemented{})
	})
	ix := buildIndex([]*pluginhost.Plugin{openai, other, adapter}, 7)
	if ix.gen != 7 {
		t.Fatalf("gen %d", ix.gen)
	}

	look := func(method, path string) (*route, string, bool) {
		return ix.lookup([]byte(method), []byte(path), nil)
	}
	rt, allow, found := look("POST", "/v1/chat/completions")
	if rt == nil || !found || allow != "" {
		t.Fatalf("POST chat: %v %q %v", rt, allow, found)
	}
	if rt.plugin != openai || rt.kind != sdk.EndpointChat || rt.dialect != "openai" || rt.spec == nil || rt.ndjson {
		t.Fatalf("POST chat route: plugin %s kind %s dialect %s spec %v ndjson %v", rt.plugin.Name(), rt.kind, rt.dialect, rt.spec, rt.ndjson)
	}
	if rt, _, _ := look("GET", "/v1/chat/completions"); rt == nil || rt.plugin != other || rt.kind != "models" {
		t.Fatalf("GET on chat path from the second plugin: %+v", rt)
	}
	if _, allow, _ := look("DELETE", "/v1/chat/completions"); allow != "POST, GET" {
		t.Fatalf("Allow %q", allow)
	}

	rt, _, _ = look("GET", "/v1/models")
	if rt == nil || rt.kind != sdk.EndpointModels || rt.spec != nil {
		t.Fatalf("GET models: %+v", rt)
	}
	// HEAD falls back to GET.
	if head, _, found := look("HEAD", "/v1/models"); head != rt || !found {
		t.Fatalf("HEAD models: %+v", head)
	}
	// Wrong method: the Allow list.
	rt, allow, found = look("POST", "/v1/models")
	if rt != nil || !found || allow != "GET" {
		t.Fatalf("POST models: %v %q %v", rt, allow, found)
	}
	rt, allow, found = look("PUT", "/v1/both")
	if rt != nil || !found || allow != "GET, POST" {
		t.Fatalf("PUT both: %v %q %v", rt, allow, found)
	}
	// HEAD on a POST-only path is not a GET.
	if rt, allow, found := look("HEAD", "/api/chat"); rt != nil || !found || allow != "POST" {
		t.Fatalf("HEAD POST-only: %v %q %v", rt, allow, found)
	}
	// Defaults: no method is POST; the NDJSON content type marks the route.
	rt, _, _ = look("POST", "/api/chat")
	if rt == nil || rt.r.Method != "POST" || !rt.ndjson || rt.kind != "chat" {
		t.Fatalf("POST /api/chat: %+v", rt)
	}
	// Unknown paths, and adapters serve no routes.
	for _, p := range []string{"/v1/unknown", "/adapter", "/v1/models/", "/V1/MODELS", ""} {
		if rt, allow, found := look("GET", p); rt != nil || found || allow != "" {
			t.Fatalf("%q: %v %q %v", p, rt, allow, found)
		}
	}
	// Methods are case-sensitive tokens.
	if rt, _, found := look("get", "/v1/models"); rt != nil || !found {
		t.Fatalf("lower-case method: %+v", rt)
	}
}

func TestBuildIndex_DuplicateFirstPluginWins(t *testing.T) {
	a := translator(t, "a", fakeTranslator{}, chatPOST)
	b := translator(t, "b", fakeTranslator{}, chatPOST)
	for _, order := range [][]*pluginhost.Plugin{{a, b}, {b, a}} {
		ix := buildIndex(order, 1)
		pr := ix.byPath[chatPOST.Path]
		if len(pr.routes) != 1 || pr.allow != "POST" {
			t.Fatalf("routes %d allow %q", len(pr.routes), pr.allow)
		}
		if pr.routes[0].plugin != order[0] {
			t.Fatalf("route kept from %s, want %s", pr.routes[0].plugin.Name(), order[0].Name())
		}
	}
	// A plugin repeating its own route: the first declaration wins.
	c := translator(t, "c", fakeTranslator{}, chatPOST, sdk.Route{Name: "other", Method: "POST", Path: chatPOST.Path})
	if pr := buildIndex([]*pluginhost.Plugin{c}, 1).byPath[chatPOST.Path]; len(pr.routes) != 1 || pr.routes[0].r.Name != "chat" || pr.allow != "POST" {
		t.Fatalf("%+v", pr)
	}
}

// lookup does not allocate: it runs on every request.
func TestLookup_NoAllocs(t *testing.T) {
	ix := buildIndex([]*pluginhost.Plugin{translator(t, "openai", fakeTranslator{}, chatPOST, modelsGET)}, 1)
	m, p, h := []byte("POST"), []byte("/v1/chat/completions"), []byte("HEAD")
	mp := []byte("/v1/models")
	if n := testing.AllocsPerRun(100, func() {
		ix.lookup(m, p, nil)
		ix.lookup(h, mp, nil)
		ix.lookup(m, mp, nil)
	}); n != 0 {
		t.Fatalf("lookup allocates %v times", n)
	}
}

// index() rebuilds the snapshot when the host's generation changed and
// otherwise returns the same one.
func TestRouteTable_Index(t *testing.T) {
	s := newTestServer(t, nil, translator(t, "openai", fakeTranslator{}, chatPOST))
	ix := s.routes.index()
	if ix != s.routes.index() || ix.byPath[chatPOST.Path] == nil {
		t.Fatal("the current snapshot is not reused")
	}
	s.routes.cur.Store(&routeIndex{gen: ix.gen + 100, byPath: ix.byPath})
	fresh := s.routes.index()
	if fresh.gen != s.host.Generation() || len(fresh.byPath) != 0 { // the host itself has no plugins
		t.Fatalf("stale snapshot kept: gen %d paths %d", fresh.gen, len(fresh.byPath))
	}
}

func handleReq(s *Server, method, path string, hdrs ...string) *fasthttp.RequestCtx {
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	for i := 0; i+1 < len(hdrs); i += 2 {
		ctx.Request.Header.Add(hdrs[i], hdrs[i+1])
	}
	s.Handle(ctx)
	return ctx
}

// Handle answers 404 for an unknown path and 405 with Allow for a known
// path's other method, closing the connection (the body is not read), and
// a route whose kind the gateway does not serve is a 404 too.
func TestHandle_Routing(t *testing.T) {
	s := newTestServer(t, nil, translator(t, "openai", fakeTranslator{}, chatPOST, modelsGET,
		sdk.Route{Name: "completion", Kind: sdk.EndpointCompletion, Method: "POST", Path: "/v1/reserved"}))

	ctx := handleReq(s, "POST", "/v1/nope")
	if msg, _, code := errorBody(t, ctx.Response.Body()); ctx.Response.StatusCode() != 404 || code != "unknown_route" ||
		!strings.Contains(msg, "/v1/nope") || !ctx.Response.ConnectionClose() || len(ctx.Response.Header.Peek("X-Request-ID")) == 0 {
		t.Fatalf("unknown route:\n%s", ctx.Response.String())
	}

	ctx = handleReq(s, "DELETE", "/v1/chat/completions")
	if ctx.Response.StatusCode() != 405 || string(ctx.Response.Header.Peek("Allow")) != "POST" || !ctx.Response.ConnectionClose() {
		t.Fatalf("405:\n%s", ctx.Response.String())
	}
	if _, _, code := errorBody(t, ctx.Response.Body()); code != "method_not_allowed" {
		t.Fatalf("405 body %s", ctx.Response.Body())
	}

	ctx = handleReq(s, "POST", "/v1/reserved", "Authorization", "Bearer "+testKey)
	if ctx.Response.StatusCode() != 404 || !strings.Contains(string(ctx.Response.Body()), "unknown_route") {
		t.Fatalf("unserved kind:\n%s", ctx.Response.String())
	}

	// HEAD reaches the GET route's chain: its first stage wants a key, and
	// the route's translator renders the 401.
	ctx = handleReq(s, "HEAD", "/v1/models")
	if ctx.Response.StatusCode() != 401 || string(ctx.Response.Header.ContentType()) != "application/x-fake" {
		t.Fatalf("HEAD models:\n%s", ctx.Response.String())
	}

	// Builtins bypass the routes.
	ctx = handleReq(s, "GET", "/healthz")
	if ctx.Response.StatusCode() != 200 || !strings.Contains(string(ctx.Response.Body()), `"alive"`) {
		t.Fatalf("healthz:\n%s", ctx.Response.String())
	}
}

// A 413 for a declared Content-Length over the limit comes before any
// body is read and after the key check.
func TestHandle_ChatChainOrder(t *testing.T) {
	s := newTestServer(t, nil, translator(t, "openai", fakeTranslator{}, chatPOST))
	var seen []int
	s.observers = append(s.observers, observerFunc(func(status int) { seen = append(seen, status) }))

	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	cr := &countingReader{r: strings.NewReader("{}")}
	ctx.Request.SetBodyStream(cr, s.cfg.Limits.MaxBodyBytes+1)
	s.Handle(ctx) // no key: 401 first
	if ctx.Response.StatusCode() != 401 || cr.reads != 0 {
		t.Fatalf("status %d reads %d", ctx.Response.StatusCode(), cr.reads)
	}

	ctx = new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer "+testKey)
	ctx.Request.SetBodyStream(cr, s.cfg.Limits.MaxBodyBytes+1)
	s.Handle(ctx)
	if ctx.Response.StatusCode() != 413 || cr.reads != 0 || !ctx.Response.ConnectionClose() {
		t.Fatalf("status %d reads %d", ctx.Response.StatusCode(), cr.reads)
	}
	if len(seen) != 2 || seen[0] != 401 || seen[1] != 413 {
		t.Fatalf("observers saw %v", seen)
	}
	if s.buffered.Load() != 0 {
		t.Fatalf("buffered %d", s.buffered.Load())
	}
}

type observerFunc func(status int)

func (f observerFunc) Observe(o *outcome.Outcome) { f(o.Status) }
