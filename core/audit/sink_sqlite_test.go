package audit

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// A new embedded sink file has sqlitePageSize pages; one written by an
// earlier release (SQLite's 4 KiB default) keeps its pages and works.
func TestEmbeddedPageSize(t *testing.T) {
	pageSize := func(db *sql.DB) int {
		t.Helper()
		var n int
		if err := db.QueryRow("PRAGMA page_size").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	db, err := OpenEmbedded(filepath.Join(t.TempDir(), "new", "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	if n := pageSize(db); n != sqlitePageSize {
		t.Errorf("new file: page size %d, want %d", n, sqlitePageSize)
	}
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q (%v), want wal", mode, err)
	}
	db.Close()

	old := filepath.Join(t.TempDir(), "audit.db")
	raw, err := sql.Open("sqlite", "file:"+old+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(sqliteSchema); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err = OpenEmbedded(old)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := pageSize(db); n != 4096 {
		t.Errorf("existing file: page size %d, want its 4096", n)
	}
	var ev Event
	fillEvent(&ev, testOutcome(1), "gw")
	s := newSQLiteSink(db, false)
	defer s.close()
	if err := s.write(context.Background(), []Event{ev}, false); err != nil {
		t.Fatal(err)
	}
}

// The embedded sink's rows read back as written, batch sizes on either
// side of its statements' row counts (sqliteRows); an empty text column
// is stored as an empty string, not NULL; a started row is
// replaced by its finished one in a later batch and not the other way
// round; a write that fails (its context done) leaves nothing, and the
// sink writes again afterwards on a fresh connection.
func TestSQLiteSinkRows(t *testing.T) {
	db, err := OpenEmbedded(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := newSQLiteSink(db, true)
	defer s.close()
	ctx := context.Background()
	get := NewSQLiteSearcher(db).Get
	var want []Event
	for _, n := range []int{1, 3, 64, 85, 129} {
		evs := make([]Event, n)
		for i := range evs {
			fillEvent(&evs[i], testOutcome(len(want)+i), "gw")
			evs[i].RequestBody = string(testOutcome(i).Request)
			if i%2 == 0 {
				evs[i].ErrorCode, evs[i].Error, evs[i].Decision = "upstream", "backend said no", ""
			}
		}
		if err := s.write(ctx, evs, false); err != nil {
			t.Fatalf("batch of %d: %v", n, err)
		}
		want = append(want, evs...)
	}
	for _, w := range want {
		got, err := get(ctx, w.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		w.Blobs, w.Until = nil, time.Time{}
		if w.State == "" {
			w.State = RowFinished
		}
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("%s reads\n%+v\nwant\n%+v", w.RequestID, got, w)
		}
	}
	var nulls, empty int
	if err := db.QueryRow(`SELECT count(*) FILTER (WHERE "error" IS NULL OR "decision" IS NULL OR "gpus" IS NULL),
 count(*) FILTER (WHERE typeof("error") = 'text' AND "error" = '') FROM requests`).Scan(&nulls, &empty); err != nil {
		t.Fatal(err)
	}
	if nulls != 0 || empty == 0 {
		t.Errorf("%d rows with a NULL text column, %d with an empty error: want none, some", nulls, empty)
	}

	// A started row, then its finished one in a later batch, then the
	// started one replayed.
	var ev Event
	fillEvent(&ev, testOutcome(1000), "gw")
	started := ev
	started.State, started.Status, started.FinishReason = RowStarted, 0, ""
	for _, b := range [][]Event{{started}, {ev}, {started}} {
		if err := s.write(ctx, b, true); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := get(ctx, ev.RequestID); err != nil || got.State != RowFinished || got.Status != ev.Status {
		t.Errorf("after started, finished, started: state %q, status %d (%v); want %q, %d", got.State, got.Status, err, RowFinished, ev.Status)
	}

	// A write whose context is done stores nothing; the next one works.
	fillEvent(&ev, testOutcome(2000), "gw")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.write(cctx, []Event{ev}, false); err == nil {
		t.Fatal("a write with its context done succeeded")
	}
	if _, err := get(ctx, ev.RequestID); err != ErrNotFound {
		t.Fatalf("the failed write's row: %v, want ErrNotFound", err)
	}
	if err := s.write(ctx, []Event{ev}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := get(ctx, ev.RequestID); err != nil {
		t.Fatal(err)
	}
}

// A finished event replaces its started row also when the sink writing
// it did not write that row (a restart, or its hint cleared): the plain
// insert ignores it, and the statement's finished events are written
// again with the upsert, in batches that mix such events with new
// finished rows, new started rows and started rows replayed over
// finished ones, across the statements' row counts.
func TestSQLiteSinkRows_StartedBeforeRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	ctx := context.Background()
	const n = 85 // 64 + 16 + 4 + 1: every statement size
	fin := make([]Event, n)
	for i := range fin {
		fillEvent(&fin[i], testOutcome(i), "gw")
		fin[i].RequestBody = fmt.Sprintf("body %d", i)
	}
	started := func(e Event) Event {
		e.State, e.Status, e.FinishReason, e.RequestBody = RowStarted, 0, "", ""
		return e
	}
	// The first process: every third request's started row, and every
	// fifth one finished already.
	db, err := OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	s := newSQLiteSink(db, true)
	var first []Event
	for i := range fin {
		switch {
		case i%5 == 0:
			first = append(first, fin[i])
		case i%3 == 0:
			first = append(first, started(fin[i]))
		}
	}
	if err := s.write(ctx, first, false); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	// The second process: every request finished, each fifth one's
	// started row replayed, and new started rows.
	db, err = OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	s = newSQLiteSink(db, true)
	defer s.close()
	var second []Event
	for i := range fin {
		if i%5 == 0 {
			second = append(second, started(fin[i]))
		}
		second = append(second, fin[i])
	}
	var fresh Event
	fillEvent(&fresh, testOutcome(n), "gw")
	fresh = started(fresh)
	second = append(second, fresh)
	if err := s.write(ctx, second, false); err != nil {
		t.Fatal(err)
	}
	get := NewSQLiteSearcher(db).Get
	for _, w := range append(fin, fresh) {
		got, err := get(ctx, w.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		w.Blobs, w.Until = nil, time.Time{}
		if w.State == "" {
			w.State = RowFinished
		}
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("%s reads\n%+v\nwant\n%+v", w.RequestID, got, w)
		}
	}
}
