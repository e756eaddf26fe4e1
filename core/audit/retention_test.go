package audit

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// TestBlobRetentionClickHouse runs the retention that docs/audit.md
// prescribes on a real ClickHouse: drop a month's partition of requests,
// then the mutation that deletes blobs older than a cut-off that no kept
// request refers to. Kept: a blob a kept request names (however old) and
// a blob newer than the cut-off; gone: an old blob nobody names, and an
// old blob only the dropped partition named.
func TestBlobRetentionClickHouse(t *testing.T) {
	chs := testsvc.StartClickHouse(t)
	conn := chs.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	db := chs.Database + "_retention"
	if err := MigrateClickHouse(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })

	hash := func(c byte) string { return strings.Repeat(string(c), 64) }
	ref := func(c byte) string { return "mr-blob:sha256:" + hash(c) + ";type=image/png;size=4" }
	exec := func(q string) {
		t.Helper()
		if err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	day := func(s string) time.Time {
		t, err := time.Parse(time.DateTime, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	insert := func(q string, rows ...[]any) {
		t.Helper()
		b, err := conn.PrepareBatch(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for _, r := range rows {
			if err := b.Append(r...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := b.Send(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Requests: January (dropped below) names blob d; March names blob a.
	insert("INSERT INTO "+db+".requests (request_id, time, request_body, response_body)",
		[]any{"req-jan", day("2026-01-15 10:00:00"), `{"image":"` + ref('d') + `"}`, ""},
		[]any{"req-mar", day("2026-03-15 10:00:00"), `{"image":"` + ref('a') + `"}`, ""})
	insert("INSERT INTO "+db+".blobs (sha256, time, media_type, size, data, request_id)",
		[]any{hash('a'), day("2026-01-10 00:00:00"), "image/png", uint64(4), "aaaa", "req-x"},
		[]any{hash('b'), day("2026-01-10 00:00:00"), "image/png", uint64(4), "bbbb", "req-y"},
		[]any{hash('c'), day("2026-04-10 00:00:00"), "image/png", uint64(4), "cccc", "req-z"},
		[]any{hash('d'), day("2026-01-15 10:00:00"), "image/png", uint64(4), "dddd", "req-jan"})

	// The documented steps, verbatim but for the database and the cut-off.
	exec("ALTER TABLE " + db + ".requests DROP PARTITION 202601")
	exec(`ALTER TABLE ` + db + `.blobs DELETE WHERE time < toDateTime('2026-02-01 00:00:00')
  AND sha256 NOT IN (SELECT arrayJoin(extractAll(concat(request_body, ' ', response_body), 'mr-blob:sha256:([0-9a-f]{64})'))
                     FROM ` + db + `.requests)`)

	// Mutations run in the background: wait for the result.
	want := []string{hash('a'), hash('c')}
	var got []string
	for deadline := time.Now().Add(60 * time.Second); ; {
		got = got[:0]
		rows, err := conn.Query(ctx, "SELECT sha256 FROM "+db+".blobs FINAL ORDER BY sha256")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var h string
			if err := rows.Scan(&h); err != nil {
				t.Fatal(err)
			}
			got = append(got, h)
		}
		rows.Close()
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	short := func(hs []string) (s []string) {
		for _, h := range hs {
			s = append(s, h[:1])
		}
		return s
	}
	if !slices.Equal(got, want) {
		t.Fatalf("blobs after retention: %v, want %v (a: named by a kept request, c: newer than the cut-off)", short(got), short(want))
	}
}
