package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A deadlock reported by MySQL rolls back the transaction and runs it
// again; any other error does not.
func TestInTx_RetriesDeadlocks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, SQLite, filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name  string
		err   error
		tries int
	}{
		{"deadlock then success", &mysql.MySQLError{Number: myDeadlock}, 2},
		{"lock wait timeout then success", &mysql.MySQLError{Number: myLockWaitTimeout}, 2},
		{"duplicate entry", &mysql.MySQLError{Number: myDupEntry}, 1},
		{"other", errors.New("boom"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := s.inTx(ctx, func(*sql.Tx) error {
				calls++
				if calls == 1 {
					return tc.err
				}
				return nil
			})
			if calls != tc.tries {
				t.Errorf("fn ran %d times, want %d", calls, tc.tries)
			}
			if (tc.tries == 1) != (err != nil) {
				t.Errorf("inTx = %v", err)
			}
		})
	}
	calls := 0
	err = s.inTx(ctx, func(*sql.Tx) error { calls++; return &mysql.MySQLError{Number: myDeadlock} })
	if calls != 3 || !retryable(err) {
		t.Errorf("a lasting deadlock: %d tries, error %v; want 3 tries and the deadlock", calls, err)
	}
}

func TestSplitStatements(t *testing.T) {
	got := splitStatements("-- a comment; with a semicolon;\nCREATE TABLE a (\n  x INT -- inline\n);\n\n  -- indented comment\nCREATE INDEX i ON a (x);\nSELECT 1")
	want := []string{"CREATE TABLE a (\n  x INT -- inline\n)", "CREATE INDEX i ON a (x)", "SELECT 1"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("statement %d = %q, want %q", i, got[i], want[i])
		}
	}
}
