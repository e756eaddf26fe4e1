package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	_ "modernc.org/sqlite" // the embedded sink's driver
)

// OpenEmbedded opens (creating it if needed) the embedded sink's SQLite
// file, as the recorder writes it and the admin API reads it.
func OpenEmbedded(path string) (*sql.DB, error) {
	if path == "" {
		return nil, fmt.Errorf("audit: the embedded sink needs a file path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("audit: create directory for %s: %w", path, err)
	}
	if err := createEmbedded(path); err != nil {
		return nil, err
	}
	// temp_store(MEMORY): a multi-row insert with a conflict clause keeps
	// a statement journal, which SQLite otherwise writes to a temporary
	// file, page by page (16 % of the sink's CPU on a filled table, in
	// syscalls). cache_size: a 10,000-row batch's dirty pages and the
	// indexes' hot pages fit, so a transaction neither spills pages into
	// the WAL before its commit nor re-reads index pages (another 35 %);
	// it is a bound, taken only as used (BenchmarkSQLiteSinkIDs).
	// synchronous(FULL): the spool forgets a batch once the sink has it,
	// so the sink's commit must survive a power loss as the spool's
	// records do (NORMAL may roll the last commits back); it costs one
	// WAL fsync per batch, not per row.
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"+
		"&_pragma=temp_store(MEMORY)&_pragma=cache_size(-32768)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if _, err := db.Exec(sqliteTables); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: create the embedded sink's table in %s: %w", path, err)
	}
	if err := migrateSQLite(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: migrate the embedded sink in %s: %w", path, err)
	}
	if _, err := db.Exec(sqliteView); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: create the embedded sink's view in %s: %w", path, err)
	}
	return db, nil
}

// sqlitePageSize is the page size of an embedded sink file this creates.
// A row with content (a few KiB) fills most of a 4 KiB page alone, so
// SQLite's default wrote about a page, a WAL frame and a checkpoint copy
// per row; with 16 KiB pages a row with 2.3 KB of content costs 28 %
// less CPU (31-32 -> 22-24 cpu-µs a row, BenchmarkEventStages), rows
// without content the same (64 KiB pages were no better).
const sqlitePageSize = 16384

