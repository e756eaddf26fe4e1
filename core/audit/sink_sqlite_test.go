package audit

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
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
