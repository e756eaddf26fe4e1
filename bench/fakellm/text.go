package fakellm

import (
	"math"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// Deterministic text. A completion is a sequence of words drawn from a fixed
// vocabulary by a PRNG seeded with a hash of the model name and the last user
// message (or prompt), so the same request always gets the same answer. One
// word is one token. Token counts of inputs are whitespace word counts.

var vocab = [...]string{
	"the", "model", "answer", "is", "simple", "and", "clear", "data", "shows", "that",
	"a", "fast", "router", "sends", "each", "request", "to", "the", "best", "backend",
	"latency", "stays", "low", "when", "queues", "are", "short", "tokens", "flow", "steadily",
	"cache", "hits", "save", "time", "on", "repeated", "prompts", "while", "new", "work",
	"waits", "for", "free", "slots", "in", "order", "every", "stream", "ends", "with",
	"usage", "numbers", "so", "clients", "can", "count", "cost", "later", "we", "measure",
	"throughput", "under", "load", "then", "compare", "results", "across", "runs", "it", "helps",
	"to", "keep", "things", "honest", "because", "benchmarks", "need", "stable", "baselines", "here",
	"this", "server", "only", "pretends", "but", "speaks", "real", "wire", "formats", "faithfully",
	"green", "river", "mountain", "quiet", "bright", "morning", "paper", "signal", "window", "garden",
	"north", "light", "stone", "cloud", "engine", "pattern", "market", "number", "letter", "story",
	"system", "memory", "planet", "circle", "bridge", "forest", "ocean", "silver",
}

var (
	tokPlain     [len(vocab)]string // "word"
	tokSpaced    [len(vocab)]string // " word"
	tokCap       [len(vocab)]string // "Word"
	tokSpacedEnd [len(vocab)]string // " word."
	tokCapEnd    [len(vocab)]string // "Word."
	vocabIndex   = map[string]int{}
)

func init() {
	for i, w := range vocab {
		tokPlain[i] = w
		tokSpaced[i] = " " + w
		c := strings.ToUpper(w[:1]) + w[1:]
		tokCap[i] = c
		tokSpacedEnd[i] = " " + w + "."
		tokCapEnd[i] = c + "."
		if _, ok := vocabIndex[w]; !ok {
			vocabIndex[w] = i
		}
	}
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	golden    = 0x9e3779b97f4a7c15
)

// hashString folds s into the FNV-1a hash h.
func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// textSeed is the seed of the completion for model and text.
func textSeed(model, text string) uint64 {
	h := hashString(fnvOffset, model)
	h ^= 0xff
	h *= fnvPrime
	return hashString(h, text)
}

// splitmix64 is a fast, well-mixed bijection used as a counter-based PRNG.
func splitmix64(x uint64) uint64 {
	x += golden
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func wordIndex(seed uint64, i int) int {
	return int(splitmix64(seed+uint64(i)*golden) % uint64(len(vocab)))
}

// appendTextTokens appends the n tokens of the free text seeded by seed. The
// text starts with a capital and its last token ends with a period; the
// pieces are static strings, so this does not allocate beyond dst.
func appendTextTokens(dst []string, seed uint64, n int) []string {
	for i := 0; i < n; i++ {
		w := wordIndex(seed, i)
		last := i == n-1
		switch {
		case i == 0 && last:
			dst = append(dst, tokCapEnd[w])
		case i == 0:
			dst = append(dst, tokCap[w])
		case last:
			dst = append(dst, tokSpacedEnd[w])
		default:
			dst = append(dst, tokSpaced[w])
		}
	}
	return dst
}

// textOf returns the n-token free text seeded by seed as one string.
func textOf(seed uint64, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		w := wordIndex(seed, i)
		switch {
		case i == 0 && i == n-1:
			sb.WriteString(tokCapEnd[w])
		case i == 0:
			sb.WriteString(tokCap[w])
		case i == n-1:
			sb.WriteString(tokSpacedEnd[w])
		default:
			sb.WriteString(tokSpaced[w])
		}
	}
	return sb.String()
}

// countWords counts whitespace-separated words, the simulator's tokenizer.
func countWords(s string) int {
	n := 0
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		space := c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

func countWordsBytes(s []byte) int { return countWords(string(s)) }

// tokenIDs returns the simulated token ids of text: a vocabulary word gets
// its index, any other word a stable hash-derived id in [1000, 151000).
func tokenIDs(dst []int, text string) []int {
	for _, w := range strings.Fields(text) {
		if i, ok := vocabIndex[w]; ok {
			dst = append(dst, i)
			continue
		}
		dst = append(dst, 1000+int(hashString(fnvOffset, w)%150000))
	}
	return dst
}

// detokenize is the inverse of tokenIDs for vocabulary words; other ids come
// back as "<id>".
func detokenize(ids []int) string {
	var sb strings.Builder
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(' ')
		}
		if id >= 0 && id < len(vocab) {
			sb.WriteString(vocab[id])
		} else {
			sb.WriteString("<")
			sb.WriteString(itoa(id))
			sb.WriteString(">")
		}
	}
	return sb.String()
}

