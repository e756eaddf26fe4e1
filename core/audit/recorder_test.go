package audit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/outcome"
)

// testOutcome is request i as the server would report it.
func testOutcome(i int) *outcome.Outcome {
	o := &outcome.Outcome{
		RequestID: fmt.Sprintf("req-%08d", i), Route: "chat", Kind: "chat", Dialect: "openai",
		Model: []string{"qwen3-8b", "llama3-70b"}[i%2], Stream: i%3 == 0,
		KeyID: "mr2_abcd", User: fmt.Sprintf("user%d", i%7), Group: "staff", UserID: int64(i%7 + 1),
		ClientIP: "10.0.0.7", UserAgent: "openai-go/1.0",
		Backend: "gpu1-vllm", Attempts: 1, Status: 200, FinishReason: "stop",
		Usage: outcome.Usage{Prompt: 12 + i%5, Completion: 40, Reasoning: 3, Cached: 2, Reported: i%4 != 0},
		Start: time.Now(), Duration: 250 * time.Millisecond, TTFT: 40 * time.Millisecond,
		BytesIn: 300, BytesOut: 2000, Chunks: 41,
		Request: []byte(`{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}]}`), Response: []byte(`data: {"id":"x"}`),
		Node: "gpu1", GPUs: "0,1", Decision: []byte(`{"chosen":"gpu1-vllm"}`),
	}
	for s := range o.Stages {
		o.Stages[s] = time.Duration(s+1) * time.Microsecond
	}
	return o
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testLog logs to t (warnings and up).
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func chOptions(c *testsvc.ClickHouse) *CHOptions {
	return &CHOptions{Addr: []string{c.Addr}, Database: c.Database, Username: "default", DialTimeout: 2 * time.Second}
}

// start runs r until the test ends (Close drains it first).
func start(t testing.TB, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		_ = r.Close(cctx)
		cancel()
		<-done
	})
}

// counts is (rows, distinct request ids) in the table, without FINAL:
// duplicates would show.
func counts(t testing.TB, conn driver.Conn, db string) (rows, ids uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.QueryRow(ctx, "SELECT count(), uniqExact(request_id) FROM "+db+".requests").Scan(&rows, &ids); err != nil {
		t.Fatalf("count rows: %v", err)
	}
	return rows, ids
}

// waitRows waits up to limit for n rows.
func waitRows(t testing.TB, conn driver.Conn, db string, n uint64, limit time.Duration) {
	t.Helper()
	var got uint64
	var err error
	if !testutil.Poll(limit, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = conn.QueryRow(ctx, "SELECT count() FROM "+db+".requests").Scan(&got)
		return err == nil && got >= n
	}) {
		t.Fatalf("%d rows after %v, want %d (last error: %v)", got, limit, n, err)
	}
}

