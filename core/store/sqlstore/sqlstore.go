package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"modernc.org/sqlite"

	"github.com/mindrouter/mindrouter/core/store"
)

// Driver names accepted by Open.
const (
	MySQL  = "mysql"
	SQLite = "sqlite"
)

// Store implements store.Store over database/sql. It is safe for
// concurrent use.
type Store struct {
	db      *sql.DB
	dialect string // MySQL or SQLite
}

var _ store.Store = (*Store)(nil)

// Open connects to a database without migrating it (call Migrate).
//
// For "mysql" the dsn is go-sql-driver's (user:pass@tcp(host:3306)/db);
// Open forces parseTime, UTC, clientFoundRows (so an UPDATE that changes
// nothing still counts the row it found) and a strict sql_mode, and sets
// a 10 s dial timeout unless the DSN has one.
//
// For "sqlite" the dsn is a file path (its directory is created), a
// SQLite file: URI (its query kept), or ":memory:". A file gets WAL, a
// 10 s busy timeout, foreign keys and IMMEDIATE transactions (no deadlock
// upgrading a read to a write). A memory database lives in one
// connection, which every call shares, so each Open of ":memory:" is its
// own empty database.
func Open(ctx context.Context, driver, dsn string) (*Store, error) {
	var (
		db  *sql.DB
		err error
	)
	switch driver {
	case MySQL:
		db, err = openMySQL(dsn)
	case SQLite:
		db, err = openSQLite(dsn)
	default:
		return nil, fmt.Errorf("sqlstore: unknown driver %q (want %q or %q)", driver, MySQL, SQLite)
	}
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: connect to %s: %w", driver, err)
	}
	return &Store{db: db, dialect: driver}, nil
}

func openMySQL(dsn string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: mysql dsn: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("sqlstore: mysql dsn names no database (user:pass@tcp(host:3306)/dbname)")
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true
	if cfg.Timeout == 0 {
		// A silent network must not hold a dial past this (queries are
		// bounded by their contexts).
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Params["sql_mode"] = "'TRADITIONAL'"
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: mysql dsn: %w", err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(8)
	// Below the server's wait_timeout (8 h by default) and short enough
	// to follow a failover.
	db.SetConnMaxLifetime(5 * time.Minute)
	return db, nil
}

func openSQLite(dsn string) (*sql.DB, error) {
	if dsn == "" {
		return nil, errors.New("sqlstore: sqlite needs a file path, a file: URI or :memory:")
	}
	const pragmas = "_pragma=foreign_keys(1)"
	if isMemory(dsn) {
		db, err := sql.Open("sqlite", withParams(dsn, pragmas))
		if err != nil {
			return nil, fmt.Errorf("sqlstore: open sqlite memory database: %w", err)
		}
		// One connection holds the database; closing it would lose it.
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		return db, nil
	}
	path := dsn
	if strings.HasPrefix(dsn, "file:") {
		// A URI (SQLite's own syntax, passed through): its path is
		// what comes before the query.
		path, _, _ = strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
		path = strings.TrimPrefix(path, "//") // file:///abs/path
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
	} else if strings.ContainsAny(dsn, "?#") {
		return nil, fmt.Errorf("sqlstore: sqlite path %q: '?' and '#' are not allowed (use a file: URI)", dsn)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("sqlstore: create directory for %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", withParams(dsn, pragmas+
		"&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open sqlite %s: %w", path, err)
	}
	// SQLite has one writer at a time; a few connections let reads run
	// beside it without piling up writers on the busy timeout.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	return db, nil
}

// isMemory reports a DSN for a memory database, which lives only as long
// as its connection.
func isMemory(dsn string) bool {
	return dsn == ":memory:" || strings.HasPrefix(dsn, "file::memory:") ||
		strings.HasPrefix(dsn, "file:") && strings.Contains(dsn, "mode=memory")
}

// withParams appends query parameters to a DSN that may have some.
func withParams(dsn, params string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// DB is the underlying handle, for tests and tools.
func (s *Store) DB() *sql.DB { return s.db }

// Dialect is MySQL or SQLite.
func (s *Store) Dialect() string { return s.dialect }

// Close closes the database handle.
func (s *Store) Close() error { return s.db.Close() }

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inTx runs fn in a transaction, committing when it returns nil. A MySQL
// deadlock or lock-wait timeout rolls the whole transaction back, and fn
// is run again (at most three tries): the batch writers (TouchKeys,
// SaveUsage) are background flushes that should not lose a batch to one.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	for try := 1; ; try++ {
		err := s.tx(ctx, fn)
		if err == nil || try == 3 || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try*try) * 10 * time.Millisecond):
		}
	}
}

