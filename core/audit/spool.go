package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The spool is the audit's write-ahead log: a directory of append-only
// segment files and a cursor file.
//
// Offsets are global: byte positions in the concatenation of every
// segment ever written. A segment's file is named by the offset of its
// first byte (20 digits, so names sort by offset). A record is a 4-byte
// little-endian payload length, the payload's CRC-32C, then the payload
// (an encoded Event); records never span segments.
//
// The cursor file holds two offsets: acked, up to which the sink has
// stored every record, and sending, the end of the batch being sent when
// it was written (so that after a crash the writer knows which records
// may already be in the sink and checks before resending them). It is
// replaced atomically (write, fsync, rename, fsync of the directory).
//
// One goroutine appends (group commit: one write per batch of events,
// writeRecords; one fdatasync for the batches written since the last,
// sync) and one reads what is flushed and acknowledges; they share only
// the atomics and the segment list.
//
// The segment being appended to is extended ahead of its records with
// zeros, prealloc bytes at a time (written and fsynced once), and each
// group commit overwrites part of that tail, and sync fdatasyncs: the file's
// size and blocks do not change, so the flush has no metadata to commit
// (an append's fsync commits the file system's journal every time; on
// the 2-vCPU VM of bench/RESULTS.md that was ≈ 30 % more CPU per
// commit). A zero length ends a segment's records, so the tail reads as
// the clean end it is; openSpool cuts it off.
type spool struct {
	dir      string
	segBytes int64
	log      *slog.Logger
	lock     *os.File

	mu   sync.Mutex
	segs []int64 // segment start offsets, ascending; the last is appended to

	durable atomic.Int64  // end of the records written and fsynced (end: written)
	acked   atomic.Int64  // end of the records the sink stored
	commits atomic.Uint64 // flushes (fdatasyncs of records) this process made

	// Appender only.
	w      *os.File
	wStart int64
	end    int64
	alloc  int64 // bytes of w's file (records and the zeroed tail), from wStart
	// The records written after durable (a copy, to write them again
	// after a failed flush), and whether that is needed.
	unsynced []byte
	redo     bool

	// Reader only.
	r       *os.File
	rStart  int64
	pos     int64  // next record to read
	buf     []byte // bytes of the current segment from bufOff
	bufOff  int64  // global offset of buf[0]
	sending int64  // sending offset found at open (the previous process's batch in flight)
}

const (
	recHeader     = 8
	maxRecord     = 64 << 20
	maxBatchBytes = 64 << 20
	segExt        = ".seg"
	cursorFile    = "cursor"
	readChunk     = 1 << 20
	cursorBytes   = 20
	prealloc      = 4 << 20 // a segment's zeroed tail grows by this much
)

// zeros is the block the zeroed tail is written from.
var zeros [64 << 10]byte

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// openSpool opens (or creates) the spool in dir, drops segments the sink
// has fully stored, cuts a torn last record off, and returns the number
// of records not yet acknowledged.
func openSpool(dir string, segBytes int64, log *slog.Logger) (*spool, int64, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, 0, fmt.Errorf("audit: create spool directory: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, 0, err
	}
	s := &spool{dir: dir, segBytes: segBytes, log: log, lock: lock}
	ok := false
	defer func() {
		if !ok {
			lock.Close()
		}
	}()
	acked, sending, err := s.readCursor()
	if err != nil {
		return nil, 0, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: read spool directory: %w", err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), segExt)
		if !ok {
			continue
		}
		off, err := strconv.ParseInt(name, 10, 64)
		if err != nil || off < 0 {
			continue
		}
		s.segs = append(s.segs, off)
	}
	slices.Sort(s.segs)
	// Segments wholly below the cursor are done with.
	for len(s.segs) > 1 && s.segs[1] <= acked {
		if err := os.Remove(s.segPath(s.segs[0])); err != nil {
			return nil, 0, fmt.Errorf("audit: remove spooled segment: %w", err)
		}
		s.segs = s.segs[1:]
	}
	if len(s.segs) == 0 {
		if err := s.create(acked); err != nil {
			return nil, 0, err
		}
	}
	var pending int64
	for i, start := range s.segs {
		from := max(acked, start)
		valid, n, err := s.scan(start, from)
		if err != nil {
			return nil, 0, err
		}
		pending += n
		last := i == len(s.segs)-1
		size := int64(0)
		if st, err := os.Stat(s.segPath(start)); err == nil {
			size = st.Size()
		}
		if last && valid < size {
			// The zeroed tail, or a record cut short by a crash: it was
			// never acknowledged to anyone, since an append counts only
			// once fsynced whole.
			if zero, err := zeroFrom(s.segPath(start), valid); err != nil {
				return nil, 0, err
			} else if !zero {
				log.Warn("audit spool: dropping a torn record at the end", "segment", filepath.Base(s.segPath(start)), "bytes", size-valid)
			}
			if err := os.Truncate(s.segPath(start), valid); err != nil {
				return nil, 0, fmt.Errorf("audit: cut torn spool record: %w", err)
			}
		} else if !last && start+valid != s.segs[i+1] {
			log.Error("audit spool: damaged segment; records after the damage are skipped",
				"segment", filepath.Base(s.segPath(start)), "valid_bytes", valid)
		}
		if last {
			s.end = start + valid
		}
	}
	s.wStart = s.segs[len(s.segs)-1]
	f, err := os.OpenFile(s.segPath(s.wStart), os.O_WRONLY, 0o640)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: open spool segment: %w", err)
	}
	s.w, s.alloc = f, s.end-s.wStart
	acked = min(max(acked, s.segs[0]), s.end)
	s.durable.Store(s.end)
	s.acked.Store(acked)
	s.pos, s.sending = acked, min(sending, s.end)
	ok = true
	return s, pending, nil
}

