package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A spool written by the release before the timings columns (format 1
// records, and format 2 for an event with an image: testdata, written
// by that release's recorder) replays into the sink, the new columns 0.
func TestSpoolFromEarlierRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	seg := "00000000000000000000.seg"
	b, err := os.ReadFile(filepath.Join("testdata", "spool-release1", seg))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, seg), b, 0o640); err != nil {
		t.Fatal(err)
	}
	var versions []byte
	for off := 0; off+recHeader <= len(b); {
		n := int(b[off]) | int(b[off+1])<<8 | int(b[off+2])<<16 | int(b[off+3])<<24
		versions = append(versions, b[off+recHeader])
		off += recHeader + n
	}
	if string(versions) != "\x01\x02" {
		t.Fatalf("fixture record formats %v, want [1 2]", versions)
	}
	db := filepath.Join(t.TempDir(), "audit.db")
	r, err := New(Options{Dir: dir, EmbeddedPath: db, Content: true, FlushEvery: 10 * time.Millisecond, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pending() != 2 {
		t.Fatalf("pending %d, want the fixture's 2", r.Pending())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go r.Run(ctx)
	for r.Written() < 2 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Written() != 2 || r.Damaged() != 0 {
		t.Fatalf("written %d, damaged %d; want 2, 0", r.Written(), r.Damaged())
	}
	sdb, err := OpenEmbedded(db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	s := NewSQLiteSearcher(sdb)
	for _, id := range []string{"req-00000001", "req-00000002"} {
		e, err := s.Get(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if e.FairnessDelayUs != 0 || e.StreamPluginUs != 0 || e.Model == "" || e.TotalUs != 250000 {
			t.Errorf("%s replayed as %+v", id, e)
		}
	}
	var blobs int
	if err := sdb.QueryRow("SELECT count(*) FROM blobs").Scan(&blobs); err != nil || blobs != 1 {
		t.Errorf("blobs %d (%v), want the format 2 record's 1", blobs, err)
	}
}

// A format 4 record with a bad state, or trailing bytes, is refused; a
// format 3 record (no state) reads as finished; a marker keeps its Until.
func TestCodecStateCorrupt(t *testing.T) {
	var e Event
	fillEvent(&e, testOutcome(1), "gw")
	e.State = RowStarted
	b := appendEvent(nil, &e)
	if b[0] != codecState {
		t.Fatalf("format %d, want %d", b[0], codecState)
	}
	var got Event
	if err := decodeEvent(b, &got); err != nil || got.State != RowStarted {
		t.Fatalf("decoded %q, %v; want %q", got.State, err, RowStarted)
	}
	if err := decodeEvent(append(b[:len(b):len(b)], 0), &got); err == nil {
		t.Error("a record with a trailing byte decoded")
	}
	bad := append([]byte{}, b...)
	bad[len(bad)-1] = byte(len(stateCodes)) // no such state
	if err := decodeEvent(bad, &got); err == nil {
		t.Error("a record with an unknown state decoded")
	}
	v3 := append([]byte{codecTimings}, b[1:len(b)-1]...) // format 3: no state byte
	if err := decodeEvent(v3, &got); err != nil || got.State != RowFinished {
		t.Errorf("format 3 decoded as %q, %v; want %q", got.State, err, RowFinished)
	}
	v3[len(v3)-1] = 5 // five blobs, none there
	if err := decodeEvent(v3, &got); err == nil {
		t.Error("a record claiming absent blobs decoded")
	}
	bad[0] = codecState + 1
	if err := decodeEvent(b[:0], &got); err == nil {
		t.Error("an empty record decoded")
	}
	if err := decodeEvent(bad, &got); err == nil {
		t.Error("a record of a later format decoded")
	}
	mark := Event{State: RowInterruptMark, Replica: "gw-old", Time: time.UnixMicro(1_700_000_000_000_000).UTC(),
		Until: time.UnixMicro(1_700_000_100_000_001).UTC()}
	if err := decodeEvent(appendEvent(nil, &mark), &got); err != nil || got.State != RowInterruptMark ||
		!got.Until.Equal(mark.Until) || got.Replica != "gw-old" || !got.Time.Equal(mark.Time) {
		t.Errorf("marker decoded as %+v, %v", got, err)
	}
}
