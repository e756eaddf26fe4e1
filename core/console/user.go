package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/quota"
)

// The pages of every user: home (usage), keys, models, requests.
func (c *Console) registerUser() {
	c.page("GET /{$}", RoleUser, c.home)
	c.page("GET /keys", RoleUser, c.keys)
	c.page("POST /keys", RoleUser, c.createKey)
	c.page("POST /keys/{id}/revoke", RoleUser, c.revokeKey)
	c.page("GET /models", RoleUser, c.models)
	c.page("GET /requests", RoleUser, c.requests)
}

// chartDays is the span of the home page's chart.
const chartDays = 30

type homeView struct {
	Usage     quota.Report
	Percent   int // of the budget used, 0-100
	Chart     chart
	ChartErr  string
	KeyPrefix string
}

func (c *Console) home(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v homeView
	if err := rq.API(r.Context(), "GET", "/api/me/usage", nil, nil, &v.Usage); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	if b := v.Usage.TokenBudget; b > 0 {
		v.Percent = int(min(100, v.Usage.TokensUsed*100/b))
	}
	if rq.Session.Via == viaKey {
		if k, err := c.o.Store.Key(r.Context(), rq.Session.KeyID); err == nil {
			v.KeyPrefix = k.Prefix
		}
	}
	if c.usage != nil {
		rows, err := c.usage.UsageByDay(r.Context(), rq.User.ID, chartDays)
		if err != nil {
			c.log.Warn("console usage chart", "err", err.Error())
			v.ChartErr = "Usage history is unavailable right now."
		}
		v.Chart = usageChart(rows, chartDays, c.now())
	} else {
		v.ChartErr = "The request audit is off (audit.enabled), so there is no usage history."
	}
	c.render(w, r, rq, http.StatusOK, "home.html", "Usage", v)
}

// keyRow is a key as GET /api/me/api-keys lists it.
type keyRow struct {
	ID         int64      `json:"id"`
	KeyPrefix  string     `json:"key_prefix"`
	Name       string     `json:"name"`
	Status     string     `json:"status"`
	Scopes     []string   `json:"scopes"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	UsageCount int64      `json:"usage_count"`
	CreatedAt  time.Time  `json:"created_at"`
}

type keysView struct {
	Keys    []keyRow
	New     *newKey // the key just created, shown once
	Scopes  []string
	Expiry  int // the group's default expiry in days (0: none)
	Error   string
	Current int64 // the key this session signed in with
}

type newKey struct {
	FullKey   string     `json:"full_key"`
	Name      string     `json:"name"`
	KeyPrefix string     `json:"key_prefix"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func (c *Console) keysView(r *http.Request, rq *Request) (keysView, error) {
	var list struct {
		Keys []keyRow `json:"api_keys"`
	}
	err := rq.API(r.Context(), "GET", "/api/me/api-keys", nil, nil, &list)
	return keysView{Keys: list.Keys, Scopes: rq.Scopes(), Expiry: rq.Group.KeyExpiryDays, Current: rq.Session.KeyID}, err
}

func (c *Console) keys(w http.ResponseWriter, r *http.Request, rq *Request) {
	v, err := c.keysView(r, rq)
	if err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	c.render(w, r, rq, http.StatusOK, "keys.html", "API keys", v)
}

// createKey issues a key through POST /api/me/api-keys: the API holds the
// scopes to the caller's own and the expiry to the group's policy. The new
// key is in this answer only (never in a URL or a redirect).
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, rq *Request) {
	body := map[string]any{"name": strings.TrimSpace(r.PostFormValue("name"))}
	scopes := r.PostForm["scopes"]
	if len(scopes) == 0 {
		scopes = []string{"inference"}
	}
	body["scopes"] = scopes
	switch e := r.PostFormValue("expires"); e {
	case "", "default":
	case "never":
		body["expires_at"] = nil
	default:
		days, err := strconv.Atoi(e)
		if err != nil || days < 1 || days > 3650 {
			c.keysError(w, r, rq, http.StatusBadRequest, "Expiry must be a number of days (1 to 3650), default or never.")
			return
		}
		body["expires_at"] = c.now().UTC().AddDate(0, 0, days).Format(time.RFC3339)
	}
	var nk newKey
	if err := rq.API(r.Context(), "POST", "/api/me/api-keys", nil, body, &nk); err != nil {
		if ae, ok := err.(*APIError); ok && ae.Status < 500 {
			c.keysError(w, r, rq, ae.Status, ae.Detail)
			return
		}
		c.apiFail(w, r, rq, err)
		return
	}
	v, err := c.keysView(r, rq)
	if err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	v.New = &nk
	c.render(w, r, rq, http.StatusOK, "keys.html", "API keys", v)
}

func (c *Console) keysError(w http.ResponseWriter, r *http.Request, rq *Request, status int, msg string) {
	v, err := c.keysView(r, rq)
	if err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	v.Error = msg
	c.render(w, r, rq, status, "keys.html", "API keys", v)
}

func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, rq *Request) {
	id := r.PathValue("id")
	if err := rq.API(r.Context(), "POST", "/api/me/api-keys/"+id+"/revoke", nil, nil, nil); err != nil {
		if ae, ok := err.(*APIError); ok && ae.Status < 500 {
			c.keysError(w, r, rq, ae.Status, ae.Detail)
			return
		}
		c.apiFail(w, r, rq, err)
		return
	}
	http.Redirect(w, r, c.prefix+"keys?done=revoked", http.StatusSeeOther)
}

type requestsView struct {
	Events []audit.Event
	Total  int
	Error  string
}

// requests lists the user's recent requests from the audit.
func (c *Console) requests(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v requestsView
	if c.o.Audit == nil {
		v.Error = "The request audit is off (audit.enabled), so there is no request history."
	} else {
		evs, total, err := c.o.Audit.Search(r.Context(), audit.Query{UserID: rq.User.ID, Limit: 100})
		if err != nil {
			c.log.Warn("console requests", "err", err.Error())
			v.Error = "The request audit cannot be read right now."
		}
		v.Events, v.Total = evs, total
	}
	c.render(w, r, rq, http.StatusOK, "requests.html", "Requests", v)
}
