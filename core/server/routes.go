package server

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/jsonscan"
	"github.com/mindrouter/mindrouter/core/pathtmpl"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
)

// route is a translator route resolved for one request.
type route struct {
	plugin  *pluginhost.Plugin
	part    string // the translator component's name in the plugin
	r       sdk.Route
	kind    sdk.Endpoint
	dialect string         // the translator's format ("openai", ...)
	spec    *jsonscan.Spec // the routing fields' paths (nil: none declared)
	ndjson  bool           // the route streams NDJSON, not SSE
	marks   needMarks      // which of spec's markers show which need
	places  routePlaces    // ABI 2.8: template, selectors, credentials, model outside the body (routeplaces.go)
}

// needMarks are the bits of jsonscan.Result.Marks, for a route's spec,
// that show each need its Routing declares.
type needMarks struct{ vision, tools, structured uint16 }

// pathRoutes are the routes of one path, by method.
type pathRoutes struct {
	routes []route
	allow  string // "GET, POST": the Allow header of a 405
}

// routeIndex is an immutable snapshot of every translator route, rebuilt
// when the plugin host's generation changes (a load or reload), so a
// lookup is one map access with no allocation.
type routeIndex struct {
	gen    uint64
	byPath map[string]*pathRoutes
	// tmpls are the template routes (ABI 2.8), most literal text first,
	// tried in order after an exact path fails.
	tmpls []*tmplRoutes
}

// tmplRoutes are the routes of one path template, by method.
type tmplRoutes struct {
	t *pathtmpl.Template
	pathRoutes
}

type routeTable struct {
	host *pluginhost.Host
	cur  atomic.Pointer[routeIndex]
	mu   sync.Mutex // serialises rebuilds
}

