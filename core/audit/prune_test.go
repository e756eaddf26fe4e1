package audit

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// TestPruneEmbedded: rows past the row retention go (a started one
// stays), bodies past the content retention are emptied, and a blob goes
// only when no kept body names it any more (its time follows its latest
// reference).
func TestPruneEmbedded(t *testing.T) {
	ctx := context.Background()
	db, err := OpenEmbedded(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	ago := func(days int) time.Time { return now.Add(-time.Duration(days) * 24 * time.Hour) }
	img := func(c byte) Blob {
		return Blob{SHA256: strings.Repeat(string(c), 64), MediaType: "image/png", Data: "png"}
	}
	ev := func(id string, t time.Time, state string, blobs ...Blob) Event {
		return Event{RequestID: id, Time: t, State: state, Status: 200, RequestBody: "prompt of " + id, ResponseBody: "answer", Blobs: blobs}
	}
	evs := []Event{
		ev("old", ago(400), RowFinished, img('a')),
		ev("old-started", ago(400), RowStarted),
		ev("month-old", ago(40), RowFinished, img('b'), img('c')),
		ev("recent", ago(2), RowFinished, img('c')), // c is named again: kept
	}
	if err := newSQLiteSink(db, false).write(ctx, evs, false); err != nil {
		t.Fatal(err)
	}
	res, err := PruneEmbedded(ctx, db, now, Retention{Rows: 365 * 24 * time.Hour, Content: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 1 || res.Cleared != 2 || res.Blobs != 2 {
		t.Errorf("pruned %+v, want 1 row, 2 cleared (month-old, old-started), 2 blobs (a, b)", res)
	}
	ids := map[string]string{}
	rows, err := db.QueryContext(ctx, `SELECT request_id, request_body FROM requests`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, body string
		_ = rows.Scan(&id, &body)
		ids[id] = body
	}
	rows.Close()
	if _, ok := ids["old"]; ok {
		t.Error("a row past the retention was kept")
	}
	if _, ok := ids["old-started"]; !ok {
		t.Error("an unfinished row was deleted")
	}
	if ids["month-old"] != "" || ids["recent"] == "" {
		t.Errorf("bodies: month-old %q, recent %q", ids["month-old"], ids["recent"])
	}
	var blobs []string
	brows, _ := db.QueryContext(ctx, `SELECT substr(sha256, 1, 1) FROM blobs ORDER BY sha256`)
	for brows.Next() {
		var s string
		_ = brows.Scan(&s)
		blobs = append(blobs, s)
	}
	brows.Close()
	if strings.Join(blobs, ",") != "c" {
		t.Errorf("blobs kept %v, want [c]", blobs)
	}
	if res, err := PruneEmbedded(ctx, db, now, Retention{}); err != nil || res != (PruneResult{}) {
		t.Errorf("no retention pruned %+v %v", res, err)
	}
}

// TestRetentionStatements: the ALTERs that set, change and remove the
// TTLs, from create_table_query texts as ClickHouse 24 prints them, and
// none when the table is already as asked.
func TestRetentionStatements(t *testing.T) {
	const bare = "CREATE TABLE db.requests (`request_id` String, `time` DateTime64(6, 'UTC'), `request_body` String, " +
		"`response_body` String, `decision` String) ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(time) ORDER BY (user, time, request_id) SETTINGS index_granularity = 8192"
	const withTTL = "CREATE TABLE db.requests (`request_id` String, `time` DateTime64(6, 'UTC'), " +
		"`request_body` String TTL toDateTime(time) + toIntervalSecond(2592000), `response_body` String TTL toDateTime(time) + toIntervalSecond(2592000), " +
		"`decision` String) ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(time) ORDER BY (user, time, request_id) TTL toDateTime(time) + toIntervalSecond(31536000) SETTINGS index_granularity = 8192"
	day := 24 * time.Hour
	year, month := Retention{Rows: 365 * day, Content: 30 * day}, 30*day
	if got := retentionStatements("db.requests", bare, year); len(got) != 3 ||
		got[0] != "ALTER TABLE db.requests MODIFY TTL toDateTime(time) + toIntervalSecond(31536000)" ||
		got[1] != "ALTER TABLE db.requests MODIFY COLUMN request_body String TTL toDateTime(time) + toIntervalSecond(2592000)" {
		t.Errorf("set: %q", got)
	}
	if got := retentionStatements("db.requests", withTTL, year); len(got) != 0 {
		t.Errorf("already as asked: %q", got)
	}
	if got := retentionStatements("db.requests", withTTL, Retention{Content: month / 4}); len(got) != 3 ||
		got[0] != "ALTER TABLE db.requests REMOVE TTL" || !strings.Contains(got[2], "response_body String TTL toDateTime(time) + toIntervalSecond(648000)") {
		t.Errorf("change: %q", got)
	}
	if got := retentionStatements("db.requests", withTTL, Retention{}); len(got) != 3 ||
		got[1] != "ALTER TABLE db.requests MODIFY COLUMN request_body REMOVE TTL" {
		t.Errorf("remove: %q", got)
	}
	if !hasTTL("24.8.4.13") || !hasTTL("19.6.1") || hasTTL("18.16.1") || hasTTL("19.5.3") {
		t.Error("hasTTL")
	}
}

// TestApplyRetentionClickHouse runs against the test kit's real ClickHouse:
// a server with TTLs gets them (and keeps them across a second apply); a
// server without (Debian 12's 18.16) says so with ErrTTLUnsupported, and
// asking for no retention is fine on either.
func TestApplyRetentionClickHouse(t *testing.T) {
	chs := testsvc.StartClickHouse(t)
	conn := chs.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	db := chs.Database + "_ttl"
	if err := MigrateClickHouse(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := ApplyRetentionClickHouse(ctx, conn, db, Retention{}); err != nil {
		t.Fatalf("no retention on %s: %v", version, err)
	}
	day := 24 * time.Hour
	err := ApplyRetentionClickHouse(ctx, conn, db, Retention{Rows: 365 * day, Content: 30 * day})
	if !hasTTL(version) {
		if !errors.Is(err, ErrTTLUnsupported) {
			t.Fatalf("ClickHouse %s has no TTLs: %v", version, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("ClickHouse %s: %v", version, err)
	}
	var q string
	if err := conn.QueryRow(ctx, "SELECT create_table_query FROM system.tables WHERE database = ? AND name = 'requests'", db).Scan(&q); err != nil {
		t.Fatal(err)
	}
	if got := retentionStatements(db+".requests", q, Retention{Rows: 365 * day, Content: 30 * day}); len(got) != 0 {
		t.Errorf("after applying, still to do: %q (table: %s)", got, q)
	}
}

// TestRecorderRedacts: with Redact patterns (audit.content: redacted) the
// stored bodies have every match replaced, the rest kept.
func TestRecorderRedacts(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "audit.db")
	r, err := New(Options{Dir: t.TempDir(), EmbeddedPath: dbPath, Content: true, MaxContentBytes: 4096,
		Redact:     []*regexp.Regexp{regexp.MustCompile(`[a-z]+@example\.edu`), regexp.MustCompile(`mr2_[a-z0-9]{8,}`)},
		FlushEvery: 20 * time.Millisecond, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	o := testOutcome(1)
	o.Request = []byte(`{"messages":[{"role":"user","content":"I am ada@example.edu, my key is mr2_secret1234"}]}`)
	o.Response = []byte(`{"content":"hello ada@example.edu"}`)
	r.Observe(o)
	db, err := OpenEmbedded(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var req, resp string
	testutil.Poll(10*time.Second, func() bool {
		return db.QueryRow("SELECT request_body, response_body FROM requests WHERE request_id = ?", o.RequestID).Scan(&req, &resp) == nil
	})
	if req != `{"messages":[{"role":"user","content":"I am [REDACTED], my key is [REDACTED]"}]}` || resp != `{"content":"hello [REDACTED]"}` {
		t.Errorf("stored %q / %q", req, resp)
	}
}
