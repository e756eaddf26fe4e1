package audit

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// stateReader reads a request's row state (FINAL on ClickHouse: what a
// reader sees), "" when there is no row.
type stateReader func(t testing.TB, id string) string

func sqliteStates(db *sql.DB) stateReader {
	return func(t testing.TB, id string) string {
		var s string
		err := db.QueryRow(`SELECT state FROM requests WHERE request_id = ?`, id).Scan(&s)
		if err == sql.ErrNoRows {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func chStates(conn driver.Conn, database string) stateReader {
	return func(t testing.TB, id string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rows, err := conn.Query(ctx, "SELECT state FROM "+database+".requests FINAL WHERE request_id = ?", id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var s string
		n := 0
		for rows.Next() {
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n > 1 {
			t.Errorf("request %s: %d rows with FINAL, want 1", id, n)
		}
		return s
	}
}

// waitState waits until request id's row reads want.
func waitState(t testing.TB, read stateReader, id, want string) {
	t.Helper()
	var got string
	if !testutil.Poll(20*time.Second, func() bool { got = read(t, id); return got == want }) {
		t.Fatalf("request %s: state %q, want %q", id, got, want)
	}
}

// A request admitted and never finished (its process stopped first)
// reads started, then interrupted once the next process opens the
// spool; one started and finished reads finished, one that panicked
// panic; a finished request's started row never comes back.
func TestRecorder_Interrupted(t *testing.T) {
	for _, sinkName := range []string{"embedded", "clickhouse"} {
		t.Run(sinkName, func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Dir: dir, Content: true, FlushEvery: 20 * time.Millisecond, Log: testLog(t)}
			var read stateReader
			if sinkName == "clickhouse" {
				chs := testsvc.StartClickHouse(t)
				o.ClickHouse = chOptions(chs)
				conn := chs.Open(t)
				mctx, mcancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer mcancel()
				if err := MigrateClickHouse(mctx, conn, chs.Database); err != nil { // read before the first write
					t.Fatal(err)
				}
				read = chStates(conn, chs.Database)
			} else {
				o.EmbeddedPath = filepath.Join(t.TempDir(), "audit.db")
			}
			o.Replica = "gw-a"
			a, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if read == nil {
				read = sqliteStates(a.EmbeddedDB())
			}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan struct{})
			go func() { _ = a.Run(ctx); close(ran) }()
			t.Cleanup(func() { cancel(); <-ran; _ = a.Close(context.Background()) }) // on a failure
			waitRunning(t, a)
			inflight, done, panicked, later := testOutcome(1), testOutcome(2), testOutcome(3), testOutcome(4)
			a.Started(inflight)
			a.Started(done)
			a.Started(later)
			waitState(t, read, later.RequestID, RowStarted) // its own batch
			a.Observe(done)                                 // the same batch as its start, or the next
			panicked.Panicked, panicked.Status = true, 500
			a.Observe(panicked)
			a.Observe(later)
			waitState(t, read, done.RequestID, RowFinished)
			waitState(t, read, later.RequestID, RowFinished)
			waitState(t, read, panicked.RequestID, RowPanic)
			if got := read(t, inflight.RequestID); got != RowStarted {
				t.Fatalf("in flight: %q, want %q", got, RowStarted)
			}
			// The process goes away with the request still open.
			cancel()
			<-ran
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer ccancel()
			if err := a.Close(cctx); err != nil {
				t.Fatal(err)
			}

			o.Replica = "gw-b"
			b, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if sinkName == "embedded" {
				read = sqliteStates(b.EmbeddedDB())
			}
			start(t, b)
			waitState(t, read, inflight.RequestID, RowInterrupted)
			for id, want := range map[string]string{done.RequestID: RowFinished, later.RequestID: RowFinished, panicked.RequestID: RowPanic} {
				if got := read(t, id); got != want {
					t.Errorf("request %s after the restart: %q, want %q", id, got, want)
				}
			}
			// gw-b's own request, open when the marker is applied, is not
			// gw-a's: it stays started.
			b.Started(testOutcome(5))
			waitState(t, read, testOutcome(5).RequestID, RowStarted)
		})
	}
}

// Sent again after an unclear failure, a batch of started and finished
// events adds no row and leaves the finished one the row FINAL reads.
func TestClickHouseSink_MaybeSentStates(t *testing.T) {
	chs := testsvc.StartClickHouse(t)
	conn := chs.Open(t)
	s, err := newCHSink(chOptions(chs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var started, finished Event
	fillEvent(&started, testOutcome(1), "gw")
	fillEvent(&finished, testOutcome(1), "gw")
	started.State = RowStarted
	if err := s.write(ctx, []Event{started}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, []Event{finished}, true); err != nil { // the start is there, the finish not
		t.Fatal(err)
	}
	if err := s.write(ctx, []Event{started, finished}, true); err != nil { // both there
		t.Fatal(err)
	}
	if rows, _ := counts(t, conn, chs.Database); rows != 2 {
		t.Errorf("%d rows, want 2 (one started, one finished)", rows)
	}
	if got := chStates(conn, chs.Database)(t, started.RequestID); got != RowFinished {
		t.Errorf("FINAL reads %q, want %q", got, RowFinished)
	}
	// A request whose start was collapsed into its finish when first
	// sent, its start resent alone (a batch cut elsewhere): inserted
	// after the finish, it would be the row FINAL keeps.
	fillEvent(&started, testOutcome(2), "gw")
	fillEvent(&finished, testOutcome(2), "gw")
	started.State = RowStarted
	if err := s.write(ctx, []Event{finished}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, []Event{started}, true); err != nil {
		t.Fatal(err)
	}
	if got := chStates(conn, chs.Database)(t, started.RequestID); got != RowFinished {
		t.Errorf("a resent start over its finish: FINAL reads %q, want %q", got, RowFinished)
	}
}

// A batch holding a request's start and finish stores one row.
func TestCollapse(t *testing.T) {
	evs := []Event{
		{RequestID: "a", State: RowStarted}, {RequestID: "b", State: RowStarted},
		{State: RowInterruptMark}, {RequestID: "a", State: RowFinished}, {RequestID: "c", State: RowPanic},
	}
	got := collapse(evs)
	want := []string{"b/started", "/interrupt-mark", "a/finished", "c/panic"}
	if len(got) != len(want) {
		t.Fatalf("collapse: %d events, want %d", len(got), len(want))
	}
	for i := range got {
		if s := got[i].RequestID + "/" + got[i].State; s != want[i] {
			t.Errorf("event %d: %s, want %s", i, s, want[i])
		}
	}
}

// The analysts' views count unfinished rows apart: a started or
// interrupted request is not completed, and stays out of the latency
// figures; a request's started row, replaced by its finished one, is
// counted once.
func TestViews_UnfinishedRows(t *testing.T) {
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	ev := func(id, state string, status uint16) Event {
		return Event{RequestID: id, Time: at, Replica: "gw", User: "alice", Group: "staff", Model: "m", Backend: "b",
			Status: status, State: state, TotalUs: 1000, PromptTokens: 10}
	}
	conn, db := clickhouseWith(t, []Event{ev("done", RowStarted, 0)})
	insertClickHouse(t, conn, db, []Event{ev("done", RowFinished, 200), ev("open", RowStarted, 0), ev("cut", RowInterrupted, 0)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ApplyViews(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	var requests, completed, failed, inFlight, interrupted, latency, errs uint64
	if err := conn.QueryRow(ctx, "SELECT requests, completed, failed, in_flight, interrupted FROM "+db+".usage_daily").
		Scan(&requests, &completed, &failed, &inFlight, &interrupted); err != nil {
		t.Fatal(err)
	}
	if requests != 3 || completed != 1 || failed != 1 || inFlight != 1 || interrupted != 1 {
		t.Errorf("usage_daily: requests %d completed %d failed %d in_flight %d interrupted %d, want 3 1 1 1 1",
			requests, completed, failed, inFlight, interrupted)
	}
	if err := conn.QueryRow(ctx, "SELECT requests FROM "+db+".latency_daily").Scan(&latency); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT errors FROM "+db+".errors_daily").Scan(&errs); err != nil {
		t.Fatal(err)
	}
	if latency != 1 || errs != 1 {
		t.Errorf("latency_daily requests %d, errors_daily errors %d; want 1 and 1", latency, errs)
	}
	got := query(t, conn, namedQueries(t)["unfinished"])
	if len(got) != 2 || got[0]["state"] != RowInterrupted || got[1]["state"] != RowStarted {
		t.Errorf("queries.sql unfinished: %v, want an interrupted and a started row", got)
	}
}
