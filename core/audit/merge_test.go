package audit

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// TestRecorder_FinishTakesQueuedAdmission: a request that finishes while
// its admission event still waits for the group commit is spooled once,
// as its finished event, in that event's place; a request still open is
// spooled as started, and one whose admission event was already
// committed gets a second record. Every row ends in its right state.
func TestRecorder_FinishTakesQueuedAdmission(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "audit.db")
	r, err := New(Options{Dir: dir, EmbeddedPath: db, Content: true, CommitDelay: time.Minute,
		FlushEvery: 20 * time.Millisecond, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{})
	go func() { _ = r.Run(ctx); close(ran) }()
	waitRunning(t, r)

	quick, open, slow := testOutcome(1), testOutcome(2), testOutcome(3)
	r.Started(quick)
	r.Started(open)
	r.Observe(quick) // its admission event is still queued (the linger is a minute)
	if n := r.Pending(); n != 2 {
		t.Fatalf("%d events pending, want 2 (the finished event took its admission event's place)", n)
	}
	// Fill the group so it commits now, with slow's admission event in it.
	r.Started(slow)
	for i := range commitGroup - 3 {
		r.Observe(testOutcome(100 + i))
	}
	testutil.WaitFor(t, "the group spooled", 10*time.Second, func() bool { return r.Spooled() >= commitGroup })
	if n := r.Spooled(); n != commitGroup {
		t.Fatalf("%d events spooled, want %d", n, commitGroup)
	}
	r.Observe(slow) // after its admission event's commit: a record of its own
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	<-ran
	if n := r.Spooled(); n != commitGroup+1 {
		t.Errorf("%d events spooled in all, want %d", n, commitGroup+1)
	}
	if r.Pending() != 0 || r.Dropped() != 0 {
		t.Errorf("pending %d, dropped %d after Close, want 0, 0", r.Pending(), r.Dropped())
	}
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	read := sqliteStates(sdb)
	for id, want := range map[string]string{quick.RequestID: RowFinished, open.RequestID: RowStarted, slow.RequestID: RowFinished} {
		if got := read(t, id); got != want {
			t.Errorf("request %s: %q, want %q", id, got, want)
		}
	}
}
