package console

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/audit"
)

// pagedAudit is a Searcher only: AuditUsage pages through it.
type pagedAudit struct{ evs []audit.Event }

func (p *pagedAudit) Search(_ context.Context, q audit.Query) ([]audit.Event, int, error) {
	var out []audit.Event
	for _, e := range p.evs {
		if e.UserID == q.UserID && !e.Time.Before(q.From) {
			out = append(out, e)
		}
	}
	total := len(out)
	if q.Skip >= len(out) {
		return nil, total, nil
	}
	out = out[q.Skip:]
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, total, nil
}

func (p *pagedAudit) Get(context.Context, string) (audit.Event, error) {
	return audit.Event{}, errors.New("not here")
}

// summingAudit can aggregate: AuditUsage must ask it for one GROUP BY and
// never page through its requests.
type summingAudit struct {
	pagedAudit
	t    *testing.T
	rows []audit.UsageRow
	got  audit.UsageQuery
}

func (s *summingAudit) Search(context.Context, audit.Query) ([]audit.Event, int, error) {
	s.t.Error("Search called on a sink that can aggregate")
	return nil, 0, nil
}

func (s *summingAudit) Usage(_ context.Context, q audit.UsageQuery) ([]audit.UsageRow, error) {
	s.got = q
	return s.rows, nil
}

func TestAuditUsage_Sources(t *testing.T) {
	now := time.Date(2026, 3, 12, 15, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	want := []DayUsage{
		{Day: day(10), Model: "llama3-70b", Tokens: 120},
		{Day: day(10), Model: "qwen3-8b", Tokens: 240},
		{Day: day(12), Model: "qwen3-8b", Tokens: 7},
	}

	paged := &pagedAudit{evs: []audit.Event{
		{UserID: 3, Time: day(10).Add(time.Hour), Model: "qwen3-8b", PromptTokens: 100, CompletionTokens: 20},
		{UserID: 3, Time: day(10).Add(2 * time.Hour), Model: "qwen3-8b", PromptTokens: 100, CompletionTokens: 20},
		{UserID: 3, Time: day(10).Add(3 * time.Hour), Model: "llama3-70b", PromptTokens: 100, CompletionTokens: 20},
		{UserID: 3, Time: day(11), Model: "qwen3-8b"}, // no tokens: not drawn
		{UserID: 3, Time: day(12), Model: "qwen3-8b", PromptTokens: 5, CompletionTokens: 2},
		{UserID: 4, Time: day(12), Model: "qwen3-8b", PromptTokens: 900}, // another user
		{UserID: 3, Time: day(9), Model: "qwen3-8b", PromptTokens: 900},  // before the window
	}}
	got, err := AuditUsage(paged, clock).UsageByDay(context.Background(), 3, 3)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("paged: %+v, %v; want %+v", got, err, want)
	}

	sum := &summingAudit{t: t, rows: []audit.UsageRow{
		{Day: "2026-03-12", Model: "qwen3-8b", Tokens: 7},
		{Day: "2026-03-10", Model: "qwen3-8b", Tokens: 240},
		{Day: "2026-03-11", Model: "qwen3-8b", Tokens: 0},
		{Day: "2026-03-10", Model: "llama3-70b", Tokens: 120},
	}}
	got, err = AuditUsage(sum, clock).UsageByDay(context.Background(), 3, 3)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("aggregated: %+v, %v; want %+v", got, err, want)
	}
	wantQ := audit.UsageQuery{UserID: 3, From: day(10), To: day(13), By: audit.ByDay | audit.ByModel}
	if !reflect.DeepEqual(sum.got, wantQ) {
		t.Errorf("usage query %+v, want %+v", sum.got, wantQ)
	}
}
