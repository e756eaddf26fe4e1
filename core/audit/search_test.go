package audit

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// genEvents returns n events spread over five days from base, across
// eight users in three groups, three models and three backends, with a
// mix of statuses; every 7th mentions "Needle" in its request and every
// 11th "needle" in its error. Deterministic for a seed.
func genEvents(n int, seed uint64) []Event {
	r := rand.New(rand.NewPCG(seed, 1))
	base := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	groups := []string{"faculty", "staff", "students"}
	models := []string{"qwen3-8b", "llama3-70b", "gpt-oss-20b"}
	backends := []string{"gpu1-vllm", "gpu2-vllm", "gpu3-ollama"}
	statuses := []uint16{200, 200, 200, 200, 200, 200, 200, 400, 429, 500, 503}
	out := make([]Event, n)
	for i := range out {
		u := r.IntN(8)
		st := statuses[r.IntN(len(statuses))]
		e := Event{
			RequestID: fmt.Sprintf("req-%06d", i),
			// whole seconds: ClickHouse's DateTime keeps no fraction
			Time:      base.Add(time.Duration(r.IntN(5*24*3600)) * time.Second),
			Replica:   "gw-a",
			UserID:    int64(u + 1),
			User:      fmt.Sprintf("user%d", u+1),
			Group:     groups[u%3],
			KeyID:     fmt.Sprintf("key:abc%d", u),
			ClientIP:  "10.0.0.1",
			UserAgent: "test/1",
			Dialect:   "openai",
			Route:     "chat",
			Kind:      []string{"chat", "chat", "chat", "embedding"}[i%4],
			Model:     models[r.IntN(3)],
			Stream:    r.IntN(2) == 0,
			Backend:   backends[r.IntN(3)],
			Node:      "node1",
			GPUs:      "0,1",
			Attempts:  1,
			Status:    st,
			State:     RowFinished,
		}
		if st >= 400 {
			e.ErrorCode = "upstream_error"
			e.Error = "backend said no"
			if i%11 == 0 {
				e.Error = "a NEEDLE in the error"
			}
		} else {
			e.FinishReason = "stop"
			e.PromptTokens = uint32(10 + r.IntN(2000))
			e.CompletionTokens = uint32(r.IntN(1000))
			e.ReasoningTokens = uint32(r.IntN(50))
			e.EnergyJ = float64(r.IntN(100000)) / 100
		}
		e.ClientGone = i%13 == 0
		e.TokensEstimated = i%17 == 0
		e.TotalUs = uint32(1000 + r.IntN(5_000_000))
		e.AuthUs = uint32(r.IntN(100))
		e.LimitUs = uint32(r.IntN(100))
		e.ReadUs = uint32(r.IntN(100))
		e.CheckUs = uint32(r.IntN(100))
		e.DecodeUs = uint32(r.IntN(300))
		e.QueueUs = uint32(r.IntN(200_000))
		e.EncodeUs = uint32(r.IntN(300))
		e.BackendUs = e.TotalUs / 2
		if i%9 == 0 { // a gateway slower than its backend: overhead beyond total/2
			e.BackendUs = e.TotalUs / 4
		}
		e.RespondUs = uint32(r.IntN(500))
		e.TTFTUs = uint32(r.IntN(300_000))
		e.FairnessDelayUs = uint32(r.IntN(int(e.QueueUs) + 1))
		if e.Stream {
			e.StreamPluginUs = uint32(r.IntN(int(e.RespondUs) + 1))
		}
		e.Chunks = uint32(r.IntN(200))
		e.BytesIn = uint64(100 + r.IntN(10000))
		e.BytesOut = uint64(r.IntN(100000))
		e.RequestBody = fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"question %d"}]}`, e.Model, i)
		if i%7 == 0 {
			e.RequestBody = fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"find the Needle %d"}]}`, e.Model, i)
		}
		e.ResponseBody = fmt.Sprintf("answer %d", i)
		e.Decision = `{"backend":"` + e.Backend + `"}`
		out[i] = e
	}
	return out
}

