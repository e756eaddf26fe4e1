package admin

import (
	"context"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// TestAuditClickHouse runs the audit API's search and get cases with the
// audit read from a real ClickHouse server, each event stored twice (a
// replayed batch, which the table keeps until a merge: reads must not).
func TestAuditClickHouse(t *testing.T) {
	ctx := context.Background()
	srv := testsvc.StartClickHouse(t)
	conn := srv.Open(t)
	if err := audit.MigrateClickHouse(ctx, conn, srv.Database); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b, err := conn.PrepareBatch(ctx, "INSERT INTO "+srv.Database+".requests (`"+strings.Join(audit.Columns, "`, `")+"`)")
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range auditSample() {
			if err := b.Append(eventValues(ev, false)...); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Send(); err != nil {
			t.Fatal(err)
		}
	}
	e := withAudit(newEnv(t), audit.NewClickHouseSearcher(conn, srv.Database))
	// Not subtests: env reports through the t it was made with.
	auditSearchCases(t, e)
	auditGetCases(t, e)
}
