package config

import (
	"net"
	"net/url"
	"strings"
	"time"
)

// Console is the web console (core/console): sign-in, self-service pages
// for every user and admin pages, served under Prefix on the API listener,
// or on Listen alone when that is set.
type Console struct {
	// Enabled turns the console on (default true).
	Enabled *bool `yaml:"enabled"`
	// Prefix is the URL path the console lives under; it starts and ends
	// with "/" (default "/console/").
	Prefix string `yaml:"prefix"`
	// Listen, when set, serves the console on its own listener (host:port)
	// and not on the API listener.
	Listen string `yaml:"listen"`
	// SessionIdle ends a session unused this long (default 2h);
	// SessionMax ends any session this long after sign-in (default 24h).
	SessionIdle Duration `yaml:"session_idle"`
	SessionMax  Duration `yaml:"session_max"`
	// SecureCookie forces the session cookie's Secure flag; it is set
	// anyway when the console's listener serves TLS. Set it behind a
	// proxy that terminates TLS.
	SecureCookie bool `yaml:"secure_cookie"`
	// OIDC is single sign-on through an OpenID Connect provider; off
	// while Issuer is empty.
	OIDC OIDC `yaml:"oidc"`
}

// OIDC configures sign-in with an OpenID Connect provider (authorization
// code flow with PKCE). A user is found by the ID token's e-mail address
// as username, and created on first sign-in in the group the claims map
// to: the first value of GroupsClaim found in GroupMap, else the e-mail's
// domain in EmailDomains, else DefaultGroup; with none, sign-in is refused.
type OIDC struct {
	Issuer       string `yaml:"issuer"`
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"` // ${ENV} keeps it out of the file
	// RedirectURL is the console's callback as the provider knows it:
	// https://host/console/login/callback.
	RedirectURL string `yaml:"redirect_url"`
	// Scopes asked for besides "openid" (default profile, email).
	Scopes []string `yaml:"scopes"`
	// GroupsClaim names the ID token claim holding group names (a string
	// or a list of strings), e.g. "groups"; empty: none is read.
	GroupsClaim string `yaml:"groups_claim"`
	// GroupMap maps a GroupsClaim value to a MindRouter group name.
	GroupMap map[string]string `yaml:"group_map"`
	// EmailDomains maps an e-mail domain (lower case) to a group name.
	EmailDomains map[string]string `yaml:"email_domains"`
	// DefaultGroup is the group of a user no rule maps ("": refused).
	DefaultGroup string `yaml:"default_group"`
	// ButtonLabel is the sign-in button's text (default "Sign in with SSO").
	ButtonLabel string `yaml:"button_label"`
}

// On reports whether OIDC sign-in is configured.
func (o OIDC) On() bool { return o.Issuer != "" }

// ConsoleOn reports whether the console is served.
func (c *Config) ConsoleOn() bool { return c.Console.Enabled == nil || *c.Console.Enabled }

func defaultConsole() Console {
	return Console{Prefix: "/console/", SessionIdle: Duration(2 * time.Hour), SessionMax: Duration(24 * time.Hour),
		OIDC: OIDC{Scopes: []string{"profile", "email"}, ButtonLabel: "Sign in with SSO"}}
}

// validateConsole checks the console section.
func (c *Config) validateConsole(add func(string, ...any)) {
	cs := c.Console
	if !strings.HasPrefix(cs.Prefix, "/") || !strings.HasSuffix(cs.Prefix, "/") || cs.Prefix == "/" ||
		strings.ContainsAny(cs.Prefix, "?#% \t\r\n") || strings.Contains(cs.Prefix, "//") {
		add("console.prefix: %q must be a path that starts and ends with \"/\" (e.g. /console/), not \"/\"", cs.Prefix)
	}
	for _, p := range []string{"/api/", "/v1/", "/anthropic/", "/healthz/", "/readyz/", "/status/", "/metrics/"} {
		if strings.HasPrefix(cs.Prefix, p) || cs.Prefix == p {
			add("console.prefix: %q overlaps the gateway's own routes (%s…)", cs.Prefix, p)
		}
	}
	if cs.Listen != "" {
		if _, _, err := net.SplitHostPort(cs.Listen); err != nil {
			add("console.listen: %q is not host:port", cs.Listen)
		} else if cs.Listen == c.Listen && !strings.HasSuffix(cs.Listen, ":0") {
			add("console.listen: %q is the API listener's address (leave console.listen empty to share it)", cs.Listen)
		}
	}
	if cs.SessionIdle <= 0 {
		add("console.session_idle: must be positive")
	}
	if cs.SessionMax <= 0 {
		add("console.session_max: must be positive")
	} else if cs.SessionIdle > cs.SessionMax {
		add("console.session_idle: %s is longer than console.session_max %s", cs.SessionIdle.D(), cs.SessionMax.D())
	}
	o := cs.OIDC
	if !o.On() {
		return
	}
	if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		add("console.oidc.issuer: %q is not an http(s) URL", o.Issuer)
	}
	if o.ClientID == "" {
		add("console.oidc.client_id: required with console.oidc.issuer")
	}
	if u, err := url.Parse(o.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		!strings.HasSuffix(u.Path, "/login/callback") {
		add("console.oidc.redirect_url: %q must be the console's absolute callback URL (…%slogin/callback)", o.RedirectURL, cs.Prefix)
	}
	for k, v := range o.GroupMap {
		if k == "" || v == "" {
			add("console.oidc.group_map: %q: %q needs a claim value and a group name", k, v)
		}
	}
	for k, v := range o.EmailDomains {
		if k == "" || v == "" || strings.ToLower(k) != k || strings.Contains(k, "@") {
			add("console.oidc.email_domains: %q: %q needs a lower-case domain (no @) and a group name", k, v)
		}
	}
	if o.GroupsClaim == "" && len(o.GroupMap) > 0 {
		add("console.oidc.group_map: set console.oidc.groups_claim to name the claim it maps")
	}
}