// Rows reach ClickHouse within 5 s of Observe with the default flush
// interval, each field where it belongs.
func TestRecorderClickHouse(t *testing.T) {
	chs := testsvc.StartClickHouse(t)
	conn := chs.Open(t)
	r, err := New(Options{Dir: t.TempDir(), ClickHouse: chOptions(chs), Content: true, Replica: "gw-1", Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	o := testOutcome(1)
	o.Start = time.Date(2026, 5, 1, 10, 11, 12, 0, time.UTC)
	o.ResponseCut = true
	observed := time.Now()
	r.Observe(o)
	for i := 2; i <= 50; i++ {
		r.Observe(testOutcome(i))
	}
	// The migration runs on the first write; allow for it on a slow
	// machine, but the rows must come with the first flush (≤ 1 s).
	waitRows(t, conn, chs.Database, 50, 5*time.Second)
	t.Logf("50 rows visible %v after Observe", time.Since(observed).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := NewClickHouseSearcher(conn, chs.Database).Get(ctx, "req-00000001")
	if err != nil {
		t.Fatal(err)
	}
	want := Event{}
	fillEvent(&want, o, "gw-1")
	want.RequestBody, want.ResponseBody, want.ContentTruncated, want.Decision = string(o.Request), string(o.Response), true, string(o.Decision)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stored event:\n got %+v\nwant %+v", got, want)
	}
	if want.QueueUs != 6 || want.TTFTUs != 40000 || want.TotalUs != 250000 || want.TokensEstimated == o.Usage.Reported {
		t.Errorf("outcome mapping: %+v", want)
	}
	// The rows can be visible a moment before the batch is acknowledged.
	testutil.Poll(10*time.Second, func() bool { return r.Written() >= 50 }) // checked below
	if r.Lag() != 0 {
		t.Errorf("Lag %v with everything written", r.Lag())
	}
	if r.Written() != 50 || r.Spooled() != 50 || r.Pending() != 0 {
		t.Errorf("Written %d Spooled %d Pending %d, want 50 50 0", r.Written(), r.Spooled(), r.Pending())
	}
}

// ClickHouse goes down under load and comes back: every event arrives
// exactly once.
func TestRecorderClickHouseDown(t *testing.T) {
	chs := testsvc.StartPrivateClickHouse(t)
	conn := chs.Open(t)
	r, err := New(Options{Dir: t.TempDir(), ClickHouse: chOptions(chs), FlushEvery: 50 * time.Millisecond,
		BatchRows: 2000, Replica: "gw-1", Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{})
	go func() { _ = r.Run(ctx); close(ran) }()
	waitRunning(t, r)

	// A steady load: about 10,000 requests a second until told to stop.
	var produced atomic.Int64
	stopLoad := make(chan struct{})
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		for i := 0; ; i++ {
			select {
			case <-stopLoad:
				return
			default:
			}
			r.Observe(testOutcome(i))
			produced.Add(1)
			if i%100 == 99 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	waitRows(t, conn, chs.Database, 1, 10*time.Second) // some got through
	chs.Stop()
	atStop := produced.Load()
	time.Sleep(time.Second) // the load goes on while it is down
	duringDown := produced.Load() - atStop
	if duringDown == 0 || r.Pending() < duringDown {
		t.Errorf("%d events while ClickHouse was down, %d pending", duringDown, r.Pending())
	}
	chs.Start(t)
	time.Sleep(500 * time.Millisecond) // and after it is back
	close(stopLoad)
	<-loaded
	n := uint64(produced.Load())
	t.Logf("%d events, %d of them while ClickHouse was down", n, duringDown)
	waitRows(t, conn, chs.Database, n, 60*time.Second)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	<-ran
	rows, ids := counts(t, conn, chs.Database)
	if rows != n || ids != n {
		t.Fatalf("rows %d, distinct ids %d, want %d each", rows, ids, n)
	}
	if r.Dropped() != 0 || r.Written() != n {
		t.Errorf("Dropped %d Written %d", r.Dropped(), r.Written())
	}
}

// A batch sent twice (its first attempt's fate unknown) is stored once,
// rows with out-of-range times included.
func TestClickHouseSinkMaybeSent(t *testing.T) {
	chs := testsvc.StartClickHouse(t)
	conn := chs.Open(t)
	s, err := newCHSink(chOptions(chs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs := make([]Event, 5000)
	for i := range evs {
		fillEvent(&evs[i], testOutcome(i), "gw")
	}
	// Times DateTime cannot hold are clamped, not a failed batch.
	evs[0].Time, evs[1].Time = time.Time{}, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.write(ctx, evs[:3000], false); err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, evs, true); err != nil { // 3000 already there
		t.Fatal(err)
	}
	if rows, ids := counts(t, conn, chs.Database); rows != 5000 || ids != 5000 {
		t.Fatalf("rows %d, distinct ids %d, want 5000 each", rows, ids)
	}
	if err := s.write(ctx, evs, true); err != nil { // all there: nothing sent
		t.Fatal(err)
	}
	if rows, _ := counts(t, conn, chs.Database); rows != 5000 {
		t.Fatalf("rows %d after a full resend, want 5000", rows)
	}
}

// The embedded sink stores the same rows, once each, across segments
// and a restart; acknowledged segments are removed.
func TestRecorderEmbedded(t *testing.T) {
	dir, dbPath := t.TempDir(), filepath.Join(t.TempDir(), "audit.db")
	open := func() *Recorder {
		r, err := New(Options{Dir: dir, EmbeddedPath: dbPath, Content: true, MaxContentBytes: 10,
			FlushEvery: 20 * time.Millisecond, SegmentBytes: 4096, BatchRows: 100, Log: testLog(t)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := open()
	if _, err := New(Options{Dir: dir, EmbeddedPath: dbPath}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second recorder on the same spool: %v, want in use", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = r.Run(ctx); close(ran) }()
	waitRunning(t, r)
	for i := range 1000 {
		r.Observe(testOutcome(i))
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ran
	if r.Written() != 1000 {
		t.Fatalf("Written %d, want 1000", r.Written())
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*"+segExt))
	if len(segs) > 2 {
		t.Errorf("%d segments left after everything was acknowledged", len(segs))
	}
	// Not run: the next process starts with these spooled and sends them.
	r = open()
	for i := 1000; i < 1100; i++ {
		r.Observe(testOutcome(i))
	}
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	r = open()
	if r.Pending() != 100 {
		t.Errorf("Pending after restart %d, want 100", r.Pending())
	}
	start(t, r)
	r.Observe(testOutcome(7)) // a duplicate id: the primary key keeps one
	db, err := OpenEmbedded(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	testutil.Poll(10*time.Second, func() bool { // n is checked below
		if err := db.QueryRow("SELECT count(*) FROM requests").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1100 && r.Pending() == 0
	})
	if n != 1100 {
		t.Fatalf("%d rows, want 1100", n)
	}
	got, err := NewSQLiteSearcher(db).Get(context.Background(), "req-00000003")
	if err != nil {
		t.Fatal(err)
	}
	o := testOutcome(3)
	if got.Model != o.Model || got.PromptTokens != uint32(o.Usage.Prompt) || got.RequestBody != string(o.Request[:10]) ||
		!got.ContentTruncated || got.QueueUs != 6 || got.Decision != string(o.Decision) || got.User != o.User {
		t.Errorf("stored event %+v", got)
	}
}

// TestSpoolZeroedTail: a group commit writes into a tail of zeros
// written ahead of it (the file does not grow per commit); reopened, the
// spool reads that tail as the clean end it is, cuts it off without a
// word, and appends after the records.
func TestSpoolZeroedTail(t *testing.T) {
	dir := t.TempDir()
	sp, _, err := openSpool(dir, 64<<20, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	buf := spoolRecords(0, 2)
	if err := sp.appendRecords(buf); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(sp.segPath(0)); st.Size() != prealloc {
		t.Errorf("segment is %d bytes after one commit, want the %d of its zeroed tail", st.Size(), prealloc)
	}
	more := spoolRecords(2, 1)
	if err := sp.appendRecords(more); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(sp.segPath(0)); st.Size() != prealloc {
		t.Errorf("segment is %d bytes after a second commit, want %d still", st.Size(), prealloc)
	}
	sp.close()

	var logged strings.Builder
	sp, pending, err := openSpool(dir, 64<<20, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	if pending != 3 {
		t.Errorf("pending %d, want 3", pending)
	}
	if logged.Len() > 0 {
		t.Errorf("reopening a spool with a zeroed tail logged %q", logged.String())
	}
	if st, _ := os.Stat(sp.segPath(0)); st.Size() != int64(len(buf)+len(more)) {
		t.Errorf("segment is %d bytes after reopening, want %d", st.Size(), len(buf)+len(more))
	}
	if err := sp.appendRecords(spoolRecords(3, 1)); err != nil {
		t.Fatal(err)
	}
	evs, _, damaged, err := sp.readBatch(nil, 100, -1)
	if err != nil || damaged != 0 {
		t.Fatal(err, damaged)
	}
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.RequestID)
	}
	if want := "req-00000000 req-00000001 req-00000002 req-00000003"; strings.Join(ids, " ") != want {
		t.Errorf("read %v, want %s", ids, want)
	}
}

// spoolRecords frames n test events from i on.
func spoolRecords(i, n int) []byte {
	var buf []byte
	for k := i; k < i+n; k++ {
		at := len(buf)
		buf = append(buf, make([]byte, recHeader)...)
		var e Event
		fillEvent(&e, testOutcome(k), "gw")
		buf = appendEvent(buf, &e)
		frameRecord(buf, at)
	}
	return buf
}

// A record cut short by a crash is dropped on open; the records before
// it and those appended after are read.
func TestSpoolTornRecord(t *testing.T) {
	dir := t.TempDir()
	sp, _, err := openSpool(dir, 1<<20, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for i := range 3 {
		at := len(buf)
		buf = append(buf, make([]byte, recHeader)...)
		var e Event
		fillEvent(&e, testOutcome(i), "gw")
		buf = appendEvent(buf, &e)
		frameRecord(buf, at)
	}
	whole := len(buf)
	if err := sp.appendRecords(buf); err != nil {
		t.Fatal(err)
	}
	sp.close()
	// The crash: half of a fourth record, over the zeroed tail.
	f, err := os.OpenFile(sp.segPath(0), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(buf[:whole/3/2+recHeader], int64(whole))
	f.Close()

	sp, pending, err := openSpool(dir, 1<<20, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	if pending != 3 {
		t.Errorf("pending %d, want 3", pending)
	}
	if st, _ := os.Stat(sp.segPath(0)); st.Size() != int64(whole) {
		t.Errorf("segment is %d bytes after recovery, want %d", st.Size(), whole)
	}
	if err := sp.appendRecords(buf[:whole/3]); err != nil { // record 0 again
		t.Fatal(err)
	}
	evs, _, damaged, err := sp.readBatch(nil, 100, -1)
	if err != nil || damaged != 0 {
		t.Fatal(err, damaged)
	}
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.RequestID)
	}
	if want := "req-00000000 req-00000001 req-00000002 req-00000000"; strings.Join(ids, " ") != want {
		t.Errorf("read %v, want %s", ids, want)
	}
}

// A damaged record in the middle is skipped and counted, not fatal.
func TestSpoolDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	sp, _, err := openSpool(dir, 1<<20, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	var buf []byte
	var ends []int
	for i := range 3 {
		at := len(buf)
		buf = append(buf, make([]byte, recHeader)...)
		var e Event
		fillEvent(&e, testOutcome(i), "gw")
		buf = appendEvent(buf, &e)
		frameRecord(buf, at)
		ends = append(ends, len(buf))
	}
	buf[ends[0]+recHeader+3] ^= 0xff // inside record 1's payload
	if err := sp.appendRecords(buf); err != nil {
		t.Fatal(err)
	}
	evs, end, damaged, err := sp.readBatch(nil, 100, -1)
	if err != nil || damaged != 1 || len(evs) != 2 || end != int64(len(buf)) {
		t.Fatalf("read %d events, %d damaged, end %d, err %v", len(evs), damaged, end, err)
	}
	if evs[0].RequestID != "req-00000000" || evs[1].RequestID != "req-00000002" {
		t.Errorf("read %s, %s", evs[0].RequestID, evs[1].RequestID)
	}
}

// Observe never blocks: with nothing draining the queue it refuses past
// MaxQueue and returns at once; with the spool over its bound likewise.
func TestObserveNeverBlocks(t *testing.T) {
	// A sink that cannot be reached (nothing listens on a port just freed).
	down := &CHOptions{Addr: []string{"127.0.0.1:1"}, DialTimeout: 200 * time.Millisecond}
	r, err := New(Options{Dir: t.TempDir(), ClickHouse: down, MaxQueue: 100, MaxSpoolBytes: 64 << 10, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for i := range 1000 { // Run not started: nothing takes from the queue
			r.Observe(testOutcome(i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Observe blocked with the queue full")
	}
	if r.Dropped() != 900 || r.Pending() != 100 {
		t.Errorf("Dropped %d Pending %d, want 900 and 100", r.Dropped(), r.Pending())
	}

	// Now spool, with the sink down: the spool fills to its bound.
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = r.Run(ctx); close(ran) }()
	waitRunning(t, r)
	deadline := time.Now().Add(20 * time.Second)
	observed := uint64(1000)
	for i := 1000; r.SpoolBytes() < 64<<10; i++ {
		r.Observe(testOutcome(i))
		observed++
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool at %d bytes after 20s", r.SpoolBytes())
		}
	}
	// The last group commit: every event is spooled or dropped, and the
	// spool is full.
	if !testutil.Poll(10*time.Second, func() bool { return r.Spooled()+r.Dropped() >= observed && r.full.Load() }) {
		t.Fatalf("%d spooled and %d dropped of %d, spool full %v, after 10s", r.Spooled(), r.Dropped(), observed, r.full.Load())
	}
	before, spooled := r.Dropped(), r.Spooled()
	done = make(chan struct{})
	go func() {
		for i := range 1000 {
			r.Observe(testOutcome(100000 + i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Observe blocked with the spool full")
	}
	if r.Dropped()-before != 1000 || r.Spooled() != spooled {
		t.Errorf("spool full: %d more dropped (want 1000), %d more spooled (want 0)", r.Dropped()-before, r.Spooled()-spooled)
	}
	if r.Lag() <= 0 {
		t.Error("Lag is 0 with events pending")
	}
	cancel()
	<-ran
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	_ = r.Close(cctx)
}

func TestCodecRoundTrip(t *testing.T) {
	var e Event
	fillEvent(&e, testOutcome(5), "gw-2")
	e.RequestBody, e.ResponseBody, e.Decision, e.EnergyJ, e.ContentTruncated = "req\x00body", "résumé", "{}", 12.5, true
	e.Time = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	e.UserID = -3
	e.FairnessDelayUs, e.StreamPluginUs = 1500, 70
	b := appendEvent(nil, &e)
	var got Event
	if err := decodeEvent(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, e)
	}
	for cut := range len(b) - 1 {
		if err := decodeEvent(b[:cut], &got); err == nil {
			t.Fatalf("a record cut to %d bytes decoded", cut)
		}
	}
}

// Every column has a typed slice, in Columns order.
func TestCHColumns(t *testing.T) {
	var c chColumns
	c.fill([]Event{{RequestID: "a"}})
	v := c.values()
	if len(v) != len(Columns) {
		t.Fatalf("%d column values for %d columns", len(v), len(Columns))
	}
	if s, ok := v[0].([]string); !ok || s[0] != "a" {
		t.Errorf("request_id column %v", v[0])
	}
}

// After Close, Observe drops (counted) and Run refuses.
func TestRecorderAfterClose(t *testing.T) {
	r, err := New(Options{Dir: t.TempDir(), EmbeddedPath: filepath.Join(t.TempDir(), "audit.db"), Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Observe(testOutcome(1))
	if r.Dropped() != 1 || r.Pending() != 0 {
		t.Errorf("after Close: Dropped %d Pending %d, want 1 and 0", r.Dropped(), r.Pending())
	}
	if err := r.Run(context.Background()); err == nil {
		t.Error("Run after Close returned nil")
	}
	if err := r.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// waitRunning returns once r.Run has started: a Close before that leaves
// the events in the spool for the next start (nothing is lost) instead of
// writing them, which the tests that count writes do not expect.
func waitRunning(t testing.TB, r *Recorder) {
	t.Helper()
	testutil.WaitFor(t, "Run to start", 10*time.Second, r.running.Load)
}

// A batch of several insert blocks (chBlockRows) stores every row once,
// each with its own values: a block's columns are refilled, not appended
// to the previous block's.
func TestClickHouseSinkBlocks(t *testing.T) {
	chs := testsvc.StartClickHouse(t)
	conn := chs.Open(t)
	s, err := newCHSink(chOptions(chs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 2*chBlockRows + 17
	evs := make([]Event, n)
	for i := range evs {
		fillEvent(&evs[i], testOutcome(i), "gw")
		evs[i].RequestBody, evs[i].PromptTokens = fmt.Sprintf("body-%d", i), uint32(i)
	}
	if err := s.write(ctx, evs, false); err != nil {
		t.Fatal(err)
	}
	if rows, ids := counts(t, conn, chs.Database); rows != uint64(n) || ids != uint64(n) {
		t.Fatalf("rows %d, distinct ids %d, want %d each", rows, ids, n)
	}
	for _, i := range []int{0, chBlockRows - 1, chBlockRows, 2 * chBlockRows, n - 1} {
		var body string
		var tokens uint32
		if err := conn.QueryRow(ctx, "SELECT request_body, prompt_tokens FROM "+chs.Database+".requests WHERE request_id = ?",
			evs[i].RequestID).Scan(&body, &tokens); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if body != evs[i].RequestBody || tokens != uint32(i) {
			t.Errorf("row %d: body %q tokens %d, want %q %d", i, body, tokens, evs[i].RequestBody, i)
		}
	}
}
