package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mindrouter/mindrouter/core/audit"
)

// Usage from the request audit (the embedded sink or ClickHouse, whichever
// the gateway records to): what was spent, not what the quota counters
// allow. GET /api/me/usage is the quota's view.

// ErrNoAudit is UsageByDay's answer on a gateway without a request audit.
var ErrNoAudit = errors.New("admin: the request audit is not available on this gateway")

// defaultUsageDays is the window of the usage routes without days.
const defaultUsageDays = 30

// DayModelTokens is one UTC day's usage of one model by one user.
type DayModelTokens struct {
	Day              string  `json:"date"` // 2026-03-10, UTC
	Model            string  `json:"model"`
	Requests         int64   `json:"requests"`
	Failed           int64   `json:"failed"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	EnergyJ          float64 `json:"energy_j"`
}

// UsageByDay is a user's tokens per UTC day and model over the last days
// days, today included (1 to audit.MaxUsageDays), oldest first and, within
// a day, by model. Days without requests have no rows. It reads the
// request audit; without one it returns ErrNoAudit. The console's charts
// call it in-process; GET /api/admin/usage/daily and /api/me/usage/daily
// answer with it.
func (h *Handler) UsageByDay(ctx context.Context, userID int64, days int) ([]DayModelTokens, error) {
	agg, ok := h.audit.(audit.Aggregator)
	if h.audit == nil || !ok {
		return nil, ErrNoAudit
	}
	if days < 1 || days > audit.MaxUsageDays {
		return nil, fmt.Errorf("admin: usage by day: days must be between 1 and %d", audit.MaxUsageDays)
	}
	from, to := dayWindow(h.now(), days)
	rows, err := agg.Usage(ctx, audit.UsageQuery{UserID: userID, From: from, To: to, By: audit.ByDay | audit.ByModel})
	if err != nil {
		return nil, fmt.Errorf("sum usage of user %d by day: %w", userID, err)
	}
	out := make([]DayModelTokens, 0, len(rows))
	for _, r := range rows {
		out = append(out, DayModelTokens{Day: r.Day, Model: r.Model, Requests: r.Requests, Failed: r.Failed,
			PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.Tokens, EnergyJ: r.EnergyJ})
	}
	return out, nil
}

// dayWindow is [the start of the UTC day days-1 days before now's, the
// start of the day after now's).
func dayWindow(now time.Time, days int) (from, to time.Time) {
	y, m, d := now.UTC().Date()
	to = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	return to.AddDate(0, 0, -days), to
}

// dailyView is the answer of the usage/daily routes.
type dailyView struct {
	UserID int64            `json:"user_id"`
	Days   int              `json:"days"`
	Start  string           `json:"start_date"` // first day, inclusive
	End    string           `json:"end_date"`   // last day (today), inclusive
	Usage  []DayModelTokens `json:"usage"`
}

func (h *Handler) daily(c *call, userID int64) (any, error) {
	days, err := c.queryInt("days", defaultUsageDays, 1, audit.MaxUsageDays)
	if err != nil {
		return nil, err
	}
	rows, err := h.UsageByDay(c.ctx, userID, days)
	if errors.Is(err, ErrNoAudit) {
		return nil, errAuditOff
	}
	if err != nil {
		return nil, err
	}
	from, to := dayWindow(h.now(), days)
	return dailyView{UserID: userID, Days: days, Start: from.Format(time.DateOnly),
		End: to.AddDate(0, 0, -1).Format(time.DateOnly), Usage: rows}, nil
}

// usageDaily is GET /api/admin/usage/daily?user_id=&days=.
func (h *Handler) usageDaily(c *call) (any, error) {
	id, err := c.queryID("user_id")
	if err != nil {
		return nil, err
	}
	if id == 0 {
		return nil, badRequest("query parameter user_id: required")
	}
	// An unknown user is a 404, not an empty chart: a typo should show.
	if _, err := h.user(c, id); err != nil {
		return nil, err
	}
	return h.daily(c, id)
}

// meUsageDaily is GET /api/me/usage/daily?days=: the caller's.
func (h *Handler) meUsageDaily(c *call) (any, error) {
	if c.p.UserID == 0 {
		return nil, noUser()
	}
	return h.daily(c, c.p.UserID)
}

// usageWindow reads a window: start_date and end_date (a date or an RFC
// 3339 time; a date as the end includes that day) or days (the last days
// UTC days, today included; default 30).
func (c *call) usageWindow(now time.Time) (from, to time.Time, err error) {
	if from, err = c.queryDate("start_date", false); err != nil {
		return
	}
	if to, err = c.queryDate("end_date", true); err != nil {
		return
	}
	days, err := c.queryInt("days", defaultUsageDays, 1, audit.MaxUsageDays)
	if err != nil {
		return
	}
	if c.req.Query.Has("days") && (!from.IsZero() || !to.IsZero()) {
		return from, to, badRequest("query parameters days, start_date, end_date: give days or a date range, not both")
	}
	if from.IsZero() && to.IsZero() {
		from, to = dayWindow(now, days)
		return from, to, nil
	}
	if to.IsZero() {
		to = now.UTC()
	}
	if from.IsZero() {
		from = to.AddDate(0, 0, -defaultUsageDays)
	}
	if !from.Before(to) {
		return from, to, badRequest("query parameters start_date, end_date: start_date must be before end_date")
	}
	return from, to, nil
}

// userTotal is one row of top-users and energy?by=user.
type userTotal struct {
	UserID           int64   `json:"user_id"`
	Username         string  `json:"username"`
	Group            string  `json:"group"`
	Requests         int64   `json:"requests"`
	Failed           int64   `json:"failed"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	EnergyJ          float64 `json:"energy_j"`
	// EnergyRequests counts the requests with an energy figure,
	// EnergyTokens their tokens (JoulesPer1kTokens is over those).
	EnergyRequests    int64   `json:"energy_requests"`
	EnergyTokens      int64   `json:"energy_tokens"`
	JoulesPer1kTokens float64 `json:"joules_per_1k_tokens"`
}

