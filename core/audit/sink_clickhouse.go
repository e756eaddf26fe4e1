package audit

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// CHOptions says how to reach ClickHouse (native protocol).
type CHOptions struct {
	Addr               []string // host:port of the native protocol (9000)
	Database           string   // default "mindrouter"
	Username, Password string
	DialTimeout        time.Duration // default 5s
}

// chSink writes batches with one columnar INSERT each.
type chSink struct {
	conn     driver.Conn
	db       string
	insert   string
	colList  string // the quoted column list
	migrated bool
	cols     chColumns
}

// blobColumns are the columns of db.blobs the writer fills.
const blobColumns = "(sha256, media_type, size, data, time, request_id)"

// DatabaseName is o's database, "mindrouter" when unset.
func (o *CHOptions) DatabaseName() string {
	if o.Database == "" {
		return "mindrouter"
	}
	return o.Database
}

// OpenClickHouse returns a connection pool to o's servers (native
// protocol, LZ4), as the recorder uses; the admin API's reader can share
// the options. It does not dial: the first query does.
func OpenClickHouse(o *CHOptions) (driver.Conn, error) {
	if !validDatabase.MatchString(o.DatabaseName()) {
		return nil, fmt.Errorf("audit: clickhouse database name %q: letters, digits and _ only", o.DatabaseName())
	}
	dial := o.DialTimeout
	if dial <= 0 {
		dial = 5 * time.Second
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr: o.Addr,
		// Queries name the database; "default" always exists, so a
		// connection works before the migration has created ours.
		Auth:        clickhouse.Auth{Database: "default", Username: o.Username, Password: o.Password},
		DialTimeout: dial,
		// LZ4 halves what crosses the network for text-heavy rows.
		Compression:  &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
		MaxOpenConns: 4,
	})
	if err != nil {
		return nil, fmt.Errorf("audit: clickhouse options: %w", err)
	}
	return conn, nil
}

func newCHSink(o *CHOptions) (*chSink, error) {
	db := o.DatabaseName()
	conn, err := OpenClickHouse(o)
	if err != nil {
		return nil, err
	}
	quoted := make([]string, len(Columns))
	for i, c := range Columns {
		quoted[i] = "`" + c + "`"
	}
	cols := strings.Join(quoted, ", ")
	return &chSink{conn: conn, db: db, colList: cols, insert: "INSERT INTO " + db + ".requests (" + cols + ")"}, nil
}

// write stores evs in order: rows with one insert per run between
// interruption markers, each marker applied after the rows before it.
func (s *chSink) write(ctx context.Context, evs []Event, maybeSent bool) error {
	if !s.migrated {
		if err := MigrateClickHouse(ctx, s.conn, s.db); err != nil {
			return err
		}
		// A migration may have dropped views to have them re-created
		// (0005): when ClickHouse was down at the gateway's start, this
		// is the first chance. Not a reason to hold the rows back.
		_ = ApplyViews(ctx, s.conn, s.db)
		s.migrated = true
	}
	for len(evs) > 0 {
		n := 0
		for n < len(evs) && evs[n].State != RowInterruptMark {
			n++
		}
		if n > 0 {
			if err := s.writeRows(ctx, evs[:n], maybeSent); err != nil {
				return err
			}
		}
		if n < len(evs) {
			if err := s.interrupt(ctx, &evs[n]); err != nil {
				return err
			}
			n++
		}
		evs = evs[n:]
	}
	return nil
}

