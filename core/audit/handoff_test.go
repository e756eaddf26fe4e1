package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// An event made asDecoded is what the spool gives back for it.
func TestAsDecoded(t *testing.T) {
	local := time.FixedZone("X", 3600)
	for i, mod := range []func(e *Event){
		func(e *Event) {},
		func(e *Event) { e.State = "" },
		func(e *Event) { e.State = RowStarted; e.Blobs = []Blob{} },
		func(e *Event) { e.State = RowPanic; e.Time = time.Date(2026, 3, 4, 5, 6, 7, 891234567, local) },
		func(e *Event) {
			e.State, e.Until = RowInterruptMark, time.Date(2026, 3, 4, 5, 6, 8, 1500, local)
		},
		func(e *Event) { e.Until = time.Now() }, // only a marker keeps it
		func(e *Event) { e.Blobs = []Blob{{SHA256: "ab", MediaType: "image/png", Data: "x"}}; e.State = "bogus" },
		func(e *Event) { e.Time = time.Time{} },
	} {
		var e Event
		fillEvent(&e, testOutcome(i), "gw")
		e.RequestBody, e.ResponseBody, e.Decision = "req", "resp", `{"chosen":"a"}`
		mod(&e)
		var want Event
		if err := decodeEvent(appendEvent(nil, &e), &want); err != nil {
			t.Fatal(err)
		}
		asDecoded(&e)
		if !reflect.DeepEqual(e, want) {
			t.Errorf("case %d:\n asDecoded %+v\n decoded   %+v", i, e, want)
		}
	}
}

func hoEvents(ids ...string) []Event {
	evs := make([]Event, len(ids))
	for i, id := range ids {
		evs[i].RequestID = id
	}
	return evs
}

func hoIDs(evs []Event) string {
	s := ""
	for _, e := range evs {
		s += e.RequestID
	}
	return s
}

func TestHandoff(t *testing.T) {
	var h handoff
	h.add(hoEvents("a", "b"), 100, []int64{110, 130})
	h.add(hoEvents("c"), 130, []int64{150})
	// A reader behind the held events reads from disk up to them.
	if out, _, limit, ok := h.take(nil, 40, 10, maxBatchBytes, math.MaxInt64); ok || len(out) != 0 || limit != 100 {
		t.Fatalf("behind: %v %d %v", hoIDs(out), limit, ok)
	}
	// At their start: up to max.
	out, end, _, ok := h.take(nil, 100, 2, maxBatchBytes, math.MaxInt64)
	if !ok || hoIDs(out) != "ab" || end != 130 {
		t.Fatalf("take 2: %q %d %v", hoIDs(out), end, ok)
	}
	out, end, _, ok = h.take(out, 130, 10, maxBatchBytes, math.MaxInt64)
	if !ok || hoIDs(out) != "c" || end != 150 {
		t.Fatalf("take the rest: %q %d %v", hoIDs(out), end, ok)
	}
	if out, _, limit, ok := h.take(out, 150, 10, maxBatchBytes, math.MaxInt64); ok || len(out) != 0 || limit != -1 {
		t.Fatalf("empty: %q %d %v", hoIDs(out), limit, ok)
	}
	// A commit that does not follow the held ones replaces them.
	h.add(hoEvents("d"), 150, []int64{160})
	h.add(hoEvents("e"), 170, []int64{180})
	if out, _, limit, ok := h.take(nil, 150, 10, maxBatchBytes, math.MaxInt64); ok || limit != 170 {
		t.Fatalf("after a gap: %q %d %v", hoIDs(out), limit, ok)
	}
	// A reader past some (it read them from disk) takes the rest.
	h.add(hoEvents("f", "g"), 180, []int64{190, 200})
	if out, end, _, ok := h.take(nil, 190, 10, maxBatchBytes, math.MaxInt64); !ok || hoIDs(out) != "g" || end != 200 {
		t.Fatalf("past some: %q %d %v", hoIDs(out), end, ok)
	}
	// The byte bound: a batch ends with the record that passes it.
	h.add(hoEvents("h", "i", "j"), 200, []int64{260, 320, 330})
	if out, end, _, ok := h.take(nil, 200, 10, 100, math.MaxInt64); !ok || hoIDs(out) != "hi" || end != 320 {
		t.Fatalf("bytes: %q %d %v", hoIDs(out), end, ok)
	}
	// Past maxHandoffBytes nothing is held; the next commit starts afresh.
	h.add(hoEvents("k"), 330, []int64{330 + maxHandoffBytes + 1})
	if out, _, limit, ok := h.take(nil, 320, 10, maxBatchBytes, math.MaxInt64); ok || limit != -1 {
		t.Fatalf("over the bound: %q %d %v", hoIDs(out), limit, ok)
	}
	if len(h.evs) != 0 {
		t.Fatalf("held %q after the over-large commit", hoIDs(h.evs))
	}
	h.add(hoEvents("l"), 330+maxHandoffBytes+1, []int64{340 + maxHandoffBytes})
	if out, _, _, ok := h.take(nil, 330+maxHandoffBytes+1, 10, maxBatchBytes, math.MaxInt64); !ok || hoIDs(out) != "l" {
		t.Fatalf("after the over-large commit: %q %v", hoIDs(out), ok)
	}
}

