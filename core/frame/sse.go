package frame

import "bytes"

// bom is the UTF-8 encoding of U+FEFF, which is ignored at the start of an
// event stream.
const bom = "\xEF\xBB\xBF"

// SSE splits a text/event-stream into events, emitting each event's data
// payload. See the package documentation for the rules.
type SSE struct {
	max int

	// line holds a partial line carried over from an earlier Feed.
	line []byte
	// The current event's data: with nData == 1 and !buffered it is single,
	// which aliases the piece being fed or line; otherwise it is data.
	data     []byte
	single   []byte
	nData    int
	buffered bool
	// name is the current event type (the value of the last "event" field).
	name []byte

	skipLF  bool  // the last line ended in a CR that ended a piece
	bomN    int   // leading bytes matched against bom so far
	bomDone bool  // the start of the stream has been checked for a BOM
	err     error // sticky error
}

// NewSSE returns an SSE splitter that refuses (with ErrTooLarge) any line or
// event data payload longer than maxEvent bytes; zero or less means
// DefaultMax.
func NewSSE(maxEvent int) *SSE { return &SSE{max: limit(maxEvent)} }

// EventName returns the type of the event being emitted (the value of its
// last "event" field), or an empty slice when it had none, which per the
// standard means "message". It is valid only during emit.
func (s *SSE) EventName() []byte { return capped(s.name) }

// Reset discards any partial event and any error.
func (s *SSE) Reset() {
	s.line = reuse(s.line)
	s.data = reuse(s.data)
	s.name = reuse(s.name)
	s.single = nil
	s.nData = 0
	s.buffered = false
	s.skipLF = false
	s.bomN = 0
	s.bomDone = false
	s.err = nil
}

// Feed implements Splitter.
func (s *SSE) Feed(p []byte, emit func(ev []byte)) error {
	if s.err != nil {
		return s.err
	}
	if !s.bomDone {
		p = s.stripBOM(p)
		if !s.bomDone {
			return nil
		}
	}
	if s.skipLF && len(p) > 0 {
		s.skipLF = false
		if p[0] == '\n' {
			p = p[1:]
		}
	}

	// nl and cr are the positions of the next LF and CR at or after pos, or
	// -1 when there is none; each is searched for again only once passed, so
	// every byte is scanned at most once for each.
	pos := 0
	nl := bytes.IndexByte(p, '\n')
	cr := bytes.IndexByte(p, '\r')
	for {
		if nl >= 0 && nl < pos {
			if pos < len(p) && p[pos] == '\n' {
				nl = pos // the blank line ending an event: skip the call
			} else {
				nl = indexFrom(p, pos, '\n')
			}
		}
		if cr >= 0 && cr < pos {
			cr = indexFrom(p, pos, '\r')
		}
		end := nl
		if cr >= 0 && (end < 0 || cr < end) {
			end = cr
		}
		if end < 0 {
			break
		}
		line := p[pos:end]
		if len(s.line) > 0 {
			if n := len(s.line) + len(line); n > s.max {
				return s.fail(n)
			}
			s.line = append(s.line, line...)
			line = s.line
			// Truncating is safe although single may alias line: nothing
			// is appended to line until the end of this Feed, after single
			// has been copied out.
			s.line = s.line[:0]
		}
		pos = end + 1
		if p[end] == '\r' {
			if pos < len(p) {
				if p[pos] == '\n' {
					pos++
				}
			} else {
				s.skipLF = true
			}
		}
		if err := s.process(line, emit); err != nil {
			return err
		}
	}

	// The piece p is about to be given back to the caller: copy what is
	// still needed of it.
	if s.nData > 0 && !s.buffered {
		s.data = append(s.data[:0], s.single...)
		s.single = nil
		s.buffered = true
	}
	if rest := p[pos:]; len(rest) > 0 {
		if n := len(s.line) + len(rest); n > s.max {
			return s.fail(n)
		}
		s.line = append(s.line, rest...)
	}
	return nil
}

// End implements Splitter.
func (s *SSE) End(emit func(ev []byte)) error {
	err := s.err
	if err == nil {
		if !s.bomDone {
			// The stream held only a proper prefix of a BOM: plain bytes.
			s.line = append(s.line, bom[:s.bomN]...)
		}
		if len(s.line) > 0 {
			err = s.process(s.line, emit)
		}
		if err == nil {
			s.dispatch(emit)
		}
	}
	s.Reset()
	return err
}

// stripBOM matches the start of the stream against bom, returning what
// remains of p to parse; bomDone stays false while p ends within a prefix.
func (s *SSE) stripBOM(p []byte) []byte {
	for len(p) > 0 {
		if p[0] != bom[s.bomN] {
			// Not a BOM: the bytes matched so far start the first line.
			s.line = append(s.line, bom[:s.bomN]...)
			s.bomDone = true
			return p
		}
		p = p[1:]
		s.bomN++
		if s.bomN == len(bom) {
			s.bomDone = true
			return p
		}
	}
	return p
}

// process interprets one line, without its terminator.
func (s *SSE) process(line []byte, emit func(ev []byte)) error {
	if len(line) == 0 {
		s.dispatch(emit)
		return nil
	}
	if len(line) > s.max {
		return s.fail(len(line))
	}
	if len(line) >= 5 && string(line[:5]) == "data:" {
		return s.appendData(trimSpace(line[5:]))
	}
	if line[0] == ':' {
		return nil // comment
	}
	field, value := line, line[len(line):]
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], trimSpace(line[i+1:])
	}
	switch string(field) {
	case "data":
		return s.appendData(value)
	case "event":
		s.name = append(s.name[:0], value...)
	}
	// "id", "retry" and unknown fields are ignored.
	return nil
}

// trimSpace removes one leading space.
func trimSpace(v []byte) []byte {
	if len(v) > 0 && v[0] == ' ' {
		return v[1:]
	}
	return v
}

func (s *SSE) appendData(v []byte) error {
	switch {
	case s.nData == 0:
		s.single = v
	case !s.buffered:
		if n := len(s.single) + 1 + len(v); n > s.max {
			return s.fail(n)
		}
		s.data = append(s.data[:0], s.single...)
		s.data = append(s.data, '\n')
		s.data = append(s.data, v...)
		s.single = nil
		s.buffered = true
	default:
		if n := len(s.data) + 1 + len(v); n > s.max {
			return s.fail(n)
		}
		s.data = append(s.data, '\n')
		s.data = append(s.data, v...)
	}
	s.nData++
	return nil
}

// dispatch emits the current event, if it has data, and starts the next.
func (s *SSE) dispatch(emit func(ev []byte)) {
	if s.nData > 0 {
		if s.buffered {
			emit(capped(s.data))
		} else {
			emit(capped(s.single))
		}
		s.data = s.data[:0]
		s.single = nil
		s.nData = 0
		s.buffered = false
	}
	s.name = s.name[:0]
}

func (s *SSE) fail(n int) error {
	s.err = tooLarge(n, s.max)
	return s.err
}

// indexFrom returns the position of the first c in p at or after i, or -1.
func indexFrom(p []byte, i int, c byte) int {
	j := bytes.IndexByte(p[i:], c)
	if j < 0 {
		return -1
	}
	return i + j
}
