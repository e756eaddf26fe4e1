package console

import (
	"net/http"
	"sort"
)

// The queue page: who waits for which model and for how long, and each
// group's share of recent service against its entitlement (GET
// /api/admin/queue; this replica's queue).
func init() {
	adminNav = append(adminNav, NavLink{Path: "admin/queue", Label: "Queue", Need: RoleAudit})
	adminPages = append(adminPages, func(c *Console) {
		c.page("GET /admin/queue", RoleAudit, c.adminQueue)
	})
}

type queueWaiter struct {
	User          string  `json:"user"`
	Group         string  `json:"group"`
	Weight        float64 `json:"weight"`
	WaitedSeconds float64 `json:"waited_seconds"`
	Position      int     `json:"position"`
	EstTokens     int     `json:"est_tokens"`
}

type queueModel struct {
	Model             string        `json:"model"`
	Waiting           int           `json:"waiting"`
	Users             int           `json:"users"`
	OldestWaitSeconds float64       `json:"oldest_wait_seconds"`
	Requests          []queueWaiter `json:"requests"`
}

type queueGroup struct {
	Group        string  `json:"group"`
	ActiveUsers  int     `json:"active_users"`
	Weight       float64 `json:"weight"`
	Waiting      int     `json:"waiting"`
	ServedTokens float64 `json:"served_tokens"`
	Share        float64 `json:"share"`
	Entitlement  float64 `json:"entitlement"`
}

// SharePct and EntitledPct are the bar widths (0-100).
func (g queueGroup) SharePct() float64    { return pct(g.Share) }
func (g queueGroup) EntitledPct() float64 { return pct(g.Entitlement) }

// HeldBack: waiting while served under its entitlement.
func (g queueGroup) HeldBack() bool { return g.Waiting > 0 && g.Share+0.05 < g.Entitlement }

func pct(f float64) float64 { return min(max(f*100, 0), 100) }

type queueBackend struct {
	Name          string `json:"name"`
	InFlight      int64  `json:"in_flight"`
	MaxConcurrent int    `json:"max_concurrent"`
	Waiting       int64  `json:"waiting"`
	State         string `json:"state"`
}

// Full reports a backend with every slot taken.
func (b queueBackend) Full() bool { return b.MaxConcurrent > 0 && b.InFlight >= int64(b.MaxConcurrent) }

type queuePage struct {
	Queue struct {
		Total  int          `json:"total"`
		Models []queueModel `json:"models"`
	} `json:"queue"`
	FairShare struct {
		TotalUsers    int          `json:"total_users"`
		WindowSeconds float64      `json:"window_seconds"`
		Groups        []queueGroup `json:"groups"`
	} `json:"fair_share"`
	Backends  []queueBackend `json:"backends"`
	Scheduler string         `json:"scheduler"`
}

func (c *Console) adminQueue(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v queuePage
	if err := rq.API(r.Context(), "GET", "/api/admin/queue", nil, nil, &v); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	sort.Slice(v.FairShare.Groups, func(i, j int) bool { return v.FairShare.Groups[i].Group < v.FairShare.Groups[j].Group })
	c.render(w, r, rq, http.StatusOK, "admin_queue.html", "Queue", v)
}