// TestHandoff_OnlyDurable: events are added when their group is written
// and taken only once the spool has flushed them.
func TestHandoff_OnlyDurable(t *testing.T) {
	var h handoff
	h.add(hoEvents("a", "b"), 100, []int64{110, 120})
	if out, end, limit, ok := h.take(nil, 100, 10, maxBatchBytes, 100); ok || len(out) != 0 || end != 100 || limit != 100 {
		t.Fatalf("nothing flushed: took %q end %d limit %d ok %v; want nothing, a read stopping at 100", hoIDs(out), end, limit, ok)
	}
	if out, end, _, ok := h.take(nil, 100, 10, maxBatchBytes, 115); !ok || hoIDs(out) != "a" || end != 110 {
		t.Fatalf("flushed to 115: took %q end %d ok %v; want a to 110", hoIDs(out), end, ok)
	}
	if out, end, _, ok := h.take(nil, 110, 10, maxBatchBytes, 120); !ok || hoIDs(out) != "b" || end != 120 {
		t.Fatalf("flushed to 120: took %q end %d ok %v; want b to 120", hoIDs(out), end, ok)
	}
}

// captureSink stores what it is given; it fails the first fail writes.
type captureSink struct {
	mu   sync.Mutex
	fail int
	evs  []Event
}

func (s *captureSink) write(_ context.Context, evs []Event, _ bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("sink down")
	}
	s.evs = append(s.evs, evs...)
	return nil
}

func (s *captureSink) close() error { return nil }

// The sink gets the same events whether they came through the handoff
// or back from disk: every event once, as the spool decodes it. Events a
// stopped recorder left unsent are read back from disk by the next one,
// which hands its own new events over in memory.
func TestRecorder_Handoff(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "audit.db")
	open := func(cs *captureSink) *Recorder {
		r, err := New(Options{Dir: dir, EmbeddedPath: db, Content: true, Log: testLog(t),
			FlushEvery: 20 * time.Millisecond, BatchRows: 50})
		if err != nil {
			t.Fatal(err)
		}
		r.sink = cs
		return r
	}
	wait := func(what string, f func() bool) {
		for deadline := time.Now().Add(20 * time.Second); !f(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	observe := func(r *Recorder, from, n int) {
		for i := from; i < from+n; i++ {
			r.Observe(testOutcome(i))
			if i%40 == 39 {
				time.Sleep(5 * time.Millisecond) // several group commits
			}
		}
	}
	// A recorder whose sink is down: everything stays in the spool.
	first := open(&captureSink{fail: 1 << 30})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = first.Run(ctx); close(ran) }()
	waitRunning(t, first)
	observe(first, 0, 200)
	wait("the first recorder's events in the spool", func() bool { return first.Spooled() == 200 })
	cancel()
	<-ran
	cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
	_ = first.Close(cctx)
	ccancel()

	cs := &captureSink{}
	r := open(cs)
	start(t, r)
	waitRunning(t, r)
	wait("the replay", func() bool { return r.Written() == 200 })
	if h := r.handed.Load(); h != 0 {
		t.Errorf("%d replayed events came through the handoff, not from disk", h)
	}
	observe(r, 200, 400)
	wait("the new events", func() bool { return r.Written() == 600 })
	if h := r.handed.Load(); h == 0 {
		t.Error("no new event came through the handoff")
	} else {
		t.Logf("%d of the 400 new events came through the handoff", h)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.evs) != 600 {
		t.Fatalf("the sink stored %d events, want 600", len(cs.evs))
	}
	for i, e := range cs.evs {
		var back Event
		if err := decodeEvent(appendEvent(nil, &e), &back); err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("event %d is not as the spool decodes it:\n got %+v\nwant %+v", i, e, back)
		}
		if want := fmt.Sprintf("req-%08d", i); e.RequestID != want || e.RequestBody == "" {
			t.Fatalf("event %d: %q (body %q), want %s", i, e.RequestID, e.RequestBody, want)
		}
	}
}
