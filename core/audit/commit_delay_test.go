package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// TestCommitDelay: woken to a small group, the spool goroutine lingers
// (here for a minute, so that no scheduling delay can end it) instead of
// committing at once; the group reaching commitGroup events ends the
// linger with one commit for them all, and Close ends it too without
// losing the events still queued.
func TestCommitDelay(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "audit.db")
	r, err := New(Options{Dir: dir, EmbeddedPath: db, CommitDelay: time.Minute, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{})
	go func() { _ = r.Run(ctx); close(ran) }()
	waitRunning(t, r)

	for i := range commitGroup - 1 {
		r.Observe(testOutcome(i))
	}
	time.Sleep(50 * time.Millisecond) // time for a commit that should not happen
	if n := r.Spooled(); n != 0 {
		t.Fatalf("%d events spooled while lingering, want 0", n)
	}
	r.Observe(testOutcome(commitGroup - 1)) // the group is full: commit now
	testutil.WaitFor(t, "the full group spooled", 10*time.Second, func() bool { return r.Spooled() >= commitGroup })
	testutil.WaitFor(t, "the full group flushed", 10*time.Second, func() bool { return r.sp.commits.Load() >= 1 })
	time.Sleep(50 * time.Millisecond) // time for a second commit that should not happen
	if c := r.sp.commits.Load(); c != 1 {
		t.Errorf("%d group commits for one full group, want 1", c)
	}

	// A lone event lingers; Close spools it at once and drains it.
	r.Observe(testOutcome(commitGroup))
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	if cctx.Err() != nil {
		t.Fatal("Close waited out its context: the linger held it")
	}
	<-ran
	if r.Spooled() != commitGroup+1 || r.Written() != commitGroup+1 || r.Dropped() != 0 {
		t.Errorf("spooled %d, written %d, dropped %d; want %d, %d, 0", r.Spooled(), r.Written(), r.Dropped(), commitGroup+1, commitGroup+1)
	}
}

