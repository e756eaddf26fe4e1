package jsonscan

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Spec lists the fields Scan extracts: dotted paths of object keys from the
// top-level object, such as "model", "stream_options.include_usage" or
// "options.num_predict". Path i's value goes to Result.Values[i]. A Spec
// is immutable: compile it once and share it.
type Spec struct {
	paths []string
	// nodes is a trie of the paths' keys; nodes[0] is the top-level object.
	nodes []node
}

type node struct {
	key         string
	child, next int8   // first child, next sibling; -1: none
	path        int8   // the path ending here; -1: none
	mask        uint16 // the paths ending here or below
	lens        uint64 // bit n-1 set: a child's key has n bytes
}

// NewSpec compiles paths: at most MaxPaths distinct paths of 1 to
// MaxLevels keys, each key 1 to MaxKeyLen bytes of valid UTF-8 without a
// '.' or U+FFFD (the character invalid input decodes to, which therefore
// never matches).
func NewSpec(paths ...string) (*Spec, error) {
	if len(paths) > MaxPaths {
		return nil, errors.New("jsonscan: more than 16 paths")
	}
	s := &Spec{paths: append([]string(nil), paths...), nodes: []node{{child: -1, next: -1, path: -1}}}
	for p, path := range paths {
		keys := strings.Split(path, ".")
		if len(keys) > MaxLevels {
			return nil, errors.New("jsonscan: path " + quote(path) + " has more than 4 keys")
		}
		n := int8(0)
		for _, k := range keys {
			if k == "" || len(k) > MaxKeyLen || !utf8.ValidString(k) || strings.ContainsRune(k, utf8.RuneError) {
				return nil, errors.New("jsonscan: path " + quote(path) + " has an invalid key")
			}
			c := s.child(n, k)
			if c < 0 {
				c = int8(len(s.nodes))
				s.nodes = append(s.nodes, node{key: k, child: -1, next: s.nodes[n].child, path: -1})
				s.nodes[n].child = c
				s.nodes[n].lens |= 1 << (len(k) - 1)
			}
			s.nodes[c].mask |= 1 << p
			n = c
		}
		if s.nodes[n].path >= 0 {
			return nil, errors.New("jsonscan: duplicate path " + quote(path))
		}
		s.nodes[n].path = int8(p)
	}
	return s, nil
}

// MustSpec is NewSpec for paths known to be valid; it panics on error.
func MustSpec(paths ...string) *Spec {
	s, err := NewSpec(paths...)
	if err != nil {
		panic(err)
	}
	return s
}

// Len returns the number of paths.
func (s *Spec) Len() int { return len(s.paths) }

// Path returns path i.
func (s *Spec) Path(i int) string { return s.paths[i] }

// Index returns the index of path, or -1.
func (s *Spec) Index(path string) int {
	for i, p := range s.paths {
		if p == path {
			return i
		}
	}
	return -1
}

// child returns the child of node n with key k, or -1.
func (s *Spec) child(n int8, k string) int8 {
	for c := s.nodes[n].child; c >= 0; c = s.nodes[c].next {
		if s.nodes[c].key == k {
			return c
		}
	}
	return -1
}

// match returns the child of node n matching the raw (still escaped) key
// key, or -1.
func (s *Spec) match(n int8, key []byte, escaped bool) int8 {
	if !escaped {
		// Most keys are not wanted: most fail on their length.
		if l := uint(len(key)) - 1; l >= MaxKeyLen || s.nodes[n].lens&(1<<l) == 0 {
			return -1
		}
		return s.childBytes(n, key)
	}
	// Escapes only shrink a key, but invalid UTF-8 bytes triple: a key
	// longer than 6 times MaxKeyLen cannot decode to MaxKeyLen bytes, and
	// one shorter decodes to at most 18 times MaxKeyLen.
	if len(key) > 6*MaxKeyLen {
		return -1
	}
	var buf [18 * MaxKeyLen]byte
	return s.childBytes(n, appendUnescaped(buf[:0], key))
}

// childBytes is child for a key in bytes.
func (s *Spec) childBytes(n int8, k []byte) int8 {
	for c := s.nodes[n].child; c >= 0; c = s.nodes[c].next {
		if s.nodes[c].key == string(k) {
			return c
		}
	}
	return -1
}

func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return `"` + s + `"`
}