func (s *spool) segPath(start int64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%020d%s", start, segExt))
}

// create makes the empty segment starting at off and adds it to segs.
func (s *spool) create(off int64) error {
	f, err := os.OpenFile(s.segPath(off), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("audit: create spool segment: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("audit: create spool segment: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	s.mu.Lock()
	s.segs = append(s.segs, off)
	s.mu.Unlock()
	return nil
}

// scan checks the records of the segment at start from global offset
// from; it returns how many bytes of the file are valid records (a
// prefix) and how many records lie at or after from.
func (s *spool) scan(start, from int64) (valid int64, records int64, err error) {
	f, err := os.Open(s.segPath(start))
	if err != nil {
		return 0, 0, fmt.Errorf("audit: open spool segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("audit: stat spool segment: %w", err)
	}
	size := st.Size()
	var hdr [recHeader]byte
	var payload []byte
	off := int64(0)
	for off+recHeader <= size {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return off, records, nil
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:4]))
		if n == 0 || n > maxRecord || off+recHeader+n > size {
			break
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := f.ReadAt(payload, off+recHeader); err != nil {
			break
		}
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
			break
		}
		if start+off >= from {
			records++
		}
		off += recHeader + n
	}
	return off, records, nil
}

// appendRecords writes buf (whole records) and fsyncs: writeRecords then
// sync. On an error nothing of buf counts.
func (s *spool) appendRecords(buf []byte) error {
	if err := s.writeRecords(buf); err != nil {
		return err
	}
	return s.sync()
}

// writeRecords writes buf (whole records) after the spool's records,
// without a flush: they are in the page cache, safe from a kill of this
// process but not from a power loss until sync. On an error nothing of
// buf counts: the file is cut back.
func (s *spool) writeRecords(buf []byte) error {
	if s.redo {
		// A failed flush may have dropped the written pages: write them
		// again before anything after them.
		if err := s.rewrite(); err != nil {
			return err
		}
	}
	at := s.end - s.wStart
	if err := s.extend(at + int64(len(buf))); err != nil {
		return err
	}
	if _, err := s.w.WriteAt(buf, at); err != nil {
		s.cutBack(at)
		return fmt.Errorf("audit: write spool: %w", err)
	}
	s.end += int64(len(buf))
	s.unsynced = append(s.unsynced, buf...)
	return nil
}

// unsyncedBytes is how much writeRecords wrote that sync has not flushed.
func (s *spool) unsyncedBytes() int { return len(s.unsynced) }

// sync flushes what writeRecords wrote (one fdatasync: the group
// commit) and moves durable, which is all a reader sees, to the end. On an
// error the records stay unflushed; the next writeRecords or sync writes
// them again first (after a failed fsync the kernel may have dropped the
// dirty pages: retrying the flush alone could report success for them).
func (s *spool) sync() error {
	if s.redo {
		if err := s.rewrite(); err != nil {
			return err
		}
	}
	if s.durable.Load() == s.end {
		return nil
	}
	if err := datasync(s.w); err != nil {
		s.redo = true
		return fmt.Errorf("audit: fsync spool: %w", err)
	}
	s.durable.Store(s.end)
	s.unsynced = s.unsynced[:0]
	s.commits.Add(1)
	if s.end-s.wStart >= s.segBytes {
		if err := s.create(s.end); err != nil {
			return nil // the records are safe; rotation is retried next time
		}
		f, err := os.OpenFile(s.segPath(s.end), os.O_WRONLY, 0o640)
		if err != nil {
			return nil
		}
		_ = s.w.Close()
		s.w, s.wStart, s.alloc = f, s.end, 0
	}
	return nil
}

