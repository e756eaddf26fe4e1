package admin

import (
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

func TestEffectiveLimits(t *testing.T) {
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	g := store.Group{TokenBudget: 1000, BudgetPeriodDays: 7, RPM: 30, MaxConcurrent: 2}
	rpm, budget := 5, int64(0)
	cases := []struct {
		name string
		u    store.User
		g    store.Group
		want auth.Limits
	}{
		{"group", store.User{CreatedAt: created}, g, auth.Limits{TokenBudget: 1000, BudgetPeriod: 7 * 24 * time.Hour, PeriodAnchor: created, RPM: 30, MaxConcurrent: 2}},
		{"overrides", store.User{CreatedAt: created, RPM: &rpm, TokenBudget: &budget}, g, auth.Limits{TokenBudget: 0, BudgetPeriod: 7 * 24 * time.Hour, PeriodAnchor: created, RPM: 5, MaxConcurrent: 2}},
		{"default period", store.User{CreatedAt: created}, store.Group{}, auth.Limits{BudgetPeriod: 30 * 24 * time.Hour, PeriodAnchor: created}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := EffectiveLimits(tc.u, tc.g); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPeriodStart(t *testing.T) {
	anchor := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := auth.Limits{BudgetPeriod: 10 * 24 * time.Hour, PeriodAnchor: anchor}
	for _, tc := range []struct{ now, want time.Time }{
		{anchor, anchor},
		{anchor.Add(10*24*time.Hour - time.Nanosecond), anchor},
		{anchor.Add(10 * 24 * time.Hour), anchor.Add(10 * 24 * time.Hour)},
		{anchor.Add(25 * 24 * time.Hour), anchor.Add(20 * 24 * time.Hour)},
		{anchor.Add(-time.Hour), anchor}, // a clock behind the anchor
	} {
		if got := periodStart(l, tc.now); !got.Equal(tc.want) {
			t.Errorf("periodStart(%v) = %v, want %v", tc.now, got, tc.want)
		}
	}
}