// MySQL errors after which a transaction may simply be tried again.
const (
	myLockWaitTimeout = 1205
	myDeadlock        = 1213
)

func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == myDeadlock || me.Number == myLockWaitTimeout)
}

func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", markUnavailable(err))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return markUnavailable(err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", markUnavailable(err))
	}
	return nil
}

// Ping reports whether the database answers now; its error wraps
// store.ErrUnavailable or is one store.Unavailable recognises when not.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping the %s store: %w", s.dialect, markUnavailable(err))
	}
	return nil
}

// MySQL and MariaDB error numbers that mean "not now" rather than "not
// this": the call may succeed when retried shortly.
const (
	myTooManyConnections = 1040
	myServerShutdown     = 1053
	myQueryInterrupted   = 1317
	myConnectionKilled   = 1927 // MariaDB
)

// markUnavailable wraps err with store.ErrUnavailable when it means the
// database could not serve the call now: the driver's lost connection
// (which database/sql does not see as one once a statement was sent), a
// server shutting down or full, a lock wait or deadlock, SQLite busy or
// locked. Errors store.Unavailable recognises by themselves (refused
// connections, deadlines) are left as they are.
func markUnavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		return err
	}
	unavailable := errors.Is(err, mysql.ErrInvalidConn)
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case myTooManyConnections, myServerShutdown, myQueryInterrupted, myConnectionKilled, myLockWaitTimeout, myDeadlock:
			unavailable = true
		}
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary result code
		case sqliteBusy, sqliteLocked:
			unavailable = true
		}
	}
	if !unavailable {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// SQLite primary result codes for a database another connection holds.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// fail wraps err with what was being done, mapping a missing row to
// store.ErrNotFound and a unique or foreign-key violation to
// store.ErrConflict. The driver's text is kept out of conflicts: it can
// quote the colliding value (a key hash).
func fail(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	case isConflict(err):
		return fmt.Errorf("%s: %w", what, store.ErrConflict)
	}
	return fmt.Errorf("%s: %w", what, markUnavailable(err))
}

// MySQL error numbers and SQLite extended result codes that mean a
// unique key or a foreign key said no.
const (
	myDupEntry         = 1062
	myDupEntryWithKey  = 1586
	myRowIsReferenced  = 1451
	myNoReferencedRow  = 1452
	myRowIsReferenced0 = 1217
	myNoReferencedRow0 = 1216

	sqliteUnique     = 2067 // SQLITE_CONSTRAINT_UNIQUE
	sqlitePrimaryKey = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	sqliteForeignKey = 787  // SQLITE_CONSTRAINT_FOREIGNKEY
)

func isConflict(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case myDupEntry, myDupEntryWithKey, myRowIsReferenced, myNoReferencedRow, myRowIsReferenced0, myNoReferencedRow0:
			return true
		}
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqliteUnique, sqlitePrimaryKey, sqliteForeignKey:
			return true
		}
	}
	return false
}

// affected turns "no row changed" into store.ErrNotFound.
func affected(res sql.Result, err error, what string) error {
	if err != nil {
		return fail(err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fail(err, what)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}
