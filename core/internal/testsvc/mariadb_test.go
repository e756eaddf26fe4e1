package testsvc

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

func TestMain(m *testing.M) {
	code := m.Run()
	StopAll()
	os.Exit(code)
}

func TestMariaDB_DatabasesAreSeparate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := StartMariaDB(t)
	b := StartMariaDB(t)
	if a.Addr != b.Addr {
		t.Errorf("two calls started two servers (%s, %s); want one per test binary", a.Addr, b.Addr)
	}
	if a.Name == b.Name {
		t.Fatalf("two calls gave the same database %q", a.Name)
	}
	dba := openDB(t, a.DSN)
	dbb := openDB(t, b.DSN)
	if _, err := dba.ExecContext(ctx, "CREATE TABLE x (id INT PRIMARY KEY, at DATETIME(6))"); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 1, 2, 3, 4, 5, 678901000, time.UTC)
	if _, err := dba.ExecContext(ctx, "INSERT INTO x VALUES (1, ?)", want); err != nil {
		t.Fatal(err)
	}
	var got time.Time
	if err := dba.QueryRowContext(ctx, "SELECT at FROM x").Scan(&got); err != nil {
		t.Fatalf("read back a DATETIME (parseTime): %v", err)
	}
	if !got.Equal(want) {
		t.Errorf("DATETIME(6) read back %v, want %v", got, want)
	}
	if _, err := dbb.ExecContext(ctx, "SELECT id FROM x"); err == nil {
		t.Error("database b sees database a's table")
	}
}

func TestMariaDB_DroppedAtCleanup(t *testing.T) {
	var name string
	t.Run("user", func(t *testing.T) { name = StartMariaDB(t).Name })
	m := StartMariaDB(t)
	db := openDB(t, m.DSN)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
