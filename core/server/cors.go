package server

import (
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/config"
)

// cors answers browsers calling from other origins (config cors). It runs
// before any chain: a preflight carries no key (browsers never send
// credentials on one), so it is answered before authentication, and the
// Allow-Origin header is set first so that every answer — an error, a
// 401, a stream — carries it.
type cors struct {
	anyOrigin   bool
	origins     map[string]bool
	methods     string
	anyHeader   bool
	headers     string
	expose      string
	maxAge      string
	credentials bool
}

// newCORS returns nil when cors is off.
func newCORS(c config.CORS) *cors {
	if !c.On() {
		return nil
	}
	o := &cors{origins: map[string]bool{}, methods: strings.Join(c.AllowedMethods, ", "),
		expose: strings.Join(c.ExposeHeaders, ", "), credentials: c.AllowCredentials,
		maxAge: strconv.Itoa(int(c.MaxAge.D().Seconds()))}
	for _, origin := range c.AllowedOrigins {
		if origin == "*" {
			o.anyOrigin = true
		}
		o.origins[origin] = true
	}
	var named []string
	for _, h := range c.AllowedHeaders {
		if h == "*" {
			o.anyHeader = true
		} else {
			named = append(named, h)
		}
	}
	o.headers = strings.Join(named, ", ")
	return o
}

// handle adds the CORS headers of the request's origin and answers a
// preflight (204); it reports whether it answered.
func (c *cors) handle(ctx *fasthttp.RequestCtx) bool {
	return c.apply(ctx, ctx.IsOptions())
}

// refusal adds the CORS headers to an answer made before any chain runs
// (a refused "Expect: 100-continue", a transport error), so the page that
// sent the request can read why it failed. It never answers a preflight.
func (c *cors) refusal(ctx *fasthttp.RequestCtx) { c.apply(ctx, false) }

// apply sets the origin's headers; options says the request may be a
// preflight, which it then answers (204) and reports.
func (c *cors) apply(ctx *fasthttp.RequestCtx, options bool) bool {
	h := &ctx.Response.Header
	// The answer depends on Origin whenever one origin's answer differs
	// from another's: caches must keep them apart.
	h.Add("Vary", "Origin")
	origin := ctx.Request.Header.Peek("Origin")
	preflight := options && len(origin) > 0 &&
		len(ctx.Request.Header.Peek("Access-Control-Request-Method")) > 0
	if len(origin) > 0 && (c.anyOrigin || c.origins[string(origin)]) {
		// With credentials the origin is echoed: browsers refuse "*" then
		// (and config refuses credentials with "*").
		if c.anyOrigin && !c.credentials {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.SetBytesV("Access-Control-Allow-Origin", origin)
		}
		if c.credentials {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		if !preflight && c.expose != "" {
			h.Set("Access-Control-Expose-Headers", c.expose)
		}
		if preflight {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", c.methods)
			if asked := ctx.Request.Header.Peek("Access-Control-Request-Headers"); c.anyHeader && len(asked) > 0 {
				h.SetBytesV("Access-Control-Allow-Headers", asked)
			} else if c.headers != "" {
				h.Set("Access-Control-Allow-Headers", c.headers)
			}
			h.Set("Access-Control-Max-Age", c.maxAge)
		}
	}
	if !preflight {
		return false
	}
	// A refused origin gets the same 204 without Allow-Origin: the
	// browser refuses the call, and nothing tells the page more.
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return true
}