// sqliteWith opens a fresh embedded sink holding evs, written by the
// sink's own code, as the recorder writes it.
func sqliteWith(t testing.TB, evs []Event) *sql.DB {
	t.Helper()
	db, err := OpenEmbedded(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := newSQLiteSink(db, false).write(context.Background(), evs, false); err != nil {
		t.Fatal(err)
	}
	return db
}

// expect is the reference answer of Search, computed in Go from evs.
func expect(evs []Event, q Query) ([]Event, int) {
	var m []Event
	for _, e := range evs {
		text := strings.ToLower(q.Text)
		switch {
		case q.User != "" && e.User != q.User,
			q.UserID != 0 && e.UserID != q.UserID,
			q.Model != "" && e.Model != q.Model,
			q.Status != 0 && int(e.Status) != q.Status,
			q.State == StateCompleted && e.Status >= 400,
			q.State == StateFailed && e.Status < 400,
			!q.From.IsZero() && e.Time.Before(q.From),
			!q.To.IsZero() && !e.Time.Before(q.To),
			text != "" && !strings.Contains(strings.ToLower(e.RequestBody), text) &&
				!strings.Contains(strings.ToLower(e.ResponseBody), text) && !strings.Contains(strings.ToLower(e.Error), text):
			continue
		}
		m = append(m, e)
	}
	slices.SortFunc(m, func(a, b Event) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return strings.Compare(b.RequestID, a.RequestID)
	})
	total := len(m)
	lim := q.Limit
	if lim == 0 {
		lim = DefaultLimit
	}
	m = m[min(q.Skip, len(m)):]
	m = m[:min(lim, len(m))]
	for i := range m {
		m[i].RequestBody, m[i].ResponseBody, m[i].Decision = "", "", ""
	}
	return m, total
}

// searchCases are the queries both searchers must answer as expect does.
func searchCases() []struct {
	name string
	q    Query
} {
	day := time.Date(2026, 3, 12, 0, 0, 0, 0, time.UTC)
	return []struct {
		name string
		q    Query
	}{
		{"all, first page", Query{}},
		{"all, a late page", Query{Skip: 350, Limit: 40}},
		{"past the end", Query{Skip: 100000}},
		{"max limit", Query{Limit: MaxLimit}},
		{"user", Query{User: "user3"}},
		{"user id", Query{UserID: 5, Limit: 7}},
		{"model and status", Query{Model: "llama3-70b", Status: 429}},
		{"failed", Query{State: StateFailed}},
		{"completed by user", Query{State: StateCompleted, User: "user2"}},
		{"one day", Query{From: day, To: day.Add(24 * time.Hour), Limit: 1000}},
		{"from only", Query{From: day.Add(36 * time.Hour)}},
		{"text in request, any case", Query{Text: "nEEdle", Limit: 1000}},
		{"text and user", Query{Text: "needle", User: "user1"}},
		{"text with SQL in it", Query{Text: `x' OR 1=1 --`}},
		{"text with LIKE wildcards", Query{Text: "%"}},
		{"text with quotes, escapes and placeholders", Query{Text: "it's ? \\ `x` @p $1", User: "user4"}},
		{"text that the data holds, with a quote", Query{Text: `"content":"find`}},
		{"nobody", Query{User: "nobody"}},
	}
}

// checkSearch runs searchCases against s over evs.
func checkSearch(t *testing.T, s Searcher, evs []Event) {
	ctx := context.Background()
	for _, tc := range searchCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, total, err := s.Search(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			want, wantTotal := expect(evs, tc.q)
			if total != wantTotal {
				t.Errorf("total %d, want %d", total, wantTotal)
			}
			if len(got) != len(want) {
				t.Fatalf("%d events, want %d", len(got), len(want))
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("event %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
		})
	}
	if _, total, _ := s.Search(ctx, Query{Text: "needle"}); total == 0 {
		t.Error("the generated events hold no needle: the text cases prove nothing")
	}
	want := evs[42]
	got, err := s.Get(ctx, want.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Get:\n got %+v\nwant %+v", got, want)
	}
	if _, err := s.Get(ctx, "no-such-request"); err != ErrNotFound {
		t.Errorf("Get of an unknown id: %v, want ErrNotFound", err)
	}
	for _, q := range []Query{{Limit: MaxLimit + 1}, {Skip: -1}, {State: "queued"}, {From: want.Time, To: want.Time}} {
		if _, _, err := s.Search(ctx, q); err == nil {
			t.Errorf("Search(%+v): no error", q)
		}
	}
}

func TestSQLiteSearcher(t *testing.T) {
	evs := genEvents(3000, 1)
	checkSearch(t, NewSQLiteSearcher(sqliteWith(t, evs)), evs)
}
