package audit

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the embedded sink's driver
)

// sqliteSchema is the embedded sink's tables: requests, Event's columns with the
// same names as in ClickHouse, time as UTC text in sqliteTimeLayout, one
// row per request id (the primary key makes a replayed batch harmless);
// and blobs, as in ClickHouse (schema/0002_blobs.sql), one per hash.
const sqliteSchema = `CREATE TABLE IF NOT EXISTS requests (
 request_id TEXT PRIMARY KEY, time TEXT NOT NULL, replica TEXT NOT NULL,
 user_id INTEGER NOT NULL, user TEXT NOT NULL, "group" TEXT NOT NULL, key_id TEXT NOT NULL, client_ip TEXT NOT NULL, user_agent TEXT NOT NULL,
 dialect TEXT NOT NULL, route TEXT NOT NULL, kind TEXT NOT NULL, model TEXT NOT NULL, stream INTEGER NOT NULL,
 backend TEXT NOT NULL, node TEXT NOT NULL, gpus TEXT NOT NULL, attempts INTEGER NOT NULL,
 status INTEGER NOT NULL, error_code TEXT NOT NULL, error TEXT NOT NULL, finish_reason TEXT NOT NULL, client_gone INTEGER NOT NULL,
 prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, tokens_estimated INTEGER NOT NULL,
 total_us INTEGER NOT NULL, auth_us INTEGER NOT NULL, limit_us INTEGER NOT NULL, read_us INTEGER NOT NULL, check_us INTEGER NOT NULL, decode_us INTEGER NOT NULL, queue_us INTEGER NOT NULL, encode_us INTEGER NOT NULL, backend_us INTEGER NOT NULL, respond_us INTEGER NOT NULL, ttft_us INTEGER NOT NULL,
 chunks INTEGER NOT NULL, bytes_in INTEGER NOT NULL, bytes_out INTEGER NOT NULL,
 request_body TEXT NOT NULL, response_body TEXT NOT NULL, content_truncated INTEGER NOT NULL,
 decision TEXT NOT NULL, energy_j REAL NOT NULL);
CREATE INDEX IF NOT EXISTS requests_time ON requests (time);
CREATE INDEX IF NOT EXISTS requests_user_time ON requests (user, time);
CREATE INDEX IF NOT EXISTS requests_model_time ON requests (model, time);
CREATE TABLE IF NOT EXISTS blobs (
 sha256 TEXT PRIMARY KEY, media_type TEXT NOT NULL, size INTEGER NOT NULL, data BLOB NOT NULL,
 time TEXT NOT NULL, request_id TEXT NOT NULL)`

// OpenEmbedded opens (creating it if needed) the embedded sink's SQLite
// file, as the recorder writes it and the admin API reads it.
func OpenEmbedded(path string) (*sql.DB, error) {
	if path == "" {
		return nil, fmt.Errorf("audit: the embedded sink needs a file path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("audit: create directory for %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if _, err := db.Exec(sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: create the embedded sink's table in %s: %w", path, err)
	}
	return db, nil
}

type sqliteSink struct {
	db     *sql.DB
	owned  bool
	insert string
	args   []any
}

func newSQLiteSink(db *sql.DB, owned bool) *sqliteSink {
	quoted := make([]string, len(Columns))
	for i, c := range Columns {
		quoted[i] = `"` + c + `"`
	}
	return &sqliteSink{db: db, owned: owned, args: make([]any, len(Columns)),
		insert: "INSERT OR IGNORE INTO requests (" + strings.Join(quoted, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(Columns)-1) + ")"}
}

// write stores evs in one transaction; the primary key skips ids already
// there, so maybeSent needs no extra work.
func (s *sqliteSink) write(ctx context.Context, evs []Event, _ bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("audit: embedded sink: begin: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, s.insert)
	if err != nil {
		return fmt.Errorf("audit: embedded sink: prepare insert: %w", err)
	}
	defer st.Close()
	if err := s.writeBlobs(ctx, tx, evs); err != nil {
		return err
	}
	for i := range evs {
		e := &evs[i]
		a := s.args
		a[0], a[1], a[2] = e.RequestID, e.Time.UTC().Format(sqliteTimeLayout), e.Replica
		a[3], a[4], a[5], a[6], a[7], a[8] = e.UserID, e.User, e.Group, e.KeyID, e.ClientIP, e.UserAgent
		a[9], a[10], a[11], a[12], a[13] = e.Dialect, e.Route, e.Kind, e.Model, e.Stream
		a[14], a[15], a[16], a[17] = e.Backend, e.Node, e.GPUs, int64(e.Attempts)
		a[18], a[19], a[20], a[21], a[22] = int64(e.Status), e.ErrorCode, e.Error, e.FinishReason, e.ClientGone
		a[23], a[24], a[25], a[26], a[27] = int64(e.PromptTokens), int64(e.CompletionTokens), int64(e.ReasoningTokens), int64(e.CachedTokens), e.TokensEstimated
		for j, v := range [...]uint32{e.TotalUs, e.AuthUs, e.LimitUs, e.ReadUs, e.CheckUs, e.DecodeUs, e.QueueUs, e.EncodeUs, e.BackendUs, e.RespondUs, e.TTFTUs, e.Chunks} {
			a[28+j] = int64(v)
		}
		a[40], a[41] = int64(e.BytesIn), int64(e.BytesOut)
		a[42], a[43], a[44], a[45], a[46] = e.RequestBody, e.ResponseBody, e.ContentTruncated, e.Decision, sanitizeFloat(e.EnergyJ)
		if _, err := st.ExecContext(ctx, a...); err != nil {
			return fmt.Errorf("audit: embedded sink: insert: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("audit: embedded sink: commit: %w", err)
	}
	return nil
}

// writeBlobs stores evs' blobs in tx; a hash already there is skipped.
func (s *sqliteSink) writeBlobs(ctx context.Context, tx *sql.Tx, evs []Event) error {
	for i := range evs {
		e := &evs[i]
		for j := range e.Blobs {
			b := &e.Blobs[j]
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO blobs (sha256, media_type, size, data, time, request_id) VALUES (?, ?, ?, ?, ?, ?)`,
				b.SHA256, b.MediaType, len(b.Data), []byte(b.Data), e.Time.UTC().Format(sqliteTimeLayout), e.RequestID); err != nil {
				return fmt.Errorf("audit: embedded sink: insert blob: %w", err)
			}
		}
	}
	return nil
}

func (s *sqliteSink) close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}
