package server

import (
	"bytes"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/jsonscan"
	"github.com/mindrouter/mindrouter/core/pathtmpl"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// place is where a route reads a value outside its body (ABI 2.8): a
// header, a query parameter or a capture of its path template.
type place struct {
	from  byte   // 0: none (the body), 'h' header, 'q' query, 'p' path capture
	name  string // header or parameter name; capture name
	value string // a selector's required value ("": present is enough)
	cap   int    // 'p': the capture's index in the template
}

// routePlaces are what a route declares beyond an exact path and a body:
// its template, selectors, credentials and a model field outside the body.
type routePlaces struct {
	tmpl  *pathtmpl.Template // nil: an exact path
	sel   []place            // sdk.Route.Select: any holding selects the route
	creds []place            // sdk.Route.Credentials
	model place              // sdk.Routing.Model outside the body
	// meta: the route's translator ops get its captures and query string
	// (abi.MetaCapturePrefix, abi.MetaQuery); set for any route declaring
	// a 2.8 feature, so older routes' calls are as they were.
	meta bool
}

// parsePlace reads "header:NAME", "query:NAME[=VALUE]" or "path:NAME"
// (only with a template that has that capture). ok is false for anything
// else.
func parsePlace(s string, tmpl *pathtmpl.Template) (place, bool) {
	var p place
	switch {
	case strings.HasPrefix(s, sdk.FromHeader):
		p.from, p.name = 'h', s[len(sdk.FromHeader):]
	case strings.HasPrefix(s, sdk.FromQuery):
		p.from, p.name = 'q', s[len(sdk.FromQuery):]
		p.name, p.value, _ = strings.Cut(p.name, "=")
	case strings.HasPrefix(s, sdk.FromPath):
		p.from, p.name = 'p', s[len(sdk.FromPath):]
		if tmpl == nil {
			return place{}, false
		}
		if p.cap = tmpl.Index(p.name); p.cap < 0 {
			return place{}, false
		}
	default:
		return place{}, false
	}
	return p, p.name != ""
}

// isPlace reports whether a routing path names a place outside the body.
func isPlace(s string) bool {
	return strings.HasPrefix(s, sdk.FromHeader) || strings.HasPrefix(s, sdk.FromQuery) || strings.HasPrefix(s, sdk.FromPath)
}

// newRoutePlaces compiles r's 2.8 declarations. Entries that do not parse
// are left out (pluginhost refuses such manifests at load).
func newRoutePlaces(r sdk.Route, tmpl *pathtmpl.Template) routePlaces {
	pl := routePlaces{tmpl: tmpl}
	for _, s := range r.Select {
		if p, ok := parsePlace(s, tmpl); ok && p.from != 'p' {
			pl.sel = append(pl.sel, p)
		}
	}
	for _, s := range r.Credentials {
		if p, ok := parsePlace(s, tmpl); ok && p.from != 'p' && p.value == "" {
			pl.creds = append(pl.creds, p)
		}
	}
	if r.Routing != nil && isPlace(r.Routing.Model) {
		pl.model, _ = parsePlace(r.Routing.Model, tmpl)
	}
	pl.meta = tmpl != nil || len(r.Select) > 0 || len(r.Credentials) > 0 || pl.model.from != 0
	return pl
}

// bodyRouting is r without the fields it places outside the body, for the
// body scan's spec.
func bodyRouting(r *sdk.Routing) *sdk.Routing {
	if !isPlace(r.Model) && !isPlace(r.Stream) && !isPlace(r.IncludeUsage) {
		return r
	}
	c := *r
	for _, f := range []*string{&c.Model, &c.Stream, &c.IncludeUsage} {
		if isPlace(*f) {
			*f = ""
		}
	}
	return &c
}

// selected reports whether one of the route's selectors holds for rq.
func (pl *routePlaces) selected(rq *fasthttp.Request) bool {
	if rq == nil {
		return false
	}
	for i := range pl.sel {
		p := &pl.sel[i]
		switch p.from {
		case 'h':
			if len(rq.Header.Peek(p.name)) > 0 {
				return true
			}
		case 'q':
			args := rq.URI().QueryArgs()
			if p.value == "" && args.Has(p.name) || p.value != "" && string(args.Peek(p.name)) == p.value {
				return true
			}
		}
	}
	return false
}

// value returns p's value in rq (caps: the path's captures).
func (p *place) valueIn(rq *fasthttp.Request, path []byte, caps *pathtmpl.Captures) []byte {
	switch p.from {
	case 'h':
		return rq.Header.Peek(p.name)
	case 'q':
		return rq.URI().QueryArgs().Peek(p.name)
	case 'p':
		return path[caps[p.cap].Start:caps[p.cap].End]
	}
	return nil
}

// keyFromRequest returns the one key rq carries: keyFromHeaders' from
// Authorization or X-API-Key, or one from the places the route declares
// (sdk.Route.Credentials). Two different keys, or one place given twice,
// are refused as keyFromHeaders refuses them.
func keyFromRequest(rq *fasthttp.Request, pl *routePlaces) ([]byte, error) {
	key, err := keyFromHeaders(&rq.Header)
	if err != nil || len(pl.creds) == 0 {
		return key, err
	}
	for i := range pl.creds {
		p := &pl.creds[i]
		var v []byte
		n := 0
		if p.from == 'h' {
			for k, hv := range rq.Header.All() {
				if bytes.EqualFold(k, []byte(p.name)) {
					v, n = hv, n+1
				}
			}
		} else {
			for k, qv := range rq.URI().QueryArgs().All() {
				if string(k) == p.name {
					v, n = qv, n+1
				}
			}
		}
		if n > 1 {
			return nil, errAmbiguousKey
		}
		v = bytes.TrimSpace(v)
		switch {
		case len(v) == 0:
		case len(key) == 0:
			key = v
		case !bytes.Equal(key, v):
			return nil, errAmbiguousKey
		}
	}
	return key, nil
}

// noteRouteInputs gives a 2.8 route's translator ops its captures and
// query string (less the credential parameters) as meta.
func (ex *exchange) noteRouteInputs(ctx *fasthttp.RequestCtx) {
	pl := &ex.route.places
	if !pl.meta {
		return
	}
	m := ex.calls.Extra[:0]
	if pl.tmpl != nil {
		var caps pathtmpl.Captures
		if path := ctx.Path(); pl.tmpl.Match(path, &caps) {
			for i, name := range pl.tmpl.Names() {
				m = abi.AppendMetaBytes(m, abi.MetaCapturePrefix+name, path[caps[i].Start:caps[i].End])
			}
		}
	}
	m = abi.AppendMetaBytes(m, abi.MetaQuery, withoutParams(ex.buf[:0], ctx.QueryArgs().QueryString(), pl.creds))
	ex.calls.Extra = m
}

// withoutParams appends the raw query string q less the parameters named
// by creds' query places.
func withoutParams(dst, q []byte, creds []place) []byte {
	for len(q) > 0 {
		var part []byte
		part, q, _ = bytes.Cut(q, []byte("&"))
		name, _, _ := bytes.Cut(part, []byte("="))
		drop := false
		for i := range creds {
			if creds[i].from == 'q' && string(name) == creds[i].name {
				drop = true
			}
		}
		if drop || len(part) == 0 {
			continue
		}
		if len(dst) > 0 {
			dst = append(dst, '&')
		}
		dst = append(dst, part...)
	}
	return dst
}

// placedModel takes a route's model from outside its body (a capture, a
// query parameter or a header), checks it like a body's, and takes the
// body's other routing fields.
func (ex *exchange) placedModel(ctx *fasthttp.RequestCtx) error {
	pl := &ex.route.places
	var caps pathtmpl.Captures
	path := ctx.Path()
	if pl.model.from == 'p' && (pl.tmpl == nil || !pl.tmpl.Match(path, &caps)) {
		return nil
	}
	name := pl.model.valueIn(&ctx.Request, path, &caps)
	if len(name) == 0 {
		return apierr.New(canon.ErrInvalidRequest, "invalid_model", "model is required")
	}
	if len(name) > maxModelName {
		return errModelTooLong
	}
	if jsonscan.HasControl(name) {
		return errModelControl
	}
	ex.buf = append(ex.buf[:0], name...)
	ex.routeFields()
	return nil
}