// rewrite writes the unflushed records again at their offsets after a
// failed flush.
func (s *spool) rewrite() error {
	at := s.durable.Load() - s.wStart
	if err := s.extend(at + int64(len(s.unsynced))); err != nil {
		return err
	}
	if _, err := s.w.WriteAt(s.unsynced, at); err != nil {
		return fmt.Errorf("audit: write spool again: %w", err)
	}
	s.redo = false
	return nil
}

// extend makes the write segment's zeroed tail reach n bytes (from
// wStart), growing it by whole prealloc steps, and fsyncs the new size.
func (s *spool) extend(n int64) error {
	if n <= s.alloc {
		return nil
	}
	to := (n + prealloc - 1) / prealloc * prealloc
	for off := s.alloc; off < to; {
		k := min(int64(len(zeros)), to-off)
		if _, err := s.w.WriteAt(zeros[:k], off); err != nil {
			s.cutBack(s.end - s.wStart)
			return fmt.Errorf("audit: extend spool segment: %w", err)
		}
		off += k
	}
	if err := s.w.Sync(); err != nil {
		s.cutBack(s.end - s.wStart)
		return fmt.Errorf("audit: extend spool segment: %w", err)
	}
	s.alloc = to
	return nil
}

// cutBack drops what a failed write may have left after at (the
// records' end): nothing of it counts. Best effort: a leftover is cut
// by the next open, and overwritten by the next append.
func (s *spool) cutBack(at int64) {
	if s.w.Truncate(at) == nil {
		s.alloc = at
	}
}

// zeroFrom reports whether path holds only zero bytes from off on.
func zeroFrom(path string, off int64) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("audit: open spool segment: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(buf, off)
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("audit: read spool segment: %w", err)
		}
	}
}

// frameRecord frames payload (already encoded at buf[at+recHeader:])
// in place: it fills the header at buf[at:].
func frameRecord(buf []byte, at int) {
	payload := buf[at+recHeader:]
	binary.LittleEndian.PutUint32(buf[at:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[at+4:], crc32.Checksum(payload, castagnoli))
}

// bytes is the spool's backlog: bytes written and not yet acknowledged.
func (s *spool) bytes() int64 { return s.durable.Load() - s.acked.Load() }

// written is bytes() counting what is written but not yet flushed: the
// appender's view (it alone may read end).
func (s *spool) written() int64 { return s.end - s.acked.Load() }

// readBatch decodes up to max records from the read position into evs
// (reusing its backing array), not past until when it is ≥ 0, and
// returns them and the offset after the last; damaged records are skipped
// and counted.
func (s *spool) readBatch(evs []Event, max int, until int64) (out []Event, end int64, damaged int, err error) {
	evs = evs[:0]
	limit := s.durable.Load()
	if until >= 0 {
		limit = min(limit, until)
	}
	// Bytes bound a batch too: events with large content or blobs would
	// otherwise hold BatchRows times their size in memory.
	for from := s.pos; len(evs) < max && s.pos < limit && s.pos-from < maxBatchBytes; {
		s.mu.Lock()
		i, found := slices.BinarySearch(s.segs, s.pos)
		if !found {
			i--
		}
		start, segEnd := s.segs[i], limit
		if i+1 < len(s.segs) {
			segEnd = min(segEnd, s.segs[i+1])
		}
		s.mu.Unlock()
		if s.pos >= segEnd { // end of a segment: on to the next
			s.pos = segEnd
			continue
		}
		if s.r == nil || s.rStart != start {
			if s.r != nil {
				s.r.Close()
			}
			s.r, s.buf = nil, s.buf[:0]
			f, err := os.Open(s.segPath(start))
			if err != nil {
				return evs, s.pos, damaged, fmt.Errorf("audit: open spool segment: %w", err)
			}
			s.r, s.rStart = f, start
		}
		hdr, err := s.peek(s.pos, recHeader, segEnd)
		if err != nil {
			damaged++
			s.skipTo(segEnd, err)
			continue
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:4]))
		sum := binary.LittleEndian.Uint32(hdr[4:])
		if n == 0 || n > maxRecord || s.pos+recHeader+n > segEnd {
			damaged++
			s.skipTo(segEnd, errCorrupt)
			continue
		}
		payload, err := s.peek(s.pos+recHeader, int(n), segEnd)
		if err != nil {
			damaged++
			s.skipTo(segEnd, err)
			continue
		}
		s.pos += recHeader + n
		if crc32.Checksum(payload, castagnoli) != sum {
			damaged++
			s.log.Error("audit spool: record fails its checksum; skipped", "offset", s.pos-recHeader-n)
			continue
		}
		evs = append(evs, Event{})
		if err := decodeEvent(payload, &evs[len(evs)-1]); err != nil {
			evs = evs[:len(evs)-1]
			damaged++
			s.log.Error("audit spool: undecodable record; skipped", "offset", s.pos-recHeader-n)
		}
	}
	return evs, s.pos, damaged, nil
}

