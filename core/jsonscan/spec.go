package jsonscan

import (
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// Spec lists the fields Scan extracts: dotted paths of object keys from the
// top-level object, such as "model", "stream_options.include_usage" or
// "options.num_predict". Path i's value goes to Result.Values[i]. A Spec
// is immutable: compile it once and share it.
type Spec struct {
	paths []string // the caller's paths; hidden paths for markers follow in the trie
	// nodes is a trie of the paths' keys; nodes[0] is the top-level object.
	nodes []node
	// Markers (see NewSpecMarkers): pathMarks are evaluated once the scan
	// is done, from the value at their (maybe hidden) path; anyKeys are
	// the keys of any-depth markers, matched in the scan, and anyLens has
	// bit n-1 set when one of them has n bytes.
	pathMarks []pathMark
	anyKeys   []anyKey
	anyLens   uint64
	anyFirst  [4]uint64 // bit b: an any-depth key starts with byte b
}

// A markCond is what a marker's value must be: a JSON string equal to
// want when hasWant, else "non-empty" (see NewSpecMarkers).
type markCond struct {
	want    string
	hasWant bool
	bit     uint16
}

type pathMark struct {
	path int8 // index of the path in the trie
	markCond
}

type anyKey struct {
	key      string
	conds    []markCond
	nonEmpty uint16 // the bits of conds without a wanted value
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
	return NewSpecMarkers(paths, nil)
}

// NewSpecMarkers is NewSpec with markers: conditions on the body that
// Scan reports as bits of Result.Marks (bit i: markers[i] held), in the
// same pass. A marker is
//
//	PATH          the value at the dotted path PATH is "non-empty"
//	PATH=VALUE    the value at PATH is the JSON string VALUE
//	*.KEY         some member KEY, at any depth (in arrays too), has a non-empty value
//	*.KEY=VALUE   some member KEY, at any depth, has the string value VALUE
//
// "Non-empty" is any value but null, false, "", [] and {}. PATH follows
// the rules of paths (the last duplicate key wins); an any-depth marker
// holds when any occurrence matches. Paths and the markers' paths share
// the MaxPaths budget; there are at most MaxMarkers markers, each KEY and
// VALUE of 1 to MaxKeyLen bytes (KEY without '.').
//
// Markers let the host see what a request needs (an image part, tools, a
// JSON schema) without decoding it: "*.type=image_url", "tools",
// "response_format.type=json_schema".
func NewSpecMarkers(paths, markers []string) (*Spec, error) {
	if len(paths) > MaxPaths {
		return nil, errors.New("jsonscan: more than 16 paths")
	}
	if len(markers) > MaxMarkers {
		return nil, errors.New("jsonscan: more than 16 markers")
	}
	s := &Spec{paths: append([]string(nil), paths...), nodes: []node{{child: -1, next: -1, path: -1}}}
	all := s.paths
	for i, m := range markers {
		target, cond, err := parseMarker(m)
		if err != nil {
			return nil, err
		}
		cond.bit = 1 << i
		if key, ok := strings.CutPrefix(target, "*."); ok {
			s.addAny(key, cond)
			continue
		}
		p := slices.Index(all, target)
		if p < 0 {
			if len(all) == MaxPaths {
				return nil, errors.New("jsonscan: more than 16 paths with the markers'")
			}
			p = len(all)
			all = append(all[:len(all):len(all)], target)
		}
		s.pathMarks = append(s.pathMarks, pathMark{path: int8(p), markCond: cond})
	}
	if err := s.compile(all); err != nil {
		return nil, err
	}
	return s, nil
}

// parseMarker splits a marker into its target (a path or "*.KEY") and
// condition.
func parseMarker(m string) (string, markCond, error) {
	target, want, hasWant := strings.Cut(m, "=")
	var c markCond
	if hasWant {
		if want == "" || len(want) > MaxKeyLen {
			return "", c, errors.New("jsonscan: marker " + quote(m) + " has an invalid value")
		}
		c.want, c.hasWant = want, true
	}
	if key, ok := strings.CutPrefix(target, "*."); ok {
		if !validKey(key) {
			return "", c, errors.New("jsonscan: marker " + quote(m) + " has an invalid key")
		}
	}
	return target, c, nil
}

func (s *Spec) addAny(key string, c markCond) {
	for i := range s.anyKeys {
		if s.anyKeys[i].key == key {
			s.anyKeys[i].conds = append(s.anyKeys[i].conds, c)
			if !c.hasWant {
				s.anyKeys[i].nonEmpty |= c.bit
			}
			return
		}
	}
	k := anyKey{key: key, conds: []markCond{c}}
	if !c.hasWant {
		k.nonEmpty = c.bit
	}
	s.anyKeys = append(s.anyKeys, k)
	s.anyLens |= 1 << (len(key) - 1)
	s.anyFirst[key[0]>>6] |= 1 << (key[0] & 63)
}

func validKey(k string) bool {
	return k != "" && len(k) <= MaxKeyLen && utf8.ValidString(k) && !strings.ContainsRune(k, utf8.RuneError) &&
		!strings.Contains(k, ".")
}

// compile builds the trie of paths.
func (s *Spec) compile(paths []string) error {
	for p, path := range paths {
		keys := strings.Split(path, ".")
		if len(keys) > MaxLevels {
			return errors.New("jsonscan: path " + quote(path) + " has more than 4 keys")
		}
		n := int8(0)
		for _, k := range keys {
			if !validKey(k) {
				return errors.New("jsonscan: path " + quote(path) + " has an invalid key")
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
			return errors.New("jsonscan: duplicate path " + quote(path))
		}
		s.nodes[n].path = int8(p)
	}
	return nil
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

// matchAny returns the index in s.anyKeys of the raw key key, or -1. The
// caller has checked its length against s.anyLens.
func (s *Spec) matchAny(key []byte, escaped bool) int8 {
	if escaped {
		if len(key) > 6*MaxKeyLen {
			return -1
		}
		var buf [18 * MaxKeyLen]byte
		key = appendUnescaped(buf[:0], key)
	}
	for i := range s.anyKeys {
		if s.anyKeys[i].key == string(key) {
			return int8(i)
		}
	}
	return -1
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

// holds reports whether v, found in body at the marker's path, meets the
// marker's condition.
func (c *markCond) holds(body []byte, v Value) bool {
	if v.Kind == String {
		return c.strHolds(body[v.Start+1:v.End-1], v.Escaped)
	}
	if c.hasWant {
		return false
	}
	switch v.Kind {
	case Number, True:
		return true
	case Object, Array:
		j := skipSpace(body, v.Start+1)
		return j < len(body) && body[j] != '}' && body[j] != ']'
	}
	return false
}

// strHolds is holds for a string value, raw being its (escaped) bytes.
func (c *markCond) strHolds(raw []byte, escaped bool) bool {
	if !c.hasWant {
		return len(raw) > 0
	}
	if !escaped {
		return string(raw) == c.want
	}
	// As in match: escapes shrink at most 6 times, and a longer raw
	// string cannot decode to want.
	if len(raw) > 6*len(c.want) {
		return false
	}
	var buf [18 * MaxKeyLen]byte
	return string(appendUnescaped(buf[:0], raw)) == c.want
}

// strMarks returns the bits of k's markers that a string value holds.
func (k *anyKey) strMarks(raw []byte, escaped bool) uint16 {
	var m uint16
	for i := range k.conds {
		if k.conds[i].strHolds(raw, escaped) {
			m |= k.conds[i].bit
		}
	}
	return m
}
