// Package console is MindRouter's web console: server-rendered pages
// (html/template, every template, style sheet and script embedded with
// embed.FS; nothing fetched at run time) for every user — usage, keys,
// models, recent requests — and, registered from admin_*.go files, for
// administrators.
//
// # Serving
//
// Console is a net/http Handler rooted at its prefix (config
// console.prefix, default /console/); the gateway mounts it on the API
// listener (fasthttpadaptor) or on console.listen. Pages register with
// Console.page(pattern, need, handler): the pattern is a net/http
// ServeMux pattern relative to the prefix ("GET /keys", "POST
// /keys/{id}/revoke"), need the Role the session must hold. Every page
// answers with Content-Security-Policy default-src 'self' (no inline
// script or style anywhere: the SVG chart uses presentation attributes),
// X-Frame-Options DENY and no-store caching.
//
// # Data
//
// Pages reach accounts through the admin API's own code: Request.API
// dispatches an internal call to admin.Handler.Do with the session's
// principal, so validation, scope checks and the admin audit log (the
// acting user and "console:…" as key) are exactly the API's. Usage by
// day and recent requests come from the request audit (audit.Searcher)
// behind UsageSource, models from the registry filtered by the
// principal's allowlist.
//
// # Sign-in and sessions
//
// /console/login takes an API key (field api_key; its owner signs in with
// that key's scopes, as the authenticator grants them) or, when
// console.oidc is set, runs OpenID Connect's authorization code flow with
// PKCE (S256), state and nonce (oidc.go); claims map to a group
// (claims.go) and a user is created on first sign-in.
//
// A session is a random 32-byte token in an HttpOnly, SameSite=Lax
// cookie (Secure under TLS or console.secure_cookie); the server keeps
// its record under the token's SHA-256, in Redis when configured, else in
// the store (migration 0006), so every replica sees it. It ends after
// console.session_idle without a request, console.session_max after
// sign-in, at logout, and at the first request after its user is
// disabled or, for a key session, its key revoked or expired: the user,
// group and key are read from the store on every request (no cache), so
// the principal never outlives a change.
//
// Every form carries the session's CSRF token (field csrf); any request
// other than GET or HEAD without it is refused with 403. The login form,
// before a session exists, uses a double-submit cookie instead.
package console
