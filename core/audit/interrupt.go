package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ownerFile, in the spool directory, names the process that last opened
// the spool (its replica name) and when: the next process on the spool
// marks what that one left unfinished as interrupted.
const ownerFile = "owner"

// markSlack widens an interruption marker's time range below the
// previous process's start, so that a clock stepped back a little does
// not hide a row from it (the replica name selects the rows; the range
// only lets ClickHouse skip partitions).
const markSlack = time.Minute

// markInterrupted is New's step for the rows an earlier process on this
// spool admitted and never finished (a SIGKILL, a crash, a shutdown that
// gave up on open requests): it appends an interruption marker for that
// process to the spool, which the sink, after everything that process
// spooled, turns into RowInterrupted for its rows still RowStarted; then
// it names this process the spool's owner. The marker is durable before
// the owner changes, so a crash in between only writes it again (the
// sinks apply it idempotently). It returns how many records it added.
func (r *Recorder) markInterrupted(now time.Time) (int64, error) {
	prev, since, err := readOwner(r.o.Dir)
	if err != nil {
		return 0, err
	}
	var added int64
	if prev != "" {
		mark := Event{State: RowInterruptMark, Replica: prev, Time: since.Add(-markSlack), Until: now}
		buf := make([]byte, recHeader, 128)
		buf = appendEvent(buf, &mark)
		frameRecord(buf, 0)
		if err := r.sp.appendRecords(buf); err != nil {
			return 0, fmt.Errorf("audit: spool the interruption marker: %w", err)
		}
		added = 1
	}
	if r.o.Replica == "" {
		// No name to select this process's rows by: they are never marked
		// (a test's recorder; the gateway always names its replica).
		return added, removeOwner(r.o.Dir)
	}
	return added, writeOwner(r.o.Dir, r.o.Replica, now)
}

// readOwner reads the spool's owner file: "" when there is none.
func readOwner(dir string) (replica string, since time.Time, err error) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("audit: read the spool's owner: %w", err)
	}
	micros, name, ok := strings.Cut(strings.TrimSuffix(string(b), "\n"), " ")
	us, perr := strconv.ParseInt(micros, 10, 64)
	if !ok || perr != nil || name == "" {
		return "", time.Time{}, fmt.Errorf("audit: the spool's owner file %s is damaged: remove it (rows the previous process left unfinished then stay %q)",
			filepath.Join(dir, ownerFile), RowStarted)
	}
	return name, time.UnixMicro(us).UTC(), nil
}

// writeOwner replaces the owner file atomically (write, fsync, rename,
// fsync the directory).
func writeOwner(dir, replica string, since time.Time) error {
	tmp := filepath.Join(dir, ownerFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("audit: write the spool's owner: %w", err)
	}
	_, err = f.WriteString(strconv.FormatInt(since.UnixMicro(), 10) + " " + replica + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, ownerFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("audit: write the spool's owner: %w", err)
	}
	return nil
}

func removeOwner(dir string) error {
	if err := os.Remove(filepath.Join(dir, ownerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit: remove the spool's owner: %w", err)
	}
	return nil
}

// collapse drops from evs, in place, each RowStarted event whose request
// finishes later in the same batch: the finished row holds everything
// the started one did, and one row per request is cheaper to store. (In
// ClickHouse it also keeps the two rows of a request out of one insert,
// where the order that decides which one a merge keeps is the sort's.)
func collapse(evs []Event) []Event {
	var finished map[string]struct{}
	for i := range evs {
		if s := evs[i].State; s != RowStarted && s != RowInterruptMark {
			if finished == nil {
				finished = make(map[string]struct{}, len(evs))
			}
			finished[evs[i].RequestID] = struct{}{}
		}
	}
	if finished == nil {
		return evs
	}
	out := evs[:0]
	for i := range evs {
		if evs[i].State == RowStarted {
			if _, ok := finished[evs[i].RequestID]; ok {
				continue
			}
		}
		out = append(out, evs[i])
	}
	clear(evs[len(out):]) // drop the strings
	return out
}
