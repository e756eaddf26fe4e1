package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
)

// The audit pages: the request audit (search by user, model, status and
// time; one request's stages and scheduler decision, its content only for
// a session holding the audit scope) and the admin log.
func init() {
	adminNav = append(adminNav, NavLink{Path: "admin/audit", Label: "Audit", Need: RoleAudit},
		NavLink{Path: "admin/admin-log", Label: "Admin log", Need: RoleAudit})
	adminPages = append(adminPages, func(c *Console) {
		c.page("GET /admin/audit", RoleAudit, c.adminAudit)
		c.page("GET /admin/audit/{id}", RoleAudit, c.adminAuditRequest)
		c.page("GET /admin/admin-log", RoleAudit, c.adminLog)
	})
}

type auditRow struct {
	RequestID    string          `json:"request_id"`
	CreatedAt    time.Time       `json:"created_at"`
	User         string          `json:"user"`
	Group        string          `json:"group"`
	Model        string          `json:"model"`
	Endpoint     string          `json:"endpoint"`
	Dialect      string          `json:"dialect"`
	Status       string          `json:"status"`
	StatusCode   int             `json:"status_code"`
	Error        string          `json:"error_message"`
	Backend      string          `json:"backend"`
	Node         string          `json:"node"`
	Attempts     int             `json:"attempts"`
	Prompt       int64           `json:"prompt_tokens"`
	Completion   int64           `json:"completion_tokens"`
	TotalMs      float64         `json:"total_time_ms"`
	QueueMs      float64         `json:"queue_delay_ms"`
	TTFTMs       float64         `json:"ttft_ms"`
	EnergyJ      float64         `json:"energy_j"`
	StagesRaw    json.RawMessage `json:"stages_us"`
	RequestBody  string          `json:"request_body"`
	ResponseBody string          `json:"response_body"`
	Truncated    bool            `json:"content_truncated"`
	Decision     json.RawMessage `json:"decision"`
}

type auditPage struct {
	Rows                []auditRow
	Total, Skip, Next   int
	User, Model, Status string
	From, To            string
	Error               string
}

var auditFilters = []string{"user", "model", "status", "start_date", "end_date"}

func (c *Console) adminAudit(w http.ResponseWriter, r *http.Request, rq *Request) {
	q := url.Values{"limit": {"50"}}
	v := auditPage{User: r.FormValue("user"), Model: r.FormValue("model"), Status: r.FormValue("status"),
		From: r.FormValue("start_date"), To: r.FormValue("end_date")}
	for _, f := range auditFilters {
		if s := strings.TrimSpace(r.FormValue(f)); s != "" {
			q.Set(f, s)
		}
	}
	v.Skip, _ = strconv.Atoi(r.FormValue("skip"))
	v.Skip = max(v.Skip, 0)
	q.Set("skip", strconv.Itoa(v.Skip))
	var res struct {
		Results []auditRow `json:"results"`
		Total   int        `json:"total"`
	}
	status := http.StatusOK
	if err := rq.API(r.Context(), "GET", "/api/admin/audit/search", q, nil, &res); err != nil {
		ae, ok := err.(*APIError)
		if !ok {
			c.apiFail(w, r, rq, err)
			return
		}
		v.Error, status = ae.Detail, ae.Status
	}
	v.Rows, v.Total = res.Results, res.Total
	if v.Skip+len(v.Rows) < v.Total {
		v.Next = v.Skip + 50
	}
	c.render(w, r, rq, status, "admin_audit.html", "Audit", v)
}

type auditRequestPage struct {
	Row         auditRow
	Stages      []stage
	Decision    string
	ShowContent bool
}

type stage struct {
	Name string
	Us   int64
}

// stageOrder is the pipeline's order of the stages_us fields.
var stageOrder = []string{"auth", "limit", "read", "check", "decode", "queue", "fairness_delay", "encode", "backend", "ttft", "respond", "stream_plugin", "total"}

func (c *Console) adminAuditRequest(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v auditRequestPage
	if err := rq.API(r.Context(), "GET", "/api/admin/audit/"+url.PathEscape(r.PathValue("id")), nil, nil, &v.Row); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	var st map[string]int64
	_ = json.Unmarshal(v.Row.StagesRaw, &st)
	for _, n := range stageOrder {
		v.Stages = append(v.Stages, stage{Name: n, Us: st[n]})
	}
	if len(v.Row.Decision) > 0 && string(v.Row.Decision) != "null" {
		var pretty any
		if json.Unmarshal(v.Row.Decision, &pretty) == nil {
			b, _ := json.MarshalIndent(pretty, "", "  ")
			v.Decision = string(b)
		}
	}
	// Prompts and answers are for the audit scope only: an administrator
	// without it sees the request's figures, not its content.
	v.ShowContent = rq.Principal.Has(auth.ScopeAudit)
	if !v.ShowContent {
		v.Row.RequestBody, v.Row.ResponseBody = "", ""
	}
	c.render(w, r, rq, http.StatusOK, "admin_audit_request.html", "Request "+v.Row.RequestID, v)
}

type adminEvent struct {
	ID         int64           `json:"id"`
	Timestamp  time.Time       `json:"timestamp"`
	UserID     int64           `json:"user_id"`
	ActorKey   string          `json:"actor_key"`
	Action     string          `json:"action"`
	EntityType string          `json:"entity_type"`
	EntityID   string          `json:"entity_id"`
	Detail     json.RawMessage `json:"detail"`
	IPAddress  string          `json:"ip_address"`
}

// DetailText is the detail as compact JSON.
func (e adminEvent) DetailText() string { return string(e.Detail) }

type adminLogPage struct {
	Events []adminEvent
	Skip   int
	Next   int
}

func (c *Console) adminLog(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v adminLogPage
	v.Skip, _ = strconv.Atoi(r.FormValue("skip"))
	v.Skip = max(v.Skip, 0)
	var res struct {
		Events []adminEvent `json:"events"`
	}
	if err := rq.API(r.Context(), "GET", "/api/admin/audit/admin", url.Values{"skip": {strconv.Itoa(v.Skip)}, "limit": {"100"}}, nil, &res); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	v.Events = res.Events
	if len(v.Events) == 100 {
		v.Next = v.Skip + 100
	}
	c.render(w, r, rq, http.StatusOK, "admin_log.html", "Admin log", v)
}
