package admin

import (
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
)

type handlerFunc func(h *Handler, c *call) (any, error)

// route is one method and path pattern; "{name}" segments are numeric ids,
// "{name:text}" ones any non-empty text (the handler reads it from the path).
type route struct {
	method  string
	pattern string
	fn      handlerFunc
	segs    []string
	literal int // literal segments: the more, the better a match
}

var routes = buildRoutes([]route{
	{method: "GET", pattern: "/api/admin/users", fn: (*Handler).listUsers},
	{method: "POST", pattern: "/api/admin/users", fn: (*Handler).createUser},
	{method: "POST", pattern: "/api/admin/users/import", fn: (*Handler).importUsers},
	{method: "GET", pattern: "/api/admin/users/{user_id}", fn: (*Handler).getUser},
	{method: "PATCH", pattern: "/api/admin/users/{user_id}", fn: (*Handler).updateUser},
	{method: "DELETE", pattern: "/api/admin/users/{user_id}", fn: (*Handler).deleteUser},
	{method: "POST", pattern: "/api/admin/users/{user_id}/api-keys", fn: (*Handler).createUserKey},
	{method: "POST", pattern: "/api/admin/users/{user_id}/api-keys/import", fn: (*Handler).importUserKey},

	{method: "GET", pattern: "/api/admin/api-keys", fn: (*Handler).listKeys},
	{method: "POST", pattern: "/api/admin/api-keys/{key_id}/revoke", fn: (*Handler).revokeKey},
	{method: "DELETE", pattern: "/api/admin/api-keys/{key_id}", fn: (*Handler).deleteKey},

	{method: "GET", pattern: "/api/admin/groups", fn: (*Handler).listGroups},
	{method: "POST", pattern: "/api/admin/groups", fn: (*Handler).createGroup},
	{method: "GET", pattern: "/api/admin/groups/{group_id}", fn: (*Handler).getGroup},
	{method: "PATCH", pattern: "/api/admin/groups/{group_id}", fn: (*Handler).updateGroup},
	{method: "DELETE", pattern: "/api/admin/groups/{group_id}", fn: (*Handler).deleteGroup},

	{method: "GET", pattern: "/api/admin/backends", fn: (*Handler).listBackends},
	{method: "POST", pattern: "/api/admin/backends/register", fn: (*Handler).registerBackend},
	{method: "GET", pattern: "/api/admin/backends/{backend_id}", fn: (*Handler).getBackend},
	{method: "PATCH", pattern: "/api/admin/backends/{backend_id}", fn: (*Handler).updateBackend},
	{method: "DELETE", pattern: "/api/admin/backends/{backend_id}", fn: (*Handler).deleteBackend},
	{method: "POST", pattern: "/api/admin/backends/{backend_id}/enable", fn: backendStatus("enable")},
	{method: "POST", pattern: "/api/admin/backends/{backend_id}/disable", fn: backendStatus("disable")},
	{method: "POST", pattern: "/api/admin/backends/{backend_id}/drain", fn: backendStatus("drain")},
	{method: "POST", pattern: "/api/admin/backends/{backend_id}/refresh", fn: (*Handler).refreshBackend},

	{method: "GET", pattern: "/api/admin/nodes", fn: (*Handler).listNodes},
	{method: "POST", pattern: "/api/admin/nodes", fn: (*Handler).createNode},
	{method: "POST", pattern: "/api/admin/nodes/register", fn: (*Handler).createNode}, // the reference's path
	{method: "GET", pattern: "/api/admin/nodes/{node_id}", fn: (*Handler).getNode},
	{method: "PATCH", pattern: "/api/admin/nodes/{node_id}", fn: (*Handler).updateNode},
	{method: "POST", pattern: "/api/admin/nodes/{node_id}/refresh", fn: (*Handler).refreshNode},
	{method: "DELETE", pattern: "/api/admin/nodes/{node_id}", fn: (*Handler).deleteNode},

	{method: "GET", pattern: "/api/admin/quotas/{user_id}", fn: (*Handler).quotaUsage},
	{method: "POST", pattern: "/api/admin/quotas/{user_id}/reset", fn: (*Handler).quotaReset},

	{method: "GET", pattern: "/api/admin/queue", fn: (*Handler).queue},
	{method: "GET", pattern: "/api/admin/cluster", fn: (*Handler).cluster},

	{method: "GET", pattern: "/api/admin/top-users", fn: (*Handler).topUsers},
	{method: "GET", pattern: "/api/admin/usage/daily", fn: (*Handler).usageDaily},
	{method: "GET", pattern: "/api/admin/energy", fn: (*Handler).energy},
	{method: "GET", pattern: "/api/admin/telemetry/gpus", fn: (*Handler).telemetryGPUs},
	{method: "GET", pattern: "/api/admin/telemetry/backends", fn: (*Handler).telemetryBackends},

	{method: "GET", pattern: "/api/admin/audit/admin", fn: (*Handler).adminAudit},
	{method: "GET", pattern: "/api/admin/audit/search", fn: (*Handler).auditSearch},
	{method: "GET", pattern: "/api/admin/audit/{request_id:text}", fn: (*Handler).auditGet},
	{method: "GET", pattern: "/api/admin/audit/blobs/{sha256:text}", fn: (*Handler).auditBlob},

	{method: "GET", pattern: "/api/me", fn: (*Handler).me},
	{method: "GET", pattern: "/api/me/usage", fn: (*Handler).meUsage},
	{method: "GET", pattern: "/api/me/usage/daily", fn: (*Handler).meUsageDaily},
	{method: "GET", pattern: "/api/me/api-keys", fn: (*Handler).meKeys},
	{method: "POST", pattern: "/api/me/api-keys", fn: (*Handler).meCreateKey},
	{method: "POST", pattern: "/api/me/api-keys/{key_id}/revoke", fn: (*Handler).meRevokeKey},
})