func itoa(n int) string { return string(appendInt(nil, int64(n))) }

// chopPieces splits s into rune-aligned pieces of about size bytes, and into
// at least min pieces when s has that many runes. Concatenating the pieces
// gives s back. It models a tokenizer splitting JSON text.
func chopPieces(s string, size, min int) []string {
	if s == "" {
		return nil
	}
	runes := utf8.RuneCountInString(s)
	if min > runes {
		min = runes
	}
	if min > 0 && len(s)/size < min {
		size = (len(s) + min - 1) / min
		if size < 1 {
			size = 1
		}
	}
	out := make([]string, 0, len(s)/size+1)
	for len(s) > 0 {
		n := size
		if n >= len(s) {
			out = append(out, s)
			break
		}
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// newID returns 32 random lowercase hex digits, like Python's uuid4().hex.
func newID(b []byte) []byte {
	b = appendHex(b, rand.Uint64())
	return appendHex(b, rand.Uint64())
}

// ollamaToolCallID returns an id shaped like Ollama's: "call_" and 8
// characters of [a-z0-9].
func ollamaToolCallID() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [13]byte
	copy(b[:], "call_")
	r := rand.Uint64()
	for i := 5; i < len(b); i++ {
		b[i] = letters[r%uint64(len(letters))]
		r /= uint64(len(letters))
	}
	return string(b[:])
}

// --- JSON values from JSON schemas -----------------------------------------

// schemaFiller builds a deterministic JSON instance of a JSON schema: an
// object gets its required properties (all properties when the schema lists
// none), each filled with a value of the right type.
type schemaFiller struct {
	root  *fastjson.Value
	seed  uint64
	start int // len(b) when filling began
}

const (
	maxSchemaDepth  = 8
	maxSchemaOutput = 16 << 10 // bytes
)

func (f *schemaFiller) appendValue(b []byte, v *fastjson.Value, key string, depth int) []byte {
	seed := hashString(f.seed, key)
	if depth > maxSchemaDepth || len(b)-f.start > maxSchemaOutput {
		return append(b, "null"...) // recursive or huge schemas stay bounded
	}
	if v == nil || v.Type() == fastjson.TypeTrue { // no schema: anything goes
		return appendJSONString(b, tokPlain[wordIndex(seed, 0)])
	}
	if v.Type() != fastjson.TypeObject {
		return append(b, "null"...)
	}
	if ref := v.GetStringBytes("$ref"); ref != nil {
		return f.appendValue(b, f.resolve(string(ref)), key, depth+1)
	}
	if c := v.Get("const"); c != nil {
		return c.MarshalTo(b)
	}
	if enum := v.GetArray("enum"); len(enum) > 0 {
		return enum[0].MarshalTo(b)
	}
	for _, k := range [...]string{"anyOf", "oneOf", "allOf"} {
		if alts := v.GetArray(k); len(alts) > 0 {
			pick := alts[0]
			for _, a := range alts {
				if string(a.GetStringBytes("type")) != "null" {
					pick = a
					break
				}
			}
			return f.appendValue(b, pick, key, depth+1)
		}
	}
	typ := schemaType(v)
	switch typ {
	case "object":
		return f.appendObject(b, v, seed, depth)
	case "array":
		items := v.Get("items")
		if jtype(items) == fastjson.TypeArray {
			arr := items.GetArray()
			if len(arr) > 0 {
				items = arr[0]
			} else {
				items = nil
			}
		}
		n := v.GetInt("minItems")
		if n < 1 {
			n = 1
		}
		if n > 3 {
			n = 3
		}
		b = append(b, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if items == nil {
				b = appendJSONString(b, tokPlain[wordIndex(seed, i)])
			} else {
				b = f.appendValue(b, items, key+"[]", depth+1)
			}
		}
		return append(b, ']')
	case "integer":
		n := int64(1 + seed%100)
		n = clampInt(v, n)
		return appendInt(b, n)
	case "number":
		x := float64(seed%1000)/10 + 0.5
		if min := v.Get("minimum"); min != nil && x < min.GetFloat64() {
			x = min.GetFloat64()
		}
		if max := v.Get("maximum"); max != nil && x > max.GetFloat64() {
			x = max.GetFloat64()
		}
		return appendGoFloat64(b, x)
	case "boolean":
		if seed&1 == 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case "null":
		return append(b, "null"...)
	default: // "string" and anything unknown
		switch string(v.GetStringBytes("format")) {
		case "date-time":
			return append(b, `"2025-01-01T12:00:00Z"`...)
		case "date":
			return append(b, `"2025-01-01"`...)
		case "time":
			return append(b, `"12:00:00"`...)
		case "email":
			return append(b, `"user@example.com"`...)
		case "uri", "url":
			return append(b, `"https://example.com/"`...)
		case "uuid":
			return append(b, `"00000000-0000-4000-8000-000000000000"`...)
		}
		return appendJSONString(b, tokPlain[wordIndex(seed, 0)])
	}
}

func (f *schemaFiller) appendObject(b []byte, v *fastjson.Value, seed uint64, depth int) []byte {
	props := v.GetObject("properties")
	required := v.GetArray("required")
	b = append(b, '{')
	first := true
	emit := func(name string, schema *fastjson.Value) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, name)
		b = append(b, ':')
		b = f.appendValue(b, schema, name, depth+1)
	}
	if len(required) == 0 {
		if props != nil {
			props.Visit(func(k []byte, pv *fastjson.Value) { emit(string(k), pv) })
		}
		return append(b, '}')
	}
	want := make(map[string]bool, len(required))
	for _, r := range required {
		if s, err := r.StringBytes(); err == nil {
			want[string(s)] = true
		}
	}
	done := make(map[string]bool, len(want))
	if props != nil {
		props.Visit(func(k []byte, pv *fastjson.Value) {
			if want[string(k)] {
				done[string(k)] = true
				emit(string(k), pv)
			}
		})
	}
	for _, r := range required {
		s, err := r.StringBytes()
		if err != nil || done[string(s)] {
			continue
		}
		done[string(s)] = true
		emit(string(s), nil)
	}
	return append(b, '}')
}