// writeRows inserts evs (no markers), skipping, when maybeSent, the
// events already stored: a row of the same request in the same state, or
// for a started event any row of its request (a started row inserted
// after the finished one would replace it).
func (s *chSink) writeRows(ctx context.Context, evs []Event, maybeSent bool) error {
	if maybeSent {
		stored, err := s.stored(ctx, evs)
		if err != nil {
			return err
		}
		if len(stored) > 0 {
			kept := make([]Event, 0, len(evs))
			for i := range evs {
				states, ok := stored[evs[i].RequestID]
				if ok && (evs[i].State == RowStarted || strings.Contains(states, "|"+rowState(&evs[i])+"|")) {
					continue
				}
				kept = append(kept, evs[i])
			}
			evs = kept
		}
		if len(evs) == 0 {
			return nil
		}
	}
	// A request's blobs go first: a stored row's references resolve.
	if err := s.writeBlobs(ctx, evs); err != nil {
		return err
	}
	batch, err := s.conn.PrepareBatch(ctx, s.insert)
	if err != nil {
		return fmt.Errorf("audit: clickhouse prepare insert: %w", err)
	}
	defer batch.Close()
	// Blocks of chBlockRows, each flushed before the next is appended:
	// the driver's columns are built afresh for every batch and grow by
	// doubling (a quarter of the recorder's CPU was that growslice, in
	// the string columns the bodies fill); a flushed block's columns
	// keep their capacity, so only the first block grows them.
	for k := 0; k < len(evs); k += chBlockRows {
		s.cols.fill(evs[k:min(k+chBlockRows, len(evs))])
		for i, v := range s.cols.values() {
			if err := batch.Column(i).Append(v); err != nil {
				return fmt.Errorf("audit: clickhouse column %s: %w", Columns[i], err)
			}
		}
		if k+chBlockRows < len(evs) {
			if err := batch.Flush(); err != nil {
				return fmt.Errorf("audit: clickhouse insert %d rows: %w", len(evs), err)
			}
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("audit: clickhouse insert %d rows: %w", len(evs), err)
	}
	return nil
}

// chBlockRows is the rows of one block of an insert. All blocks of a
// batch are one INSERT, which the server squashes into parts of
// min_insert_block_size_rows; a batch that fails between two blocks is
// a batch of unknown fate like any other (maybeSent: the retry asks
// which request ids are stored).
const chBlockRows = 256

// writeBlobs stores the blobs of evs that the table does not hold yet
// (asking first, so that a re-sent batch or an image sent again adds no
// copy; ReplacingMergeTree on the hash removes any that slips through).
func (s *chSink) writeBlobs(ctx context.Context, evs []Event) error {
	type ref struct {
		b *Blob
		e *Event
	}
	var todo []ref
	seen := map[string]bool{}
	for i := range evs {
		for j := range evs[i].Blobs {
			b := &evs[i].Blobs[j]
			if !seen[b.SHA256] {
				seen[b.SHA256] = true
				todo = append(todo, ref{b, &evs[i]})
			}
		}
	}
	if len(todo) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString("SELECT sha256 FROM " + s.db + ".blobs WHERE sha256 IN (")
	for i, r := range todo {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(chString(r.b.SHA256))
	}
	q.WriteByte(')')
	rows, err := s.conn.Query(ctx, q.String())
	if err != nil {
		return fmt.Errorf("audit: clickhouse check for stored blobs: %w", err)
	}
	for rows.Next() {
		var sum string
		if err := rows.Scan(&sum); err != nil {
			rows.Close()
			return fmt.Errorf("audit: clickhouse check for stored blobs: %w", err)
		}
		seen[sum] = false
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("audit: clickhouse check for stored blobs: %w", err)
	}
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.db+".blobs "+blobColumns)
	if err != nil {
		return fmt.Errorf("audit: clickhouse prepare blob insert: %w", err)
	}
	defer batch.Close()
	n := 0
	for _, r := range todo {
		if !seen[r.b.SHA256] {
			continue // already stored
		}
		if err := batch.Append(r.b.SHA256, r.b.MediaType, uint64(len(r.b.Data)), r.b.Data, chTime(r.e.Time), r.e.RequestID); err != nil {
			return fmt.Errorf("audit: clickhouse blob row: %w", err)
		}
		n++
	}
	if n == 0 {
		return nil
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("audit: clickhouse insert %d blobs: %w", n, err)
	}
	return nil
}

