package console

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/mindrouter/mindrouter/core/audit"
)

// DayUsage is one model's tokens on one UTC day.
type DayUsage struct {
	Day    time.Time // midnight UTC
	Model  string
	Tokens int64
}

// UsageSource reads a user's tokens per day and model over the last days
// days (today included), ordered by day then model.
type UsageSource interface {
	UsageByDay(ctx context.Context, userID int64, days int) ([]DayUsage, error)
}

// AuditUsage sums the request audit (ClickHouse or the embedded sink):
// prompt plus completion tokens of every request. A sink that can
// aggregate (audit.Aggregator: both built-in sinks) answers with one
// GROUP BY; another is read through its Searcher, at most maxUsageRows
// requests, the newest.
func AuditUsage(s audit.Searcher, now func() time.Time) UsageSource {
	if agg, ok := s.(audit.Aggregator); ok {
		return &aggUsage{agg: agg, now: now}
	}
	return &auditUsage{s: s, now: now}
}

type aggUsage struct {
	agg audit.Aggregator
	now func() time.Time
}

func (a *aggUsage) UsageByDay(ctx context.Context, userID int64, days int) ([]DayUsage, error) {
	y, m, d := a.now().UTC().Date()
	to := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	rows, err := a.agg.Usage(ctx, audit.UsageQuery{UserID: userID, From: to.AddDate(0, 0, -days), To: to, By: audit.ByDay | audit.ByModel})
	if err != nil {
		return nil, fmt.Errorf("sum the audit of user %d by day: %w", userID, err)
	}
	out := make([]DayUsage, 0, len(rows))
	for _, r := range rows {
		day, err := time.Parse(time.DateOnly, r.Day)
		if err != nil || r.Tokens == 0 {
			continue
		}
		out = append(out, DayUsage{Day: day, Model: r.Model, Tokens: r.Tokens})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Day.Equal(out[j].Day) {
			return out[i].Day.Before(out[j].Day)
		}
		return out[i].Model < out[j].Model
	})
	return out, nil
}

type auditUsage struct {
	s   audit.Searcher
	now func() time.Time
}

// maxUsageRows bounds the rows one chart reads.
const maxUsageRows = 20 * audit.MaxLimit

func (a *auditUsage) UsageByDay(ctx context.Context, userID int64, days int) ([]DayUsage, error) {
	end := a.now().UTC()
	from := end.Truncate(24*time.Hour).AddDate(0, 0, -(days - 1))
	type k struct {
		day   int64
		model string
	}
	sum := map[k]int64{}
	for skip := 0; skip < maxUsageRows; skip += audit.MaxLimit {
		evs, total, err := a.s.Search(ctx, audit.Query{UserID: userID, From: from, Skip: skip, Limit: audit.MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("read the audit of user %d: %w", userID, err)
		}
		for i := range evs {
			e := &evs[i]
			t := int64(e.PromptTokens) + int64(e.CompletionTokens)
			if t == 0 {
				continue
			}
			sum[k{e.Time.UTC().Truncate(24 * time.Hour).Unix(), e.Model}] += t
		}
		if skip+len(evs) >= total || len(evs) == 0 {
			break
		}
	}
	out := make([]DayUsage, 0, len(sum))
	for key, v := range sum {
		out = append(out, DayUsage{Day: time.Unix(key.day, 0).UTC(), Model: key.model, Tokens: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Day.Equal(out[j].Day) {
			return out[i].Day.Before(out[j].Day)
		}
		return out[i].Model < out[j].Model
	})
	return out, nil
}
