package frame

import "bytes"

// NDJSON splits newline-delimited JSON into lines, emitting each line that
// is not empty or all whitespace without its LF or CRLF terminator.
type NDJSON struct {
	max  int
	line []byte // partial line carried over from an earlier Feed
	err  error  // sticky error
}

// NewNDJSON returns an NDJSON splitter that refuses (with ErrTooLarge) any
// line longer than maxLine bytes, not counting its terminator; zero or less
// means DefaultMax.
func NewNDJSON(maxLine int) *NDJSON { return &NDJSON{max: limit(maxLine)} }

// Reset discards any partial line and any error.
func (s *NDJSON) Reset() {
	s.line = reuse(s.line)
	s.err = nil
}

// Feed implements Splitter.
func (s *NDJSON) Feed(p []byte, emit func(ev []byte)) error {
	if s.err != nil {
		return s.err
	}
	if len(p) == 0 {
		return nil
	}
	if len(s.line) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return s.carry(p)
		}
		n := len(s.line) + i
		if i > 0 && p[i-1] == '\r' || i == 0 && s.line[len(s.line)-1] == '\r' {
			n--
		}
		if n > s.max {
			return s.fail(n)
		}
		s.line = append(s.line, p[:i]...)
		emitLine(s.line, emit)
		s.line = s.line[:0]
		p = p[i+1:]
	}
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		line := p[:i]
		p = p[i+1:]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) > s.max {
			return s.fail(len(line))
		}
		if !blank(line) {
			emit(capped(line))
		}
	}
	if len(p) > 0 {
		return s.carry(p)
	}
	return nil
}

// carry appends p, which is not empty and holds no LF, to the partial line.
func (s *NDJSON) carry(p []byte) error {
	n := len(s.line) + len(p)
	if p[len(p)-1] == '\r' {
		n-- // the CR may yet turn out to start a CRLF terminator
	}
	if n > s.max {
		return s.fail(n)
	}
	s.line = append(s.line, p...)
	return nil
}

// End implements Splitter.
func (s *NDJSON) End(emit func(ev []byte)) error {
	err := s.err
	if err == nil && len(s.line) > 0 {
		emitLine(s.line, emit)
	}
	s.Reset()
	return err
}

// emitLine emits line, less a final CR, unless it is blank. Its length has
// been checked.
func emitLine(line []byte, emit func(ev []byte)) {
	if line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if !blank(line) {
		emit(capped(line))
	}
}

// blank reports whether line is empty or holds only JSON whitespace.
func blank(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

func (s *NDJSON) fail(n int) error {
	s.err = tooLarge(n, s.max)
	return s.err
}
