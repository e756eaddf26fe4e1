package config

import (
	"net/url"
	"strings"
	"time"
)

// CORS lets browser apps on other origins call the API (a chat front end,
// a notebook): preflights are answered on every route and answers carry
// Access-Control-Allow-Origin. Off while AllowedOrigins is empty.
type CORS struct {
	// AllowedOrigins are the origins answered, exactly as a browser sends
	// them ("https://chat.example.edu"), or "*" for any.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// AllowedMethods answer a preflight's Access-Control-Request-Method.
	AllowedMethods []string `yaml:"allowed_methods"`
	// AllowedHeaders answer its Access-Control-Request-Headers; "*" allows
	// whatever is asked (the request's list is echoed, because a literal
	// "*" does not cover Authorization).
	AllowedHeaders []string `yaml:"allowed_headers"`
	// ExposeHeaders are the answer headers a page's script may read.
	ExposeHeaders []string `yaml:"expose_headers"`
	// MaxAge is how long a browser may cache a preflight's answer.
	MaxAge Duration `yaml:"max_age"`
	// AllowCredentials lets pages send cookies and TLS client certificates;
	// the gateway's keys are headers, so it is rarely wanted. Never with
	// "*" among the origins (browsers refuse it, and it would hand any
	// site the user's credentials).
	AllowCredentials bool `yaml:"allow_credentials"`
}

// On reports whether CORS is answered at all.
func (c CORS) On() bool { return len(c.AllowedOrigins) > 0 }

// defaultCORS is what an enabled cors section starts from: the methods
// the API takes, any header, and the headers SDKs read from answers.
func defaultCORS() CORS {
	return CORS{
		AllowedMethods: []string{"GET", "POST", "PUT", "PATCH", "DELETE"},
		AllowedHeaders: []string{"*"},
		ExposeHeaders: []string{"X-Request-ID", "Retry-After",
			"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
			"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"},
		MaxAge: Duration(10 * time.Minute),
	}
}

// validateCORS checks the cors section.
func (c *Config) validateCORS(add func(string, ...any)) {
	cr := c.CORS
	for i, o := range cr.AllowedOrigins {
		if o == "*" {
			if cr.AllowCredentials {
				add("cors.allow_credentials: not with \"*\" in cors.allowed_origins (name the origins)")
			}
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || strings.HasSuffix(o, "/") {
			add("cors.allowed_origins[%d]: %q is not an origin (scheme://host[:port], no path) or \"*\"", i, o)
		}
	}
	for i, m := range cr.AllowedMethods {
		if m == "" || strings.ToUpper(m) != m || strings.ContainsAny(m, " ,") {
			add("cors.allowed_methods[%d]: %q is not an upper-case method name", i, m)
		}
	}
	for _, l := range []struct {
		k string
		v []string
	}{{"cors.allowed_headers", cr.AllowedHeaders}, {"cors.expose_headers", cr.ExposeHeaders}} {
		for i, h := range l.v {
			if h == "" || strings.ContainsAny(h, " ,:\r\n") {
				add("%s[%d]: %q is not a header name", l.k, i, h)
			}
		}
	}
	if cr.MaxAge < 0 || cr.MaxAge > Duration(24*time.Hour) {
		add("cors.max_age: must be between 0 and 24h")
	}
	if cr.AllowCredentials && !cr.On() {
		add("cors.allow_credentials: needs cors.allowed_origins")
	}
}