// interrupt applies an interruption marker: every request of its replica
// in its time range whose only rows are started gets an interrupted row,
// inserted after them (so FINAL keeps it). Applied again it finds no such
// request: idempotent, as a replayed marker needs.
func (s *chSink) interrupt(ctx context.Context, m *Event) error {
	sel := make([]string, len(Columns))
	for i, c := range Columns {
		switch c {
		case "state":
			sel[i] = "'" + RowInterrupted + "'"
		case "error_code":
			sel[i] = "'interrupted'"
		case "error":
			sel[i] = "'the gateway stopped before the request finished'"
		default:
			sel[i] = "`" + c + "`"
		}
	}
	rng := fmt.Sprintf("replica = %s AND time >= toDateTime(%d) AND time < toDateTime(%d)",
		chString(m.Replica), chTime(m.Time).Unix(), chTime(m.Until).Unix()+1)
	q := "INSERT INTO " + s.db + ".requests (" + s.colList + ") SELECT " + strings.Join(sel, ", ") +
		" FROM " + s.db + ".requests WHERE " + rng + " AND state = 'started' AND request_id IN (SELECT request_id FROM " +
		s.db + ".requests WHERE " + rng + " GROUP BY request_id HAVING countIf(state != 'started') = 0) LIMIT 1 BY request_id"
	if err := s.conn.Exec(ctx, q); err != nil {
		return fmt.Errorf("audit: clickhouse mark %s's unfinished requests interrupted: %w", m.Replica, err)
	}
	return nil
}

// stored returns which of evs' request ids the table already holds, each
// with its rows' states ("|started|finished|"), looking only in their
// time range (partition pruning), a few thousand ids per query to stay
// under max_query_size.
func (s *chSink) stored(ctx context.Context, evs []Event) (map[string]string, error) {
	lo, hi := chTime(evs[0].Time), chTime(evs[0].Time)
	for i := range evs {
		lo, hi = minTime(lo, chTime(evs[i].Time)), maxTime(hi, chTime(evs[i].Time))
	}
	out := map[string]string{}
	const chunk = 2000
	for from := 0; from < len(evs); from += chunk {
		var q strings.Builder
		fmt.Fprintf(&q, "SELECT request_id, state FROM %s.requests WHERE time >= toDateTime(%d) AND time < toDateTime(%d) AND request_id IN (",
			s.db, lo.Unix(), hi.Unix()+1)
		for i, e := range evs[from:min(from+chunk, len(evs))] {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(chString(e.RequestID))
		}
		q.WriteByte(')')
		rows, err := s.conn.Query(ctx, q.String())
		if err != nil {
			return nil, fmt.Errorf("audit: clickhouse check for stored rows: %w", err)
		}
		for rows.Next() {
			var id, state string
			if err := rows.Scan(&id, &state); err != nil {
				rows.Close()
				return nil, fmt.Errorf("audit: clickhouse check for stored rows: %w", err)
			}
			if out[id] == "" {
				out[id] = "|"
			}
			out[id] += state + "|"
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("audit: clickhouse check for stored rows: %w", err)
		}
	}
	return out, nil
}

// chString quotes s as a ClickHouse string literal.
func chString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (s *chSink) close() error { return s.conn.Close() }

// chColumns are the batch's columns, reused from batch to batch.
type chColumns struct {
	str  [len(strCols)][]string
	u8   [len(u8Cols)][]uint8
	u32  [len(u32Cols)][]uint32
	u64  [2][]uint64
	time []time.Time
	i64  []int64
	u16  []uint16
	f64  []float64
}

// The columns by type, in Columns order within each type.
var (
	strCols = [...]string{"request_id", "replica", "user", "group", "key_id", "client_ip", "user_agent", "dialect", "route",
		"kind", "model", "backend", "node", "gpus", "error_code", "error", "finish_reason", "state", "request_body", "response_body", "decision"}
	u8Cols  = [...]string{"stream", "attempts", "client_gone", "tokens_estimated", "content_truncated"}
	u32Cols = [...]string{"prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens",
		"total_us", "auth_us", "limit_us", "read_us", "check_us", "decode_us", "queue_us", "encode_us", "backend_us", "respond_us", "ttft_us",
		"fairness_delay_us", "stream_plugin_us", "chunks"}
)

