package sqlstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
	"github.com/mindrouter/mindrouter/core/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.StopAll()
	os.Exit(code)
}

func openMySQL(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sqlstore.Open(ctx, sqlstore.MySQL, dsn)
	if err != nil {
		t.Fatalf("Open(mysql): %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestMariaDB(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openMySQL(t, testsvc.StartMariaDB(t).DSN) })
}