// createEmbedded creates the embedded sink's tables in a file that does
// not exist yet (or is empty) with sqlitePageSize pages: SQLite takes a
// page size only before the first table, and not in WAL mode, which
// OpenEmbedded's connections enter when they open (a page_size pragma in
// that DSN is ignored). A file that exists keeps its page size.
func createEmbedded(path string) error {
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("audit: embedded sink %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the pragma and the tables on one connection
	if _, err := db.Exec("PRAGMA page_size = " + strconv.Itoa(sqlitePageSize)); err != nil {
		return fmt.Errorf("audit: set the page size of %s: %w", path, err)
	}
	if _, err := db.Exec(sqliteSchema); err != nil {
		return fmt.Errorf("audit: create the embedded sink's table in %s: %w", path, err)
	}
	return nil
}

type sqliteSink struct {
	db    *sql.DB
	owned bool
	cols  string // the quoted column list
	set   string // the upsert's SET list: every column from excluded

	// conn is the connection the sink writes on, held out of db's pool
	// so that raw's statements stay valid; nil until the first write and
	// after a failed one (the next write takes a fresh connection).
	conn *sql.Conn
	raw  any // conn's driver connection, which stmts belong to
	// stmts[u][i] inserts sqliteRows[i] rows, prepared once on raw:
	// u = 0 with OR IGNORE, u = 1 with sqliteUpsert (see insert).
	stmts [2][len(sqliteRows)]driver.Stmt
	blob  driver.Stmt         // the blob insert
	args  []driver.NamedValue // the bound values, reused
	text  []byte              // a statement's time and cold texts, reused
	ends  []int               // where each of them ends in text

	// started holds the ids of the started rows this sink wrote whose
	// finished event has not come yet: a finished event in it takes the
	// upsert, any other the plain insert (insert). Only a hint: a wrong
	// answer costs time, never a row. Cleared when it reaches
	// sqliteStartedMax (rows of requests that never finish here).
	started      map[string]struct{}
	plain, upsrt []*Event // a batch's events by statement, reused
}

// sqliteStartedMax bounds sqliteSink.started: far more requests than a
// gateway holds in flight.
const sqliteStartedMax = 1 << 17

// sqliteRows are the row counts of the multi-row inserts a batch is cut
// into, largest first: one statement step per up to 64 rows instead of
// one per row (the per-statement overhead of the driver and of SQLite's
// VM was most of a row's cost), 49 × 64 parameters being well under
// SQLite's limit of 32766; the smaller ones take a batch's remainder in
// at most 9 more statements.
var sqliteRows = [...]int{64, 16, 4, 1}

func newSQLiteSink(db *sql.DB, owned bool) *sqliteSink {
	quoted := make([]string, 0, len(sqliteHot)+1)
	set := make([]string, 0, len(sqliteHot))
	for _, c := range sqliteHot {
		q := `"` + c[0] + `"`
		quoted = append(quoted, q)
		if c[0] != "request_id" {
			set = append(set, q+" = excluded."+q)
		}
	}
	quoted = append(quoted, "cold")
	set = append(set, "cold = excluded.cold")
	return &sqliteSink{db: db, owned: owned, cols: strings.Join(quoted, ", "), set: strings.Join(set, ", ")}
}

// sqliteUpsert is the conflict clause of every insert: a request's row
// is written at admission (RowStarted) and replaced by its finished one;
// a replayed event changes nothing (a started row over any row, a
// finished one over a finished one), so maybeSent needs no extra work.
const sqliteUpsert = ` ON CONFLICT ("request_id") DO UPDATE SET %s WHERE request_rows."state" = 'started' AND excluded."state" <> 'started'`

// sqliteBlobInsert stores a blob; a hash already there keeps its row
// and takes the later time: a blob's time is its latest reference, and
// the content retention (PruneEmbedded) keeps it while any kept body
// names it.
const sqliteBlobInsert = `INSERT INTO blobs (sha256, media_type, size, data, time, request_id) VALUES (?, ?, ?, ?, ?, ?)
 ON CONFLICT (sha256) DO UPDATE SET time = max(time, excluded.time)`

// write stores evs in one transaction (sqliteUpsert makes a replay
// harmless), applying each interruption marker after the rows before it.
//
// It drives the driver's connection directly (sql.Conn.Raw): through
// database/sql every statement converted and checked each of its 49 × 64
// arguments, and the driver watched a cancellable context with a
// goroutine and a progress handler per statement. Here the arguments are
// a reused []driver.NamedValue, the statements run under a context that
// is never done, and ctx is checked between statements (at most 64 rows
// apart) instead.
func (s *sqliteSink) write(ctx context.Context, evs []Event, _ bool) error {
	if s.conn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("audit: embedded sink: connection: %w", err)
		}
		s.conn = c
	}
	err := s.conn.Raw(func(dc any) error { return s.writeRaw(ctx, dc, evs) })
	if err != nil {
		// The connection's state is unknown: give it back (database/sql
		// discards it when the driver called it bad) and start afresh.
		_ = s.conn.Close()
		s.conn = nil
	}
	return err
}

// rawConn is what the sink needs of the driver's connection.
type rawConn interface {
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
}

func (s *sqliteSink) writeRaw(ctx context.Context, dc any, evs []Event) (err error) {
	c, ok := dc.(rawConn)
	if !ok {
		return fmt.Errorf("audit: embedded sink: driver connection %T lacks BeginTx, PrepareContext or ExecContext", dc)
	}
	if dc != s.raw {
		// Not reached (a failed write closes them with its connection);
		// statements of another connection are never used or closed here.
		s.stmts, s.blob, s.raw = [2][len(sqliteRows)]driver.Stmt{}, nil, dc
	}
	defer func() {
		if err != nil {
			s.closeStmts() // on a connection this write gives back
		}
	}()
	bg := context.Background() // never done: see write
	tx, err := c.BeginTx(bg, driver.TxOptions{})
	if err != nil {
		return fmt.Errorf("audit: embedded sink: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := s.writeBlobs(ctx, c, evs); err != nil {
		return err
	}
	for len(evs) > 0 {
		n := 0
		for n < len(evs) && evs[n].State != RowInterruptMark {
			n++
		}
		if err := s.insert(ctx, c, evs[:n]); err != nil {
			return err
		}
		if n < len(evs) {
			if err := s.interrupt(c, &evs[n]); err != nil {
				return err
			}
			n++
		}
		evs = evs[n:]
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("audit: embedded sink: commit: %w", err)
	}
	return nil
}

// stmt is the prepared insert of sqliteRows[i] rows, with the upsert
// clause when upsert is set.
func (s *sqliteSink) stmt(c rawConn, upsert bool, i int) (driver.Stmt, error) {
	u := 0
	if upsert {
		u = 1
	}
	if st := s.stmts[u][i]; st != nil {
		return st, nil
	}
	row := "(?" + strings.Repeat(", ?", len(sqliteHot)) + ")"
	q := "INSERT OR IGNORE INTO request_rows (" + s.cols + ") VALUES " + row + strings.Repeat(", "+row, sqliteRows[i]-1)
	if upsert {
		q = "INSERT INTO request_rows (" + s.cols + ") VALUES " + row + strings.Repeat(", "+row, sqliteRows[i]-1) +
			fmt.Sprintf(sqliteUpsert, s.set)
	}
	st, err := c.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, fmt.Errorf("audit: embedded sink: prepare insert: %w", err)
	}
	s.stmts[u][i] = st
	return st, nil
}

