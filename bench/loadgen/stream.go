package main

import (
	"bytes"
	"errors"
	"io"
	"time"
)

// maxLine bounds one stream line; a longer one fails the stream.
const maxLine = 1 << 20

var (
	errLineTooLong = errors.New("stream line over 1 MiB")
	errTruncated   = errors.New("stream ended without its terminator")
)

// streamStats is what one streamed response looked like to the client.
type streamStats struct {
	ttft     time.Duration // request start to the first data event
	total    time.Duration // request start to the end of the body
	chunks   int           // data events, not counting the terminator
	maxGap   time.Duration // longest gap between consecutive data events
	stalls   int           // gaps longer than the stall threshold
	complete bool          // saw [DONE] (SSE) or "done":true (NDJSON)
}

// streamReader splits a streamed body into events and times them. An event
// is an SSE "data:" line, or any non-empty NDJSON line. Events that arrive
// in one read share its timestamp. Reused across requests by one worker.
type streamReader struct {
	buf     []byte
	line    []byte
	ndjson  bool
	stallAt time.Duration // 0: no stall counting
	gaps    []time.Duration
	keep    bool // record every gap in gaps
}

func newStreamReader(stallAt time.Duration, keepGaps bool) *streamReader {
	return &streamReader{buf: make([]byte, 32<<10), stallAt: stallAt, keep: keepGaps}
}

// read consumes r to EOF. start is when the request was sent.
func (sr *streamReader) read(r io.Reader, start time.Time, ndjson bool) (streamStats, error) {
	sr.ndjson = ndjson
	sr.line = sr.line[:0]
	var st streamStats
	var last time.Time
	for {
		n, err := r.Read(sr.buf)
		now := time.Now()
		data := sr.buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if len(sr.line)+len(data) > maxLine {
					return st, errLineTooLong
				}
				sr.line = append(sr.line, data...)
				break
			}
			line := data[:i]
			if len(sr.line) > 0 {
				sr.line = append(sr.line, line...)
				line = sr.line
			}
			data = data[i+1:]
			ev, done := sr.classify(line)
			if ev {
				sr.event(&st, start, &last, now)
			}
			if done {
				st.complete = true
			}
			sr.line = sr.line[:0]
		}
		if err == io.EOF {
			st.total = time.Since(start)
			if !st.complete {
				return st, errTruncated
			}
			return st, nil
		}
		if err != nil {
			st.total = time.Since(start)
			return st, err
		}
	}
}

func (sr *streamReader) event(st *streamStats, start time.Time, last *time.Time, now time.Time) {
	if st.chunks == 0 {
		st.ttft = now.Sub(start)
	} else {
		gap := now.Sub(*last)
		st.maxGap = max(st.maxGap, gap)
		if sr.stallAt > 0 && gap > sr.stallAt {
			st.stalls++
		}
		if sr.keep {
			sr.gaps = append(sr.gaps, gap)
		}
	}
	st.chunks++
	*last = now
}

var (
	sseData  = []byte("data:")
	sseDone  = []byte("[DONE]")
	ndjsDone = []byte(`"done":true`)
)

// classify reports whether line is a data event, and whether it ends the
// stream (the terminator is not counted as a chunk in SSE; in NDJSON the
// final "done":true line carries data and counts).
func (sr *streamReader) classify(line []byte) (event, done bool) {
	line = bytes.TrimRight(line, "\r")
	if sr.ndjson {
		if len(bytes.TrimSpace(line)) == 0 {
			return false, false
		}
		if bytes.Contains(line, ndjsDone) {
			return true, true
		}
		return true, false
	}
	if !bytes.HasPrefix(line, sseData) {
		return false, false
	}
	if bytes.Equal(bytes.TrimSpace(line[len(sseData):]), sseDone) {
		return false, true
	}
	return true, false
}