func viewTotal(r audit.UsageRow) userTotal {
	v := userTotal{UserID: r.UserID, Username: r.User, Group: r.Group, Requests: r.Requests, Failed: r.Failed,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.Tokens,
		EnergyJ: r.EnergyJ, EnergyRequests: r.Measured, EnergyTokens: r.MeasuredTokens}
	if r.MeasuredTokens > 0 {
		v.JoulesPer1kTokens = r.EnergyJ * 1000 / float64(r.MeasuredTokens)
	}
	return v
}

func (h *Handler) aggregator() (audit.Aggregator, error) {
	agg, ok := h.audit.(audit.Aggregator)
	if h.audit == nil || !ok {
		return nil, errAuditOff
	}
	return agg, nil
}

// topUsers is GET /api/admin/top-users?days=|start_date=&end_date=&limit=&group=:
// the users who spent the most tokens in the window.
func (h *Handler) topUsers(c *call) (any, error) {
	agg, err := h.aggregator()
	if err != nil {
		return nil, err
	}
	from, to, err := c.usageWindow(h.now())
	if err != nil {
		return nil, err
	}
	limit, err := c.queryInt("limit", 10, 1, audit.MaxLimit)
	if err != nil {
		return nil, err
	}
	group, err := c.queryText("group", 100)
	if err != nil {
		return nil, err
	}
	rows, err := agg.Usage(c.ctx, audit.UsageQuery{From: from, To: to, Group: group, By: audit.ByUser, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("sum usage by user: %w", err)
	}
	// A user's group is the latest the audit recorded for them: read it
	// in a second pass so a move between groups does not split the user.
	groups, err := h.latestGroups(c, agg, from, to, group, rows)
	if err != nil {
		return nil, err
	}
	out := make([]userTotal, 0, len(rows))
	for _, r := range rows {
		r.Group = groups[r.UserID]
		out = append(out, viewTotal(r))
	}
	return map[string]any{"start": from, "end": to, "users": out}, nil
}

// latestGroups names the group of each user in rows: the one they spent
// the most tokens in over the window (ties: the name first in order).
func (h *Handler) latestGroups(c *call, agg audit.Aggregator, from, to time.Time, group string, rows []audit.UsageRow) (map[int64]string, error) {
	out := make(map[int64]string, len(rows))
	if group != "" {
		for _, r := range rows {
			out[r.UserID] = group
		}
		return out, nil
	}
	want := make(map[int64]bool, len(rows))
	for _, r := range rows {
		want[r.UserID] = true
	}
	all, err := agg.Usage(c.ctx, audit.UsageQuery{From: from, To: to, By: audit.ByUser | audit.ByGroup})
	if err != nil {
		return nil, fmt.Errorf("sum usage by user and group: %w", err)
	}
	best := map[int64]int64{}
	for _, r := range all {
		if !want[r.UserID] {
			continue
		}
		if t, seen := best[r.UserID]; !seen || r.Tokens > t {
			best[r.UserID], out[r.UserID] = r.Tokens, r.Group
		}
	}
	return out, nil
}

// energy is GET /api/admin/energy?by=user|group&days=|start_date=&end_date=&limit=:
// the GPU energy estimates of the requests (audit energy_j), summed.
func (h *Handler) energy(c *call) (any, error) {
	agg, err := h.aggregator()
	if err != nil {
		return nil, err
	}
	from, to, err := c.usageWindow(h.now())
	if err != nil {
		return nil, err
	}
	limit, err := c.queryInt("limit", 100, 1, audit.MaxLimit)
	if err != nil {
		return nil, err
	}
	by := c.req.Query.Get("by")
	q := audit.UsageQuery{From: from, To: to, Limit: limit, MostEnergy: true}
	switch by {
	case "", "user":
		by, q.By = "user", audit.ByUser
	case "group":
		q.By = audit.ByGroup
	default:
		return nil, badRequest("query parameter by: must be user or group")
	}
	rows, err := agg.Usage(c.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sum energy by %s: %w", by, err)
	}
	if by == "user" {
		groups, err := h.latestGroups(c, agg, from, to, "", rows)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			rows[i].Group = groups[rows[i].UserID]
		}
	}
	total := audit.UsageRow{}
	if all, err := agg.Usage(c.ctx, audit.UsageQuery{From: from, To: to}); err != nil {
		return nil, fmt.Errorf("sum energy: %w", err)
	} else if len(all) == 1 {
		total = all[0]
	}
	out := make([]userTotal, 0, len(rows))
	for _, r := range rows {
		out = append(out, viewTotal(r))
	}
	tv := viewTotal(total)
	return map[string]any{"start": from, "end": to, "by": by, "method": energyMethod, "rows": out,
		"total": map[string]any{"requests": tv.Requests, "total_tokens": tv.TotalTokens, "energy_j": tv.EnergyJ,
			"energy_requests": tv.EnergyRequests, "energy_tokens": tv.EnergyTokens, "joules_per_1k_tokens": tv.JoulesPer1kTokens}}, nil
}

// energyMethod says in the answer how energy_j was estimated (the
// gateway's per-request figure, core/server's energy).
const energyMethod = "per request: the power its backend's GPUs drew at the last sidecar reading × the time the backend worked on it (to the response headers, or the whole stream) ÷ the requests the backend had in flight; 0 where the node reports no power"
