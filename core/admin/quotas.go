package admin

import (
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/core/store"
)

// usage is u's quota report: from Quotas when set, else from the store's
// usage row (tokens of an earlier period count as 0 in this one).
func (h *Handler) usage(c *call, u store.User, g store.Group) (quota.Report, error) {
	l := EffectiveLimits(u, g)
	if h.quotas != nil {
		r, err := h.quotas.Usage(c.ctx, u.ID, l)
		if errors.Is(err, quota.ErrRedisDown) {
			return r, errorf(fasthttp.StatusServiceUnavailable, "quota counters are unavailable: Redis is down (this gateway's own view would understate fleet-wide usage)")
		}
		if err != nil {
			return r, fmt.Errorf("quota usage of user %d: %w", u.ID, err)
		}
		return r, nil
	}
	row, err := h.st.Usage(c.ctx, u.ID)
	if err != nil {
		return quota.Report{}, fmt.Errorf("read usage of user %d: %w", u.ID, err)
	}
	start := periodStart(l, h.now())
	r := quota.Report{
		UserID: u.ID, PeriodStart: start, PeriodEnd: start.Add(l.BudgetPeriod), TokenBudget: l.TokenBudget,
		LifetimeTokens: row.LifetimeTokens, RPM: l.RPM, MaxConcurrent: l.MaxConcurrent,
	}
	if row.PeriodStart.Equal(start) {
		r.TokensUsed = row.TokensUsed
	}
	return r, nil
}

// periodStart is the start of the budget period holding now: period k is
// [anchor + k·P, anchor + (k+1)·P).
func periodStart(l auth.Limits, now time.Time) time.Time {
	if l.BudgetPeriod <= 0 || now.Before(l.PeriodAnchor) {
		return l.PeriodAnchor.UTC()
	}
	k := now.Sub(l.PeriodAnchor) / l.BudgetPeriod
	return l.PeriodAnchor.Add(k * l.BudgetPeriod).UTC()
}

func (h *Handler) userAndGroup(c *call, id int64) (store.User, store.Group, error) {
	u, err := h.user(c, id)
	if err != nil {
		return u, store.Group{}, err
	}
	g, err := h.st.Group(c.ctx, u.GroupID)
	if err != nil {
		return u, g, fmt.Errorf("read group %d: %w", u.GroupID, err)
	}
	return u, g, nil
}

func (h *Handler) quotaUsage(c *call) (any, error) {
	u, g, err := h.userAndGroup(c, c.id())
	if err != nil {
		return nil, err
	}
	return h.usage(c, u, g)
}

// quotaReset zeroes the current period's tokens (lifetime kept).
func (h *Handler) quotaReset(c *call) (any, error) {
	u, g, err := h.userAndGroup(c, c.id())
	if err != nil {
		return nil, err
	}
	l := EffectiveLimits(u, g)
	if h.quotas != nil {
		if err := h.quotas.Reset(c.ctx, u.ID, l); errors.Is(err, quota.ErrRedisDown) {
			// Reset here and in the store, not in Redis: say so, and keep
			// the record of what was done.
			h.record(c, "quota.reset", "quota", u.ID, map[string]any{"username": u.Username, "partial": "redis down"})
			return nil, errorf(fasthttp.StatusServiceUnavailable, "quota reset on this gateway and in the store only: Redis is down; retry when it is back")
		} else if err != nil {
			return nil, fmt.Errorf("reset quota of user %d: %w", u.ID, err)
		}
	} else {
		row, err := h.st.Usage(c.ctx, u.ID)
		if err != nil {
			return nil, fmt.Errorf("read usage of user %d: %w", u.ID, err)
		}
		now := h.now().UTC()
		row.UserID, row.PeriodStart, row.TokensUsed, row.UpdatedAt = u.ID, periodStart(l, now), 0, now
		if err := h.st.SaveUsage(c.ctx, []store.Usage{row}); err != nil {
			return nil, fmt.Errorf("reset usage of user %d: %w", u.ID, err)
		}
	}
	h.record(c, "quota.reset", "quota", u.ID, map[string]any{"username": u.Username})
	return done("reset", "user_id", u.ID), nil
}

// adminAudit is GET /audit/admin: the admin audit log, newest first.
func (h *Handler) adminAudit(c *call) (any, error) {
	pg, err := c.page()
	if err != nil {
		return nil, err
	}
	evs, err := h.st.AdminEvents(c.ctx, pg.skip, pg.limit)
	if err != nil {
		return nil, fmt.Errorf("read admin events: %w", err)
	}
	out := make([]eventView, 0, len(evs))
	for _, e := range evs {
		out = append(out, viewEvent(e))
	}
	return map[string]any{"skip": pg.skip, "limit": pg.limit, "events": out}, nil
}
