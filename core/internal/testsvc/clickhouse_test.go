package testsvc

import (
	"context"
	"testing"
	"time"
)

func TestClickHouse_DatabasesAreSeparate(t *testing.T) {
	a, b := StartClickHouse(t), StartClickHouse(t)
	if a.Database == b.Database || a.Addr != b.Addr {
		t.Fatalf("want two databases on one server, got %s@%s and %s@%s", a.Database, a.Addr, b.Database, b.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ca := a.Open(t)
	if err := ca.Exec(ctx, "CREATE TABLE t (x UInt32) ENGINE = MergeTree() ORDER BY x"); err != nil {
		t.Fatal(err)
	}
	if err := b.Open(t).Exec(ctx, "SELECT count() FROM t"); err == nil {
		t.Fatal("b sees a's table")
	}
}

// A private server keeps its data across Stop and Start, and refuses
// connections while stopped.
func TestClickHouse_PrivateStopStart(t *testing.T) {
	c := StartPrivateClickHouse(t)
	conn := c.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := conn.Exec(ctx, "CREATE TABLE t (x UInt32) ENGINE = MergeTree() ORDER BY x"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "INSERT INTO t SELECT number FROM system.numbers LIMIT 10"); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	down, cancelDown := context.WithTimeout(ctx, 5*time.Second)
	err := conn.Ping(down)
	cancelDown()
	if err == nil {
		t.Fatal("ping succeeded with the server stopped")
	}
	c.Start(t)
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM t").Scan(&n); err != nil || n != 10 {
		t.Fatalf("after restart: count = %d (%v), want 10", n, err)
	}
}