func (c *chColumns) fill(evs []Event) {
	for i := range c.str {
		c.str[i] = c.str[i][:0]
	}
	for i := range c.u8 {
		c.u8[i] = c.u8[i][:0]
	}
	for i := range c.u32 {
		c.u32[i] = c.u32[i][:0]
	}
	c.u64[0], c.u64[1] = c.u64[0][:0], c.u64[1][:0]
	c.time, c.i64, c.u16, c.f64 = c.time[:0], c.i64[:0], c.u16[:0], c.f64[:0]
	for i := range evs {
		e := &evs[i]
		for j, s := range [...]string{e.RequestID, e.Replica, e.User, e.Group, e.KeyID, e.ClientIP, e.UserAgent, e.Dialect, e.Route,
			e.Kind, e.Model, e.Backend, e.Node, e.GPUs, e.ErrorCode, e.Error, e.FinishReason, rowState(e), e.RequestBody, e.ResponseBody, e.Decision} {
			c.str[j] = append(c.str[j], s)
		}
		for j, v := range [...]uint8{b2u(e.Stream), e.Attempts, b2u(e.ClientGone), b2u(e.TokensEstimated), b2u(e.ContentTruncated)} {
			c.u8[j] = append(c.u8[j], v)
		}
		for j, v := range [...]uint32{e.PromptTokens, e.CompletionTokens, e.ReasoningTokens, e.CachedTokens,
			e.TotalUs, e.AuthUs, e.LimitUs, e.ReadUs, e.CheckUs, e.DecodeUs, e.QueueUs, e.EncodeUs, e.BackendUs, e.RespondUs, e.TTFTUs,
			e.FairnessDelayUs, e.StreamPluginUs, e.Chunks} {
			c.u32[j] = append(c.u32[j], v)
		}
		c.u64[0], c.u64[1] = append(c.u64[0], e.BytesIn), append(c.u64[1], e.BytesOut)
		c.time = append(c.time, chTime(e.Time))
		c.i64 = append(c.i64, e.UserID)
		c.u16 = append(c.u16, e.Status)
		c.f64 = append(c.f64, sanitizeFloat(e.EnergyJ))
	}
}

// values lists the column slices in Columns order.
func (c *chColumns) values() []any {
	out := make([]any, 0, len(Columns))
	si, ui, wi := 0, 0, 0
	for _, col := range Columns {
		switch col {
		case "time":
			out = append(out, c.time)
		case "user_id":
			out = append(out, c.i64)
		case "status":
			out = append(out, c.u16)
		case "energy_j":
			out = append(out, c.f64)
		case "bytes_in":
			out = append(out, c.u64[0])
		case "bytes_out":
			out = append(out, c.u64[1])
		default:
			switch {
			case si < len(strCols) && strCols[si] == col:
				out = append(out, c.str[si])
				si++
			case ui < len(u8Cols) && u8Cols[ui] == col:
				out = append(out, c.u8[ui])
				ui++
			case wi < len(u32Cols) && u32Cols[wi] == col:
				out = append(out, c.u32[wi])
				wi++
			default:
				panic("audit: column " + col + " has no type") // a test covers every column
			}
		}
	}
	return out
}

// DateTime's range (UTC): a time outside it would fail the whole batch
// (and every retry of it), so it is clamped.
var (
	chTimeMin = time.Unix(0, 0).UTC()
	chTimeMax = time.Date(2105, 12, 31, 0, 0, 0, 0, time.UTC)
)

func chTime(t time.Time) time.Time {
	if t.Before(chTimeMin) {
		return chTimeMin
	}
	if t.After(chTimeMax) {
		return chTimeMax
	}
	return t
}

func b2u(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

func sanitizeFloat(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
