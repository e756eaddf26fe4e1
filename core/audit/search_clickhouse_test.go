package audit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// clickhouseWith returns a connection to a fresh migrated database on the
// test ClickHouse server holding evs, and the database's name.
func clickhouseWith(t testing.TB, evs []Event) (driver.Conn, string) {
	t.Helper()
	ctx := context.Background()
	srv := testsvc.StartClickHouse(t)
	conn := srv.Open(t)
	if err := MigrateClickHouse(ctx, conn, srv.Database); err != nil {
		t.Fatal(err)
	}
	insertClickHouse(t, conn, srv.Database, evs)
	return conn, srv.Database
}

func insertClickHouse(t testing.TB, conn driver.Conn, database string, evs []Event) {
	t.Helper()
	ctx := context.Background()
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+chQuote(database)+".requests ("+chDialect.columns(Columns)+")")
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		ptrs := fields(&evs[i], Columns)
		vals := make([]any, len(ptrs))
		for j, p := range ptrs {
			switch v := p.(type) {
			case *bool: // UInt8 on every release
				vals[j] = uint8(0)
				if *v {
					vals[j] = uint8(1)
				}
			default:
				vals[j] = deref(p)
			}
		}
		if err := b.Append(vals...); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
}

func deref(p any) any {
	switch v := p.(type) {
	case *string:
		return *v
	case *uint8:
		return *v
	case *uint16:
		return *v
	case *uint32:
		return *v
	case *uint64:
		return *v
	case *int64:
		return *v
	case *float64:
		return *v
	case *time.Time:
		return *v
	}
	panic("audit test: deref of a " + fmt.Sprintf("%T", p))
}

func TestClickHouseSearcher(t *testing.T) {
	evs := genEvents(3000, 2)
	conn, db := clickhouseWith(t, evs)
	// A retried batch: the same rows again. FINAL must hide them.
	insertClickHouse(t, conn, db, evs[:500])
	checkSearch(t, NewClickHouseSearcher(conn, db), evs)
}