// interrupt applies an interruption marker: the rows its replica left
// started become interrupted.
func (s *sqliteSink) interrupt(c rawConn, m *Event) error {
	_, err := c.ExecContext(context.Background(), `UPDATE request_rows SET "state" = 'interrupted', "error_code" = 'interrupted',
 "error" = 'the gateway stopped before the request finished' WHERE "replica" = ? AND "state" = 'started' AND "time" >= ? AND "time" < ?`,
		[]driver.NamedValue{{Ordinal: 1, Value: m.Replica},
			{Ordinal: 2, Value: m.Time.UTC().Format(sqliteTimeLayout)}, {Ordinal: 3, Value: m.Until.UTC().Format(sqliteTimeLayout)}})
	if err != nil {
		return fmt.Errorf("audit: embedded sink: mark %s's unfinished requests interrupted: %w", m.Replica, err)
	}
	return nil
}

// insert writes evs (no markers) with multi-row statements.
//
// Most rows are new: a short request's finished event took its admission
// event's place before the spool, or met it in the batch (collapse); a
// started row is new, or else changes nothing. Those go in with INSERT OR
// IGNORE. Only a finished event whose started row is already stored
// needs sqliteUpsert, and a multi-row statement with a DO UPDATE that
// may abort keeps a statement journal: SQLite copies every page the
// statement changes into it first (16 % of the recorder's CPU, its
// mallocs and copies, BenchmarkRecorderCost). Which finished events
// have a stored started row the sink knows from started; where it does
// not (the row was written before a restart, or the hint was cleared),
// the plain insert ignores the row and reports fewer rows changed, and
// the chunk's finished events are written again with the upsert, which
// leaves those the insert did store as they are. So each row ends as
// sqliteUpsert alone would leave it, in any order (a started row never
// replaces a row; a finished one replaces only a started one).
func (s *sqliteSink) insert(ctx context.Context, c rawConn, evs []Event) error {
	plain, upsrt := s.plain[:0], s.upsrt[:0]
	for i := range evs {
		e := &evs[i]
		if e.State != RowStarted {
			if _, ok := s.started[e.RequestID]; ok {
				delete(s.started, e.RequestID)
				upsrt = append(upsrt, e)
				continue
			}
		}
		plain = append(plain, e)
	}
	defer func() {
		clear(plain)
		clear(upsrt)
		s.plain, s.upsrt = plain[:0], upsrt[:0]
	}()
	again, err := s.rows(ctx, c, false, plain)
	if err != nil {
		return err
	}
	if _, err := s.rows(ctx, c, true, append(upsrt, again...)); err != nil {
		return err
	}
	for _, e := range plain {
		if e.State == RowStarted && e.RequestID != "" {
			if s.started == nil || len(s.started) >= sqliteStartedMax {
				s.started = make(map[string]struct{}, 1024)
			}
			s.started[e.RequestID] = struct{}{}
		}
	}
	return nil
}

