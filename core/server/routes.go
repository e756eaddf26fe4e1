package server

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mindrouter/mindrouter/core/jsonscan"
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
	return ix
}

func (ix *routeIndex) add(p *pluginhost.Plugin, m sdk.Manifest) {
	for _, r := range m.Routes {
		pr := ix.byPath[r.Path]
		if pr == nil {
			pr = &pathRoutes{}
			ix.byPath[r.Path] = pr
		}
		method := r.Method
		if method == "" {
			method = "POST"
		}
		dup := false
		for _, x := range pr.routes {
			if x.r.Method == method {
				dup = true // the first plugin in plugins.yaml order wins
			}
		}
		if dup {
			continue
		}
		r.Method = method
		rt := route{plugin: p, part: m.Name, r: r, kind: r.EndpointKind(), dialect: m.Format,
			ndjson: r.StreamContentType == "application/x-ndjson"}
		if r.Routing != nil {
			rt.spec, rt.marks = routingSpec(r.Routing)
		}
		pr.routes = append(pr.routes, rt)
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

// lookup finds the route for method and path. found is false for an unknown
// path; a known path with another method returns its Allow list.
func (ix *routeIndex) lookup(method, path []byte) (rt *route, allow string, found bool) {
	pr := ix.byPath[string(path)]
	if pr == nil {
		return nil, "", false
	}
	for i := range pr.routes {
		if pr.routes[i].r.Method == string(method) {
			return &pr.routes[i], "", true
		}
	}
	if string(method) == "HEAD" {
		for i := range pr.routes {
			if pr.routes[i].r.Method == "GET" {
				return &pr.routes[i], "", true
			}
		}
	}
	return nil, pr.allow, true
}
