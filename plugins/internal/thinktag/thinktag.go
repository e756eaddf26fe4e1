// Package thinktag splits a reasoning model's <think>…</think> block out of
// its content, for backends that serve such a model without a reasoning
// parser (vLLM without --reasoning-parser, Ollama with think unset for some
// models). The backend adapters use it on streamed content, where a tag can
// be split between chunks at any byte, and on whole responses, which are
// one chunk: both give the same reasoning and content.
//
// The rule, byte for byte what a whole response gives:
//
//   - content whose first non-whitespace text is <think> is reasoning up to
//     </think>, and content after it; whitespace around the reasoning and
//     before the content is dropped, as is whitespace before <think>;
//   - reasoning cut off before </think> (max_tokens) is all reasoning;
//   - content that does not start with <think> is passed through untouched,
//     tags and all.
//
// Only ASCII whitespace (space, tab, CR, LF) counts. Leading whitespace is
// held back while it may still precede <think>; content that opens with
// more than MaxLead bytes of it is plain.
package thinktag

import "strings"

const (
	openTag  = "<think>"
	closeTag = "</think>"
)

// MaxLead bounds the whitespace held back before the first text (with at
// most a partial tag after it): content that starts with more is plain.
const MaxLead = 256

// Mode is where a choice's content is.
type Mode uint8

// Modes, in stream order.
const (
	Start Mode = iota // no text yet: it may open with <think>
	Think             // inside <think>
	After             // just after </think>: leading whitespace is dropped
	Plain             // plain content
)

// State is one choice's splitter. The zero value is a choice that has seen
// no content.
type State struct {
	Mode Mode
	// Started: in Think, reasoning text has been emitted (so whitespace is
	// no longer leading).
	Started bool
	// Pending holds bytes not yet emitted: in Start, whitespace and a
	// prefix of <think>; in Think, whitespace and a prefix of </think>.
	Pending string
}

// Zero reports whether s is the initial state (nothing to remember).
func (s *State) Zero() bool { return s.Mode == Start && !s.Started && s.Pending == "" }

// Feed splits the next content text, appending what is reasoning to r and
// what is content to c.
func (s *State) Feed(text string, r, c []byte) ([]byte, []byte) {
	if s.Mode == Plain && s.Pending == "" { // the common case: no copy
		return r, append(c, text...)
	}
	t := text
	if s.Pending != "" {
		t = s.Pending + text
		s.Pending = ""
	}
	for t != "" {
		switch s.Mode {
		case Start:
			i := skipSpace(t)
			rest := t[i:]
			switch {
			case i > MaxLead:
				s.Mode = Plain
				return r, append(c, t...)
			case strings.HasPrefix(rest, openTag):
				s.Mode, t = Think, rest[len(openTag):]
			case len(rest) < len(openTag) && strings.HasPrefix(openTag, rest):
				s.Pending = t // "", or the tag's start: wait for more
				return r, c
			default:
				s.Mode = Plain
				return r, append(c, t...)
			}
		case Think:
			if k := strings.Index(t, closeTag); k >= 0 {
				r = s.reason(r, trimRight(t[:k]))
				s.Mode, t = After, t[k+len(closeTag):]
				continue
			}
			j := len(t) - partial(t, closeTag)
			j = trimRightLen(t[:j])
			r = s.reason(r, t[:j])
			s.Pending = t[j:]
			return r, c
		case After:
			t = t[skipSpace(t):]
			if t != "" {
				s.Mode = Plain
			}
		case Plain:
			return r, append(c, t...)
		}
	}
	return r, c
}

// Flush ends the choice: held-back bytes go out as what they would have
// been had the content ended there.
func (s *State) Flush(r, c []byte) ([]byte, []byte) {
	p := s.Pending
	s.Pending = ""
	switch s.Mode {
	case Start:
		c = append(c, p...)
	case Think:
		r = s.reason(r, trimRight(p))
	}
	return r, c
}

// reason appends reasoning text, dropping whitespace that leads the block.
func (s *State) reason(r []byte, t string) []byte {
	if !s.Started {
		t = t[skipSpace(t):]
		if t == "" {
			return r
		}
		s.Started = true
	}
	return append(r, t...)
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func skipSpace(t string) int {
	i := 0
	for i < len(t) && isSpace(t[i]) {
		i++
	}
	return i
}

// trimRightLen is the length of t without its trailing whitespace.
func trimRightLen(t string) int {
	j := len(t)
	for j > 0 && isSpace(t[j-1]) {
		j--
	}
	return j
}

func trimRight(t string) string { return t[:trimRightLen(t)] }

// partial is the length of the longest suffix of t that is a proper prefix
// of tag: bytes that may be the start of tag.
func partial(t, tag string) int {
	for n := min(len(t), len(tag)-1); n > 0; n-- {
		if t[len(t)-n:] == tag[:n] {
			return n
		}
	}
	return 0
}

// Split splits a whole content string: Feed and Flush on one chunk.
func Split(content string) (reasoning, rest string) {
	var s State
	r, c := s.Feed(content, nil, nil)
	r, c = s.Flush(r, c)
	return string(r), string(c)
}