func (s *spool) skipTo(segEnd int64, why error) {
	s.log.Error("audit spool: damaged segment; skipping to its end", "offset", s.pos, "skipped_bytes", segEnd-s.pos, "err", why)
	s.pos = segEnd
}

// peek returns n bytes of the current read segment from global offset
// off (not beyond segEnd), reading a chunk ahead.
func (s *spool) peek(off int64, n int, segEnd int64) ([]byte, error) {
	if off >= s.bufOff && off+int64(n) <= s.bufOff+int64(len(s.buf)) {
		return s.buf[off-s.bufOff : off-s.bufOff+int64(n)], nil
	}
	want := max(int64(n), min(readChunk, segEnd-off))
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	got, err := s.r.ReadAt(s.buf, off-s.rStart)
	s.buf, s.bufOff = s.buf[:got], off
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("audit: read spool: %w", err)
	}
	return s.buf[:n], nil
}

// rewind moves the read position back to the acknowledged offset (after
// a batch the sink did not take is dropped from memory).
func (s *spool) rewind() { s.pos = s.acked.Load() }

// markSending records that the records up to end are being sent.
func (s *spool) markSending(end int64) error {
	s.sending = max(s.sending, end)
	return s.writeCursor(s.acked.Load(), s.sending)
}

// ack records that the sink stored everything before end, and removes
// the segments that holds no unacknowledged record.
func (s *spool) ack(end int64) error {
	if err := s.writeCursor(end, max(end, s.sending)); err != nil {
		return err
	}
	s.acked.Store(end)
	s.mu.Lock()
	var drop []int64
	for len(s.segs) > 1 && s.segs[1] <= end {
		drop = append(drop, s.segs[0])
		s.segs = s.segs[1:]
	}
	s.mu.Unlock()
	for _, start := range drop {
		if err := os.Remove(s.segPath(start)); err != nil {
			s.log.Warn("audit spool: remove acknowledged segment", "err", err)
		}
	}
	return nil
}

func (s *spool) readCursor() (acked, sending int64, err error) {
	b, err := os.ReadFile(filepath.Join(s.dir, cursorFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("audit: read spool cursor: %w", err)
	}
	if len(b) != cursorBytes || crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		// Rename is atomic, so this is damage from outside: replaying
		// from the start resends, which the sink's duplicate check
		// absorbs (sending = max marks everything as possibly sent).
		s.log.Error("audit spool: cursor file is damaged; replaying the whole spool with duplicate checks")
		return 0, 1<<62 - 1, nil
	}
	return int64(binary.LittleEndian.Uint64(b[:8])), int64(binary.LittleEndian.Uint64(b[8:16])), nil
}

func (s *spool) writeCursor(acked, sending int64) error {
	var b [cursorBytes]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(acked))
	binary.LittleEndian.PutUint64(b[8:16], uint64(sending))
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	tmp := filepath.Join(s.dir, cursorFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("audit: write spool cursor: %w", err)
	}
	_, err = f.Write(b[:])
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, cursorFile))
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return fmt.Errorf("audit: write spool cursor: %w", err)
	}
	return nil
}

func (s *spool) close() error {
	if s.r != nil {
		s.r.Close()
	}
	defer s.lock.Close()
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("audit: close spool: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit: sync spool directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit: sync spool directory: %w", err)
	}
	return nil
}