// rows inserts evs, with sqliteUpsert when upsert is set. Without it,
// again holds the finished events of each statement that stored fewer
// rows than it had (see insert).
func (s *sqliteSink) rows(ctx context.Context, c rawConn, upsert bool, evs []*Event) (again []*Event, err error) {
	for k := 0; k < len(evs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		i := 0
		for sqliteRows[i] > len(evs)-k {
			i++
		}
		n := sqliteRows[i]
		st, err := s.stmt(c, upsert, i)
		if err != nil {
			return nil, err
		}
		// Each row's time and cold texts go into one buffer, made one
		// string: one allocation a statement instead of two a row.
		b, ends := s.text[:0], s.ends[:0]
		for _, e := range evs[k : k+n] {
			b = e.Time.UTC().AppendFormat(b, sqliteTimeLayout)
			ends = append(ends, len(b))
			b = appendCold(b, e)
			ends = append(ends, len(b))
		}
		s.text, s.ends = b, ends
		text := string(b)
		a, from := s.args[:0], 0
		for j, e := range evs[k : k+n] {
			t, c := ends[2*j], ends[2*j+1]
			a = appendSQLiteRow(a, e, text[from:t], text[t:c])
			from = c
		}
		s.args = a
		res, err := st.(driver.StmtExecContext).ExecContext(context.Background(), a)
		for j := range a {
			a[j].Value = nil // drop the strings
		}
		if err != nil {
			return nil, fmt.Errorf("audit: embedded sink: insert: %w", err)
		}
		if !upsert {
			stored, err := res.RowsAffected()
			if err != nil {
				return nil, fmt.Errorf("audit: embedded sink: rows inserted: %w", err)
			}
			if stored < int64(n) {
				for _, e := range evs[k : k+n] {
					if e.State != RowStarted {
						again = append(again, e)
					}
				}
			}
		}
		k += n
	}
	return again, nil
}

// appendSQLiteRow appends the values of e's row in request_rows (its
// time and cold texts made by the caller), numbered on from len(a).
func appendSQLiteRow(a []driver.NamedValue, e *Event, time, cold string) []driver.NamedValue {
	for _, v := range [...]any{e.RequestID, time, e.Replica,
		e.UserID, e.User, e.Group, e.Model, int64(e.Status), e.ErrorCode, e.Error, rowState(e),
		int64(e.PromptTokens), int64(e.CompletionTokens),
		e.RequestBody, e.ResponseBody, e.ContentTruncated, e.Decision, sanitizeFloat(e.EnergyJ), cold} {
		a = append(a, driver.NamedValue{Ordinal: len(a) + 1, Value: v})
	}
	return a
}

// writeBlobs stores evs' blobs; a hash already there is skipped.
func (s *sqliteSink) writeBlobs(ctx context.Context, c rawConn, evs []Event) error {
	for i := range evs {
		e := &evs[i]
		for j := range e.Blobs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.blob == nil {
				st, err := c.PrepareContext(context.Background(), sqliteBlobInsert)
				if err != nil {
					return fmt.Errorf("audit: embedded sink: prepare blob insert: %w", err)
				}
				s.blob = st
			}
			b := &e.Blobs[j]
			if _, err := s.blob.(driver.StmtExecContext).ExecContext(context.Background(), []driver.NamedValue{
				{Ordinal: 1, Value: b.SHA256}, {Ordinal: 2, Value: b.MediaType}, {Ordinal: 3, Value: int64(len(b.Data))},
				{Ordinal: 4, Value: []byte(b.Data)}, {Ordinal: 5, Value: e.Time.UTC().Format(sqliteTimeLayout)}, {Ordinal: 6, Value: e.RequestID},
			}); err != nil {
				return fmt.Errorf("audit: embedded sink: insert blob: %w", err)
			}
		}
	}
	return nil
}

// closeStmts closes the statements prepared on s.raw (inside Raw).
func (s *sqliteSink) closeStmts() {
	for u := range s.stmts {
		for i, st := range s.stmts[u] {
			if st != nil {
				_ = st.Close()
				s.stmts[u][i] = nil
			}
		}
	}
	if s.blob != nil {
		_ = s.blob.Close()
		s.blob = nil
	}
	s.raw = nil
}

func (s *sqliteSink) close() error {
	var err error
	if s.conn != nil {
		err = s.conn.Raw(func(any) error { s.closeStmts(); return nil })
		err = errors.Join(err, s.conn.Close())
		s.conn = nil
	}
	if s.owned {
		return errors.Join(err, s.db.Close())
	}
	return err
}
