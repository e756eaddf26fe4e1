package admin

import (
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// DefaultBudgetPeriodDays is the budget period of a group that names none.
const DefaultBudgetPeriodDays = 30

// EffectiveLimits are the limits enforced for u: each override the user
// has, else the group's value. The budget period is the group's
// BudgetPeriodDays (default 30) anchored at the user's creation, so period
// k is [CreatedAt + k·P, CreatedAt + (k+1)·P).
func EffectiveLimits(u store.User, g store.Group) auth.Limits {
	days := g.BudgetPeriodDays
	if days <= 0 {
		days = DefaultBudgetPeriodDays
	}
	l := auth.Limits{
		TokenBudget:   g.TokenBudget,
		BudgetPeriod:  time.Duration(days) * 24 * time.Hour,
		PeriodAnchor:  u.CreatedAt,
		RPM:           g.RPM,
		MaxConcurrent: g.MaxConcurrent,
	}
	if u.TokenBudget != nil {
		l.TokenBudget = *u.TokenBudget
	}
	if u.RPM != nil {
		l.RPM = *u.RPM
	}
	if u.MaxConcurrent != nil {
		l.MaxConcurrent = *u.MaxConcurrent
	}
	return l
}
