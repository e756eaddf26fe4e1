package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// BenchmarkCredentialByHash is the authentication cache miss: one query
// joining key, user and group, among 1,000 keys.
func BenchmarkCredentialByHash(b *testing.B) {
	for _, dialect := range []string{sqlstore.SQLite, sqlstore.MySQL} {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			dsn := filepath.Join(b.TempDir(), "bench.db")
			if dialect == sqlstore.MySQL {
				dsn = testsvc.StartMariaDB(b).DSN
			}
			s, err := sqlstore.Open(ctx, dialect, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			g := store.Group{Name: "g"}
			if err := s.CreateGroup(ctx, &g); err != nil {
				b.Fatal(err)
			}
			u := store.User{Username: "u", GroupID: g.ID, Active: true}
			if err := s.CreateUser(ctx, &u); err != nil {
				b.Fatal(err)
			}
			var hashes [][]byte
			for i := range 1000 {
				h := sha256.Sum256(fmt.Append(nil, i))
				k := store.APIKey{UserID: u.ID, Prefix: fmt.Sprintf("mr2_%08d", i), Hash: h[:]}
				if err := s.CreateKey(ctx, &k); err != nil {
					b.Fatal(err)
				}
				hashes = append(hashes, h[:])
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.CredentialByHash(ctx, hashes[i%len(hashes)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