func (t *routeTable) index() *routeIndex {
	gen := t.host.Generation()
	if ix := t.cur.Load(); ix != nil && ix.gen == gen {
		return ix
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ix := t.cur.Load(); ix != nil && ix.gen == gen {
		return ix
	}
	ix := buildIndex(t.host.Plugins(), gen)
	t.cur.Store(ix)
	return ix
}

// Routing-field paths are declared by plugins; a spec that does not compile
// leaves the route without a native scan of its fields (the pre-check of
// depth and size still runs).
func buildIndex(plugins []*pluginhost.Plugin, gen uint64) *routeIndex {
	ix := &routeIndex{gen: gen, byPath: map[string]*pathRoutes{}}
	for _, p := range plugins {
		for _, m := range p.Manifest().Parts() {
			if m.Kind == sdk.KindTranslator {
				ix.add(p, m)
			}
		}
	}
	slices.SortStableFunc(ix.tmpls, func(a, b *tmplRoutes) int { return b.t.LiteralLen() - a.t.LiteralLen() })
	return ix
}

// routesOf returns the routes of r's path: its exact path's, or its
// template's. A template that does not parse is left out (pluginhost
// refuses such a manifest at load; the index never fails).
func (ix *routeIndex) routesOf(r sdk.Route) (*pathRoutes, *pathtmpl.Template) {
	if !strings.Contains(r.Path, "{") {
		pr := ix.byPath[r.Path]
		if pr == nil {
			pr = &pathRoutes{}
			ix.byPath[r.Path] = pr
		}
		return pr, nil
	}
	t, err := pathtmpl.Parse(r.Path)
	if err != nil {
		return nil, nil
	}
	for _, tr := range ix.tmpls {
		if tr.t.String() == r.Path {
			return &tr.pathRoutes, tr.t
		}
	}
	tr := &tmplRoutes{t: t}
	ix.tmpls = append(ix.tmpls, tr)
	return &tr.pathRoutes, t
}

func (ix *routeIndex) add(p *pluginhost.Plugin, m sdk.Manifest) {
	for _, r := range m.Routes {
		pr, tmpl := ix.routesOf(r)
		if pr == nil {
			continue
		}
		method := r.Method
		if method == "" {
			method = "POST"
		}
		dup, methodSeen := false, false
		for _, x := range pr.routes {
			if x.r.Method == method {
				methodSeen = true
				// The first plugin in plugins.yaml order wins (pluginhost
				// refuses overlaps between plugins at load).
				dup = dup || slices.Equal(x.r.Select, r.Select)
			}
		}
		if dup {
			continue
		}
		r.Method = method
		rt := route{plugin: p, part: m.Name, r: r, kind: r.EndpointKind(), dialect: m.Format,
			ndjson: r.StreamContentType == "application/x-ndjson"}
		rt.places = newRoutePlaces(r, tmpl)
		if r.Routing != nil {
			rt.spec, rt.marks = routingSpec(bodyRouting(r.Routing))
		}
		pr.routes = append(pr.routes, rt)
		if methodSeen {
			continue
		}
		if pr.allow != "" {
			pr.allow += ", "
		}
		pr.allow += method
	}
}

// Indexes of the routing fields in a route's jsonscan.Spec.
const (
	fieldModel = iota
	fieldStream
	fieldIncludeUsage
	fieldChoices
	fieldPrompts
	fieldMaxTokens // and following: the max-tokens alternatives
)

// routingSpec compiles a route's routing paths and its markers of needs.
// Markers that do not compile are left out (the plugin still refuses what
// the chosen backend cannot serve), keeping the routing fields.
func routingSpec(r *sdk.Routing) (*jsonscan.Spec, needMarks) {
	paths := []string{r.Model, r.Stream, r.IncludeUsage, r.Choices, r.Prompts}
	paths = append(paths, r.MaxTokens...)
	for i, p := range paths {
		if p == "" {
			paths[i] = "\x00unused" + string(rune('a'+i)) // keeps indexes stable; no client key path has it
		}
	}
	markers := slices.Concat(r.Vision, r.Tools, r.Structured)
	var m needMarks
	bits := func(from, n int) uint16 { return uint16((1<<n - 1) << from) }
	m.vision = bits(0, len(r.Vision))
	m.tools = bits(len(r.Vision), len(r.Tools))
	m.structured = bits(len(r.Vision)+len(r.Tools), len(r.Structured))
	if len(markers) > 0 {
		if spec, err := jsonscan.NewSpecMarkers(paths, markers); err == nil {
			return spec, m
		}
	}
	spec, err := jsonscan.NewSpec(paths...)
	if err != nil {
		return nil, needMarks{}
	}
	return spec, needMarks{}
}

// lookup finds the route for method and path: an exact path first, then
// the templates, most literal text first. found is false for an unknown
// path; a known path with another method returns its Allow list. rq (nil:
// none) is what a route's Select reads (routeplaces.go). It does not
// allocate.
func (ix *routeIndex) lookup(method, path []byte, rq *fasthttp.Request) (rt *route, allow string, found bool) {
	if pr := ix.byPath[string(path)]; pr != nil {
		if rt := pr.pick(method, rq); rt != nil {
			return rt, "", true
		}
		if !pr.gated(method) {
			allow, found = pr.allow, true
		}
	}
	var caps pathtmpl.Captures
	for _, tr := range ix.tmpls {
		if !tr.t.Match(path, &caps) {
			continue
		}
		if rt := tr.pick(method, rq); rt != nil {
			return rt, "", true
		}
		if !found && !tr.gated(method) {
			allow, found = tr.allow, true
		}
	}
	return nil, allow, found
}

// gated reports whether method has routes here, every one behind a
// selector: a request that shows none of them is not this path's (404,
// not 405), as if the plugin declaring them were not loaded.
func (pr *pathRoutes) gated(method []byte) bool {
	for i := range pr.routes {
		if r := &pr.routes[i].r; r.Method == string(method) || string(method) == "HEAD" && r.Method == "GET" {
			return true
		}
	}
	return false
}

// pick returns the route of method (HEAD: GET's when it has none of its
// own), preferring one whose Select holds over one without Select.
func (pr *pathRoutes) pick(method []byte, rq *fasthttp.Request) *route {
	if rt := pr.pickMethod(string(method), rq); rt != nil {
		return rt
	}
	if string(method) == "HEAD" {
		return pr.pickMethod("GET", rq)
	}
	return nil
}

func (pr *pathRoutes) pickMethod(method string, rq *fasthttp.Request) *route {
	var plain *route
	for i := range pr.routes {
		rt := &pr.routes[i]
		if rt.r.Method != method {
			continue
		}
		if len(rt.places.sel) == 0 {
			if plain == nil {
				plain = rt
			}
			continue
		}
		if rt.places.selected(rq) {
			return rt
		}
	}
	return plain
}