func buildRoutes(rs []route) []route {
	for i := range rs {
		rs[i].segs = strings.Split(strings.TrimPrefix(rs[i].pattern, "/"), "/")
		for _, s := range rs[i].segs {
			if !isParam(s) {
				rs[i].literal++
			}
		}
	}
	return rs
}

func isParam(seg string) bool { return strings.HasPrefix(seg, "{") }

// route finds the handler of c, checks scopes and runs it. allow is set
// for a 405.
func (h *Handler) route(c *call) (v any, err error, allow string) {
	path := trimSlash(c.req.Path)
	admin := strings.HasPrefix(path, "/api/admin")
	if admin && !c.p.Has(auth.ScopeAdmin) && !c.p.Has(auth.ScopeAudit) {
		return nil, errorf(fasthttp.StatusForbidden, "this API key lacks the admin scope"), ""
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	best := -1
	var found *route
	var methods []string
	for i := range routes {
		r := &routes[i]
		if !matches(r.segs, segs) || r.literal < best {
			continue
		}
		if r.literal > best {
			best, found, methods = r.literal, nil, methods[:0]
		}
		if r.method == c.req.Method {
			found = r
		}
		methods = append(methods, r.method)
	}
	if best < 0 {
		return nil, notFound("Not Found"), ""
	}
	if found == nil {
		allow = strings.Join(methods, ", ")
		return nil, errorf(fasthttp.StatusMethodNotAllowed, "Method Not Allowed"), allow
	}
	if admin && c.req.Method != "GET" && !c.p.Has(auth.ScopeAdmin) {
		return nil, errorf(fasthttp.StatusForbidden, "the audit scope is read-only: "+c.req.Method+" needs the admin scope"), ""
	}
	for i, s := range found.segs {
		if !isParam(s) || strings.HasSuffix(s, ":text}") {
			continue
		}
		id, ok := parseID(segs[i])
		if !ok {
			return nil, badRequest("path parameter " + strings.Trim(s, "{}") + " must be a positive integer"), ""
		}
		c.ids = append(c.ids, id)
	}
	v, err = found.fn(h, c)
	return v, err, ""
}

func matches(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		if isParam(p) {
			if segs[i] == "" {
				return false
			}
		} else if p != segs[i] {
			return false
		}
	}
	return true
}

// parseID accepts only a canonical positive decimal integer ("7", not
// "07", "+7" or "7.0").
func parseID(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 19 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
