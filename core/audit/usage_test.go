package audit

import (
	"cmp"
	"context"
	"math"
	"slices"
	"testing"
	"time"
)

// expectUsage is the reference answer of Usage, computed in Go from evs.
func expectUsage(evs []Event, q UsageQuery) []UsageRow {
	type key struct {
		day   string
		uid   int64
		group string
		model string
	}
	sums := map[key]*UsageRow{}
	for _, e := range evs {
		if q.UserID != 0 && e.UserID != q.UserID || q.Group != "" && e.Group != q.Group ||
			e.Time.Before(q.From) || !e.Time.Before(q.To) {
			continue
		}
		var k key
		if q.By&ByDay != 0 {
			k.day = e.Time.UTC().Format(time.DateOnly)
		}
		if q.By&ByUser != 0 {
			k.uid = e.UserID
		}
		if q.By&ByGroup != 0 {
			k.group = e.Group
		}
		if q.By&ByModel != 0 {
			k.model = e.Model
		}
		r := sums[k]
		if r == nil {
			r = &UsageRow{Day: k.day, UserID: k.uid, Group: k.group, Model: k.model}
			sums[k] = r
		}
		if q.By&ByUser != 0 {
			r.User = max(r.User, e.User)
		}
		tok := int64(e.PromptTokens) + int64(e.CompletionTokens)
		r.Requests++
		if e.Status >= 400 || e.State == RowInterrupted || e.State == RowPanic {
			r.Failed++
		}
		r.PromptTokens += int64(e.PromptTokens)
		r.CompletionTokens += int64(e.CompletionTokens)
		r.Tokens += tok
		r.EnergyJ += e.EnergyJ
		if e.EnergyJ > 0 {
			r.Measured++
			r.MeasuredTokens += tok
		}
	}
	out := []UsageRow{}
	for _, r := range sums {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b UsageRow) int {
		if q.Limit > 0 && q.MostEnergy {
			if c := cmp.Compare(b.EnergyJ, a.EnergyJ); c != 0 {
				return c
			}
		} else if q.Limit > 0 {
			if c := cmp.Compare(b.Tokens, a.Tokens); c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(a.Day, b.Day), cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Model, b.Model))
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

func usageCases() []struct {
	name string
	q    UsageQuery
} {
	base := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	all := UsageQuery{From: base.AddDate(0, 0, -1), To: base.AddDate(0, 0, 6)}
	with := func(f func(q *UsageQuery)) UsageQuery { q := all; f(&q); return q }
	return []struct {
		name string
		q    UsageQuery
	}{
		{"totals", all},
		{"one user by day and model", with(func(q *UsageQuery) { q.UserID, q.By = 3, ByDay|ByModel })},
		{"top users", with(func(q *UsageQuery) { q.By, q.Limit = ByUser, 5 })},
		{"top users of a group", with(func(q *UsageQuery) { q.By, q.Limit, q.Group = ByUser|ByGroup, 2, "staff" })},
		{"most energy by group", with(func(q *UsageQuery) { q.By, q.Limit, q.MostEnergy = ByGroup, 2, true })},
		{"by group", with(func(q *UsageQuery) { q.By = ByGroup })},
		{"by user and group, one day", with(func(q *UsageQuery) {
			q.By, q.From, q.To = ByUser|ByGroup, base.AddDate(0, 0, 2), base.AddDate(0, 0, 3)
		})},
		{"an hour's edge", with(func(q *UsageQuery) { q.By, q.From, q.To = ByDay|ByUser, base.Add(30*time.Hour), base.Add(31*time.Hour) })},
		{"nobody", with(func(q *UsageQuery) { q.UserID, q.By = 99, ByDay })},
	}
}

func checkUsage(t *testing.T, a Aggregator, evs []Event) {
	ctx := context.Background()
	for _, tc := range usageCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Usage(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			want := expectUsage(evs, tc.q)
			if tc.q.By == 0 && len(want) == 0 {
				want = []UsageRow{{}}
			}
			if len(got) != len(want) {
				t.Fatalf("%d rows, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
			}
			for i := range got {
				g, w := got[i], want[i]
				if math.Abs(g.EnergyJ-w.EnergyJ) > 1e-6*max(1, w.EnergyJ) {
					t.Errorf("row %d: energy %v, want %v", i, g.EnergyJ, w.EnergyJ)
				}
				g.EnergyJ, w.EnergyJ = 0, 0
				if g != w {
					t.Errorf("row %d:\n got %+v\nwant %+v", i, g, w)
				}
			}
		})
	}
	base := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	for _, q := range []UsageQuery{{}, {From: base, To: base}, {From: base, To: base.AddDate(2, 0, 0), By: ByDay},
		{From: base, To: base.AddDate(0, 0, 1), Limit: MaxLimit + 1}} {
		if _, err := a.Usage(ctx, q); err == nil {
			t.Errorf("Usage(%+v): no error", q)
		}
	}
}

func TestSQLiteUsage(t *testing.T) {
	evs := genEvents(3000, 3)
	checkUsage(t, NewSQLiteSearcher(sqliteWith(t, evs)).(Aggregator), evs)
}

func TestClickHouseUsage(t *testing.T) {
	evs := genEvents(3000, 4)
	conn, db := clickhouseWith(t, evs)
	insertClickHouse(t, conn, db, evs[:500]) // a retried batch: FINAL counts it once
	checkUsage(t, NewClickHouseSearcher(conn, db).(Aggregator), evs)
}
