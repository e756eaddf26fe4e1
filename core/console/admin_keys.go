package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The keys page: every user's keys, searchable, with revoke.
func init() {
	adminNav = append(adminNav, NavLink{Path: "admin/keys", Label: "All keys", Need: RoleAudit})
	adminPages = append(adminPages, func(c *Console) {
		c.page("GET /admin/keys", RoleAudit, c.adminKeys)
		c.page("POST /admin/keys/{id}/revoke", RoleAdmin, c.adminRevokeKey)
	})
}

type adminKeyRow struct {
	ID         int64      `json:"id"`
	KeyPrefix  string     `json:"key_prefix"`
	Name       string     `json:"name"`
	Status     string     `json:"status"`
	UserID     int64      `json:"user_id"`
	Username   string     `json:"username"`
	Scopes     []string   `json:"scopes"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	UsageCount int64      `json:"usage_count"`
}

type adminKeysPage struct {
	Keys           []adminKeyRow
	Total          int
	Search, Status string
	Skip, Next     int
	Statuses       []string
}

func (c *Console) adminKeys(w http.ResponseWriter, r *http.Request, rq *Request) {
	v := adminKeysPage{Search: strings.TrimSpace(r.FormValue("search")), Status: r.FormValue("status"),
		Statuses: []string{"active", "revoked", "expired"}}
	v.Skip, _ = strconv.Atoi(r.FormValue("skip"))
	v.Skip = max(v.Skip, 0)
	q := url.Values{"limit": {"100"}, "skip": {strconv.Itoa(v.Skip)}}
	if v.Search != "" {
		q.Set("search", v.Search)
	}
	if v.Status != "" {
		q.Set("status", v.Status)
	}
	var res struct {
		Keys  []adminKeyRow `json:"api_keys"`
		Total int           `json:"total"`
	}
	if err := rq.API(r.Context(), "GET", "/api/admin/api-keys", q, nil, &res); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	v.Keys, v.Total = res.Keys, res.Total
	if v.Skip+len(v.Keys) < v.Total {
		v.Next = v.Skip + 100
	}
	c.render(w, r, rq, http.StatusOK, "admin_keys.html", "All keys", v)
}

func (c *Console) adminRevokeKey(w http.ResponseWriter, r *http.Request, rq *Request) {
	if err := rq.API(r.Context(), "POST", "/api/admin/api-keys/"+r.PathValue("id")+"/revoke", nil, nil, nil); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	http.Redirect(w, r, c.prefix+"admin/keys?done=key-revoked", http.StatusSeeOther)
}
