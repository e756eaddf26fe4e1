package audit

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// The deploy/ copy of each migration is the embedded one, byte for byte.
func TestSchemaDeployCopy(t *testing.T) {
	names, err := filepath.Glob("schema/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no embedded migrations: %v", err)
	}
	deployed, _ := filepath.Glob("../../deploy/clickhouse/schema/*.sql")
	if len(deployed) != len(names) {
		t.Fatalf("deploy/clickhouse/schema has %d files, core/audit/schema %d", len(deployed), len(names))
	}
	for _, n := range names {
		a, _ := os.ReadFile(n)
		b, err := os.ReadFile(filepath.Join("../../deploy/clickhouse/schema", filepath.Base(n)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("deploy/clickhouse/schema/%s differs from core/audit/%s", filepath.Base(n), n)
		}
	}
}

func TestMigrateClickHouse(t *testing.T) {
	chs := testsvc.StartClickHouse(t)
	conn := chs.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := chs.Database + "_audit" // a database the migration creates
	for range 2 {                 // idempotent
		if err := MigrateClickHouse(ctx, conn, db); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })
	rows, err := conn.Query(ctx, "SELECT name FROM system.columns WHERE database = ? AND table = 'requests' ORDER BY position", db)
	if err != nil {
		// 18.16 has no system.columns.position: keep the table's order.
		rows, err = conn.Query(ctx, "SELECT name FROM system.columns WHERE database = ? AND table = 'requests'", db)
		if err != nil {
			t.Fatal(err)
		}
	}
	var cols []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, n)
	}
	rows.Close()
	if !slices.Equal(cols, Columns) {
		t.Errorf("requests columns:\n got %v\nwant %v", cols, Columns)
	}
	var blobCols []string
	rows, err = conn.Query(ctx, "SELECT name FROM system.columns WHERE database = ? AND table = 'blobs'", db)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		blobCols = append(blobCols, n)
	}
	rows.Close()
	slices.Sort(blobCols)
	if want := []string{"data", "media_type", "request_id", "sha256", "size", "time"}; !slices.Equal(blobCols, want) {
		t.Errorf("blobs columns %v, want %v", blobCols, want)
	}
	files, _ := fs.Glob(schemaFS, "schema/*.sql")
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".schema_migrations").Scan(&n); err != nil || n != uint64(len(files)) {
		t.Errorf("schema_migrations rows = %d (%v), want %d", n, err, len(files))
	}
	if err := MigrateClickHouse(ctx, conn, "x; DROP"); err == nil {
		t.Error("a database name with SQL in it was accepted")
	}
}

func TestHasDateTime64(t *testing.T) {
	for v, want := range map[string]bool{"18.16.1": false, "19.17.4.11": false, "20.1.2.4": true, "24.8.1": true, "weird": true} {
		if got := hasDateTime64(v); got != want {
			t.Errorf("hasDateTime64(%q) = %v, want %v", v, got, want)
		}
	}
}