// TestCommitDelayCancel: a Run whose ctx ends while the spool goroutine
// lingers spools the lingering events before it returns (they stay for
// the next start), and a negative CommitDelay turns the linger off.
func TestCommitDelayCancel(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "audit.db")
	r, err := New(Options{Dir: dir, EmbeddedPath: db, CommitDelay: time.Minute, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = r.Run(ctx); close(ran) }()
	waitRunning(t, r)
	r.Observe(testOutcome(1))
	cancel()
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return 20 s after its ctx ended: the linger held it")
	}
	if r.Spooled() != 1 {
		t.Fatalf("%d spooled after Run returned, want 1", r.Spooled())
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The next start, without the linger (CommitDelay < 0) and flushing
	// every group (SyncEvery < 0): it replays the spooled event, and
	// commits each lone event by itself.
	r, err = New(Options{Dir: dir, EmbeddedPath: db, CommitDelay: -1, SyncEvery: -1, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitRunning(t, r)
	for i := range 3 {
		r.Observe(testOutcome(10 + i))
		// Spooled counts an event once written, commits once flushed: wait
		// for the flush too, or the next event could join its group.
		testutil.WaitFor(t, fmt.Sprintf("event %d committed with no commit delay", i), 10*time.Second, func() bool {
			return r.Spooled() >= uint64(i+1) && r.sp.commits.Load() >= uint64(i+1)
		})
	}
	if c := r.sp.commits.Load(); c != 3 {
		t.Errorf("%d commits for 3 lone events without a delay, want 3", c)
	}
	testutil.WaitFor(t, "4 written (1 replayed, 3 new)", 20*time.Second, func() bool { return r.Written() >= 4 })
}

// TestSyncEvery: groups are written at once and flushed at most every
// SyncEvery. Written but unflushed, events are in the spool's file (a kill
// of the process cannot lose them) but not yet the sink's to read; Close
// flushes them and the sink stores each once.
func TestSyncEvery(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "audit.db")
	r, err := New(Options{Dir: dir, EmbeddedPath: db, CommitDelay: -1, SyncEvery: time.Hour, FlushEvery: 10 * time.Millisecond, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{})
	go func() { _ = r.Run(ctx); close(ran) }()
	waitRunning(t, r)

	// The first group flushes at once (no flush yet within SyncEvery).
	r.Observe(testOutcome(0))
	testutil.WaitFor(t, "the first event flushed and stored", 10*time.Second, func() bool { return r.Written() >= 1 })
	for i := 1; i <= 5; i++ {
		r.Observe(testOutcome(i))
		testutil.WaitFor(t, fmt.Sprintf("event %d written", i), 10*time.Second, func() bool { return r.Spooled() >= uint64(i+1) })
	}
	time.Sleep(100 * time.Millisecond) // ten sink ticks
	if c := r.sp.commits.Load(); c != 1 {
		t.Errorf("%d flushes, want 1 (the others wait for SyncEvery)", c)
	}
	if w := r.Written(); w != 1 {
		t.Errorf("%d events in the sink before their flush, want 1", w)
	}
	var onDisk []string
	if err := ScanSpool(dir, func(e *Event) { onDisk = append(onDisk, e.RequestID) }); err != nil {
		t.Fatal(err)
	}
	if len(onDisk) != 6 {
		t.Errorf("the spool's files hold %d events (%v), want 6: written groups survive a kill", len(onDisk), onDisk)
	}

	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	<-ran
	if r.Written() != 6 || r.Dropped() != 0 {
		t.Errorf("written %d, dropped %d after Close; want 6, 0", r.Written(), r.Dropped())
	}
}

// TestSpoolRewriteAfterFailedFlush: after a failed flush the spool writes
// its unflushed records again, at their offsets, before anything else (a
// failed fdatasync may have dropped the dirty pages); what a reader and a
// reopen see is every record once, in order.
func TestSpoolRewriteAfterFailedFlush(t *testing.T) {
	dir := t.TempDir()
	sp, _, err := openSpool(dir, 64<<20, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.appendRecords(spoolRecords(0, 2)); err != nil {
		t.Fatal(err)
	}
	flushed := sp.durable.Load()
	if err := sp.writeRecords(spoolRecords(2, 2)); err != nil {
		t.Fatal(err)
	}
	if sp.durable.Load() != flushed {
		t.Fatal("durable moved without a flush")
	}
	// What a failed fdatasync leaves: the pages may be gone (zero them
	// here) and the spool marked to write them again.
	if _, err := sp.w.WriteAt(make([]byte, sp.unsyncedBytes()), flushed-sp.wStart); err != nil {
		t.Fatal(err)
	}
	sp.redo = true
	if err := sp.writeRecords(spoolRecords(4, 1)); err != nil {
		t.Fatal(err)
	}
	if err := sp.sync(); err != nil {
		t.Fatal(err)
	}
	sp.close()
	var ids []string
	if err := ScanSpool(dir, func(e *Event) { ids = append(ids, e.RequestID) }); err != nil {
		t.Fatal(err)
	}
	var want []string
	for k := range 5 {
		var e Event
		fillEvent(&e, testOutcome(k), "gw")
		want = append(want, e.RequestID)
	}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("spool holds %v, want %v", ids, want)
	}
}

// TestCommitPolling: once the spool goroutine has had events it polls the
// queue every CommitDelay, so the event that starts a later group does not
// wake it (no send on wake from the request's path); after pollIdle empty
// polls it stops, and the next event wakes it again. Every event is
// spooled either way.
func TestCommitPolling(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "audit.db")
	// pollIdle polls of 25 ms: the test has 250 ms between groups before
	// polling ends, room for a loaded machine's scheduling.
	const delay = 25 * time.Millisecond
	r, err := New(Options{Dir: dir, EmbeddedPath: db, CommitDelay: delay, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{})
	go func() { _ = r.Run(ctx); close(ran) }()
	waitRunning(t, r)

	r.Observe(testOutcome(0))
	testutil.WaitFor(t, "the first event spooled", 10*time.Second, func() bool { return r.Spooled() >= 1 })
	if w := r.wakes.Load(); w != 1 {
		t.Fatalf("%d wakes for the first event, want 1", w)
	}
	// Five more groups, each started after the last was spooled, while
	// the goroutine polls: no wake.
	for i := 1; i <= 5; i++ {
		r.Observe(testOutcome(i))
		testutil.WaitFor(t, "a polled event spooled", 10*time.Second, func() bool { return r.Spooled() >= uint64(i+1) })
	}
	if w := r.wakes.Load(); w != 1 {
		t.Errorf("%d wakes after five polled groups, want still 1", w)
	}
	testutil.WaitFor(t, "polling to end when idle", 10*time.Second, func() bool { return !r.polling.Load() })
	r.Observe(testOutcome(6))
	testutil.WaitFor(t, "the event after idling spooled", 10*time.Second, func() bool { return r.Spooled() >= 7 })
	if w := r.wakes.Load(); w != 2 {
		t.Errorf("%d wakes after idling, want 2", w)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	<-ran
	if r.Spooled() != 7 || r.Dropped() != 0 {
		t.Errorf("spooled %d, dropped %d; want 7, 0", r.Spooled(), r.Dropped())
	}
}