func (f *schemaFiller) resolve(ref string) *fastjson.Value {
	if f.root == nil || !strings.HasPrefix(ref, "#") {
		return nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(ref, "#"), "/")
	if path == "" {
		return f.root
	}
	keys := strings.Split(path, "/")
	for i, k := range keys {
		keys[i] = strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
	}
	return f.root.Get(keys...)
}

// schemaType returns the JSON type a schema describes: its "type" (the first
// non-null one when it is a list), else one inferred from its keywords.
func schemaType(v *fastjson.Value) string {
	t := v.Get("type")
	if t != nil {
		switch t.Type() {
		case fastjson.TypeString:
			s, _ := t.StringBytes()
			return string(s)
		case fastjson.TypeArray:
			arr, _ := t.Array()
			for _, x := range arr {
				if s, err := x.StringBytes(); err == nil && string(s) != "null" {
					return string(s)
				}
			}
			if len(arr) > 0 {
				return "null"
			}
		}
	}
	switch {
	case v.Exists("properties") || v.Exists("required"):
		return "object"
	case v.Exists("items"):
		return "array"
	}
	return "string"
}

func clampInt(v *fastjson.Value, n int64) int64 {
	if min := v.Get("minimum"); min != nil {
		if m := int64(math.Ceil(min.GetFloat64())); n < m {
			n = m
		}
	}
	if max := v.Get("maximum"); max != nil {
		if m := int64(math.Floor(max.GetFloat64())); n > m {
			n = m
		}
	}
	return n
}

// jsonFromSchema returns a JSON instance of schema seeded by seed.
func jsonFromSchema(schema *fastjson.Value, seed uint64) string {
	f := schemaFiller{root: schema, seed: seed}
	if schema == nil || schema.Type() != fastjson.TypeObject {
		return "{}"
	}
	// A schema that does not say what it is ({} or only a description)
	// describes tool arguments or a JSON answer: an object.
	untyped := true
	for _, k := range [...]string{"type", "$ref", "enum", "const", "anyOf", "oneOf", "allOf", "items"} {
		if schema.Exists(k) {
			untyped = false
		}
	}
	if untyped {
		return string(f.appendObject(nil, schema, seed, 0))
	}
	return string(f.appendValue(nil, schema, "", 0))
}

// answerJSON is the JSON-mode answer when no schema is given.
func answerJSON(seed uint64, n int) string {
	b := append([]byte(nil), `{"answer":`...)
	b = appendJSONString(b, textOf(seed, n))
	return string(append(b, '}'))
}

// --- embeddings and scores --------------------------------------------------

// embedding fills v with a deterministic unit vector for text.
func embedding(v []float32, model, text string) {
	seed := textSeed(model, text)
	var norm float64
	for i := range v {
		x := splitmix64(seed + uint64(i)*golden)
		f := float64(x>>11)/float64(1<<53)*2 - 1
		v[i] = float32(f)
		norm += f * f
	}
	if norm == 0 {
		return
	}
	inv := 1 / math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}

// relevance scores how well doc matches query in (0, 1): mostly word overlap,
// plus a small deterministic jitter so ties are rare.
func relevance(model, query, doc string) float64 {
	qw := strings.Fields(strings.ToLower(query))
	dw := strings.Fields(strings.ToLower(doc))
	overlap := 0.0
	if len(qw) > 0 && len(dw) > 0 {
		set := make(map[string]struct{}, len(dw))
		for _, w := range dw {
			set[strings.Trim(w, ".,;:!?\"'()")] = struct{}{}
		}
		hit := 0
		for _, w := range qw {
			if _, ok := set[strings.Trim(w, ".,;:!?\"'()")]; ok {
				hit++
			}
		}
		overlap = float64(hit) / float64(len(qw))
	}
	jitter := float64(splitmix64(textSeed(model, query+"\x00"+doc))>>11) / float64(1<<53)
	return 0.02 + 0.85*overlap + 0.1*jitter
}
