package jsonscan

import (
	"encoding/json"
	"errors"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// testSpec holds the paths the tests extract.
var testSpec = MustSpec("model", "stream", "stream_options.include_usage", "max_tokens",
	"max_completion_tokens", "max_output_tokens", "options.num_predict", "stream_options",
	"messages", "a.b.c.d", "a.b")

func scanT(t *testing.T, body string, lim Limits) (*Result, error) {
	t.Helper()
	var res Result
	err := Scan([]byte(body), testSpec, lim, &res)
	if err != nil && res.Found != 0 {
		t.Errorf("%q: Found = %b on error", body, res.Found)
	}
	return &res, err
}

func TestValidity(t *testing.T) {
	valid := []string{
		`{}`, ` {} `, "\t\r\n{\t\r\n}\t\r\n", `{"a":1}`, `{"a":[]}`, `{"a":{}}`, `{"a":[1,2,3]}`,
		`{"a":[{},[],"",0,-0,1.5,-1.5e10,1E+2,1e-2,0.0,true,false,null]}`,
		`{ "a" : [ 1 , { "b" : null } ] , "c" : "d" }`,
		`{"":""}`, `{"a":"\"\\\/\b\f\n\r\t\u0000\u00e9\uD83D\uDE00\ud800"}`,
		`{"a":"é漢字😀"}`, "{\"a\":\"\xff\xfe invalid utf-8 is accepted\"}", "{\"\xff\":1}",
		`{"a":"` + strings.Repeat("x", 1000) + `"}`, `{"a":"\u0041\u0042"}`, `{"a":"` + "\x7f" + `"}`,
		`{"n":123456789012345678901234567890}`, `{"n":1e400}`, `{"n":-0.0e-0}`,
	}
	invalid := []string{
		`{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`, `{"a" 1}`, `{a:1}`,
		`{'a':1}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`, `{"a":[}`, `{"a":{]}`, `{"a":[1}`,
		`{"a":{"b":1]}`, `{}}`, `{}{}`, `{} x`, `{"a":01}`, `{"a":1.}`, `{"a":.1}`, `{"a":-}`,
		`{"a":-a}`, `{"a":+1}`, `{"a":1e}`, `{"a":1e+}`, `{"a":0x1}`, `{"a":1.e5}`, `{"a":--1}`,
		`{"a":tru}`, `{"a":truee}`, `{"a":nul}`, `{"a":fals}`, `{"a":True}`, `{"a":NaN}`,
		`{"a":Infinity}`, `{"a":"`, `{"a":"abc`, `{"a":"\`, `{"a":"\x"}`, `{"a":"\u12"}`,
		`{"a":"\u12g4"}`, `{"a":"\U0041"}`, `{"a":"\'"}`, "{\"a\":\"\x01\"}", "{\"a\":\"\n\"}",
		"{\"a\":\"\x1f\"}", "{\"\t\":1}", `{"a":1`, `{"a":[1`, `{"a":{"b":1}`, "{\"a\":1}\x00",
		"{\"a\":\x0b1}", "\x0c{}", `{"a":"\u00"}`, `{"a"::1}`, `{"a":1:2}`,
	}
	for _, in := range valid {
		if !json.Valid([]byte(in)) {
			t.Fatalf("test bug: %q is not valid", in)
		}
		if _, err := scanT(t, in, Limits{}); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	for _, in := range invalid {
		if json.Valid([]byte(in)) {
			t.Fatalf("test bug: %q is valid", in)
		}
		_, err := scanT(t, in, Limits{})
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrSyntax && !(e.Kind == ErrNotObject && in[0] != '{') {
			t.Errorf("%q: err = %v, want a syntax error", in, err)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		lim  Limits
		kind ErrorKind
		off  int
		msg  string
	}{
		{``, Limits{}, ErrSyntax, 0, "request body is not valid JSON at offset 0: unexpected end of input, expected '{'"},
		{`  `, Limits{}, ErrSyntax, 2, "request body is not valid JSON at offset 2: unexpected end of input, expected '{'"},
		{`[]`, Limits{}, ErrNotObject, 0, "request body must be a JSON object"},
		{` "x"`, Limits{}, ErrNotObject, 1, "request body must be a JSON object"},
		{`null`, Limits{}, ErrNotObject, 0, "request body must be a JSON object"},
		{`{"a":x}`, Limits{}, ErrSyntax, 5, "request body is not valid JSON at offset 5: unexpected 'x', expected value"},
		{`{"a":01}`, Limits{}, ErrSyntax, 5, "request body is not valid JSON at offset 5: number with a leading zero"},
		{`{"a":1.}`, Limits{}, ErrSyntax, 7, "request body is not valid JSON at offset 7: unexpected '}', expected digit after decimal point"},
		{"{\"a\":\"\x00\"}", Limits{}, ErrSyntax, 6, "request body is not valid JSON at offset 6: control character byte 0x0 in string"},
		{`{"a":"\q"}`, Limits{}, ErrSyntax, 6, `request body is not valid JSON at offset 6: invalid escape \'q'`},
		{`{"a":"\u00zz"}`, Limits{}, ErrSyntax, 6, `request body is not valid JSON at offset 6: invalid \u escape`},
		{`{"a":1]`, Limits{}, ErrSyntax, 6, `request body is not valid JSON at offset 6: unexpected ']', expected ',' or '}'`},
		{`{"a":[1}`, Limits{}, ErrSyntax, 7, `request body is not valid JSON at offset 7: unexpected '}', expected ',' or ']'`},
		{`{} {`, Limits{}, ErrSyntax, 3, `request body is not valid JSON at offset 3: unexpected '{', expected end of input after the top-level object`},
		{"{\"a\":\xc3}", Limits{}, ErrSyntax, 5, `request body is not valid JSON at offset 5: unexpected byte 0xc3, expected value`},
		{`{"a":[[[]]]}`, Limits{MaxDepth: 3}, ErrTooDeep, 7, "request body nests deeper than 3 levels"},
		{`{"a":[1,2,3]}`, Limits{MaxValues: 4}, ErrTooMany, 10, "request body has more than 4 JSON values"},
	} {
		_, err := scanT(t, tc.in, tc.lim)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: err = %v", tc.in, err)
			continue
		}
		if e.Kind != tc.kind || e.Offset != tc.off || e.Error() != tc.msg {
			t.Errorf("%q: got kind %d offset %d %q\nwant kind %d offset %d %q", tc.in, e.Kind, e.Offset, e.Error(), tc.kind, tc.off, tc.msg)
		}
	}
}

// An error message quotes at most one byte of the body.
func TestErrorEchoesLittle(t *testing.T) {
	secret := strings.Repeat("S", 100)
	for _, in := range []string{`{"` + secret, `{"a":` + secret, `{"a":"` + secret + "\x01", `{"a":"\` + secret} {
		_, err := scanT(t, in, Limits{})
		if err == nil || strings.Contains(err.Error(), "SS") || len(err.Error()) > 120 {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestLimits(t *testing.T) {
	nest := func(n int) string { // depth n+1 with the top-level object
		return `{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	for _, tc := range []struct {
		in          string
		lim         Limits
		kind        ErrorKind // 0: no error
		depth, vals int
	}{
		{`{}`, Limits{MaxDepth: 1, MaxValues: 1}, 0, 1, 1},
		{`{"a":1}`, Limits{MaxDepth: 1, MaxValues: 2}, 0, 1, 2},
		{`{"a":1}`, Limits{MaxValues: 1}, ErrTooMany, 0, 0},
		{`{"a":{}}`, Limits{MaxDepth: 1}, ErrTooDeep, 0, 0},
		{nest(127), Limits{MaxDepth: 128}, 0, 128, 128},
		{nest(128), Limits{MaxDepth: 128}, ErrTooDeep, 0, 0},
		{nest(1023), Limits{MaxDepth: 1024}, 0, 1024, 1024},
		{nest(1024), Limits{MaxDepth: 1024}, ErrTooDeep, 0, 0},
		{nest(5000), Limits{}, 0, 5001, 5001},
		{nest(5000), Limits{MaxDepth: -1}, 0, 5001, 5001},
		{`{"a":[` + strings.Repeat(`1,`, 999) + `1]}`, Limits{MaxValues: 1002}, 0, 2, 1002},
		{`{"a":[` + strings.Repeat(`1,`, 999) + `1]}`, Limits{MaxValues: 1001}, ErrTooMany, 0, 0},
		{`{"a":[` + strings.Repeat(`{},`, 999) + `[]]}`, Limits{MaxValues: 1002}, 0, 3, 1002},
		{`{"a":[` + strings.Repeat(`{},`, 999) + `[]]}`, Limits{MaxValues: 1001}, ErrTooMany, 0, 0},
		{`{"a":{"b":"c","d":[null,true]}}`, Limits{MaxValues: 6, MaxDepth: 3}, 0, 3, 6},
	} {
		res, err := scanT(t, tc.in, tc.lim)
		var e *Error
		switch {
		case tc.kind == 0 && err != nil:
			t.Errorf("%.40q: %v", tc.in, err)
		case tc.kind != 0 && (!errors.As(err, &e) || e.Kind != tc.kind):
			t.Errorf("%.40q: err = %v, want kind %d", tc.in, err, tc.kind)
		case tc.kind == 0 && (res.Depth != tc.depth || res.Count != tc.vals):
			t.Errorf("%.40q: depth %d count %d, want %d %d", tc.in, res.Depth, res.Count, tc.depth, tc.vals)
		}
	}
}

// A reused Result keeps the stack grown for a deep document, and the next
// documents see a clean state.
func TestReuse(t *testing.T) {
	var res Result
	deep := []byte(`{"a":` + strings.Repeat(`[{"b":`, 3000) + `{}` + strings.Repeat(`}]`, 3000) + `}`)
	for range 3 {
		if err := Scan(deep, testSpec, Limits{}, &res); err != nil || res.Depth != 6002 {
			t.Fatal(err, res.Depth)
		}
		bad := []byte(`{"a":` + strings.Repeat(`[{"b":`, 3000) + `{}` + strings.Repeat(`]}`, 3000) + `}`)
		if err := Scan(bad, testSpec, Limits{}, &res); err == nil {
			t.Fatal("mismatched brackets accepted")
		}
		if err := Scan([]byte(`{"model":"m"}`), testSpec, Limits{}, &res); err != nil || res.Found != 1 || res.Depth != 1 || res.Count != 2 {
			t.Fatal(err, res.Found)
		}
	}
}

func TestExtract(t *testing.T) {
	// want maps paths to the raw text found, or to "!" for absent ones.
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{`{"model":"qwen3","stream":true,"stream_options":{"include_usage":false},"max_tokens":100}`,
			map[string]string{"model": `"qwen3"`, "stream": `true`, "stream_options.include_usage": `false`,
				"max_tokens": `100`, "stream_options": `{"include_usage":false}`, "messages": "!"}},
		{` { "model" : "m" , "messages" : [ {"model":"inner"} ] , "options" : { "num_predict" : -1 } } `,
			map[string]string{"model": `"m"`, "messages": `[ {"model":"inner"} ]`, "options.num_predict": `-1`}},
		// Last wins, and a repeated key replaces what was under it.
		{`{"model":"a","model":"b"}`, map[string]string{"model": `"b"`}},
		{`{"model":"a","model":null}`, map[string]string{"model": `null`}},
		{`{"stream_options":{"include_usage":true},"stream_options":{}}`,
			map[string]string{"stream_options": `{}`, "stream_options.include_usage": "!"}},
		{`{"stream_options":{"include_usage":true},"stream_options":null}`,
			map[string]string{"stream_options": `null`, "stream_options.include_usage": "!"}},
		{`{"stream_options":{"include_usage":true,"include_usage":1}}`,
			map[string]string{"stream_options.include_usage": `1`}},
		{`{"stream_options":{"include_usage":true},"stream_options":{"x":{"include_usage":false}}}`,
			map[string]string{"stream_options.include_usage": "!"}},
		// Escaped keys match; similar keys do not.
		{`{"mo\u0064el":"x","\u0073tream":false,"max_tokens ":1,"Max_tokens":2,"max_token":3}`,
			map[string]string{"model": `"x"`, "stream": `false`, "max_tokens": "!"}},
		{`{"stream\u005foptions":{"include\/usage":1,"include_usage":2}}`,
			map[string]string{"stream_options.include_usage": `2`}},
		// Paths go through objects only, at any depth up to 4 keys.
		{`{"stream_options":[{"include_usage":true}],"options":"num_predict"}`,
			map[string]string{"stream_options": `[{"include_usage":true}]`, "stream_options.include_usage": "!", "options.num_predict": "!"}},
		{`{"a":{"b":{"c":{"d":[1,{"e":2}]}}}}`,
			map[string]string{"a.b.c.d": `[1,{"e":2}]`, "a.b": `{"c":{"d":[1,{"e":2}]}}`}},
		{`{"a":{"b":{"c":{"d":"\u00e9"}},"b":{"c":{"d":{}}}}}`,
			map[string]string{"a.b.c.d": `{}`, "a.b": `{"c":{"d":{}}}`}},
		{`{"x":{"model":"no","a":{"b":1}},"a":{"x":{"b":2}}}`,
			map[string]string{"model": "!", "a.b": "!"}},
		{`{"a":{"b":{"c":{"d":1}}},"a":{"b":{"c":{"e":1}}}}`,
			map[string]string{"a.b.c.d": "!", "a.b": `{"c":{"e":1}}`}},
		{`{"messages":[],"model":"` + strings.Repeat(`\"`, 100) + `"}`,
			map[string]string{"messages": `[]`, "model": `"` + strings.Repeat(`\"`, 100) + `"`}},
	} {
		res, err := scanT(t, tc.in, Limits{})
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		for path, want := range tc.want {
			v, ok := res.Get(testSpec.Index(path))
			got := "!"
			if ok {
				got = string(v.Raw([]byte(tc.in)))
			}
			if got != want {
				t.Errorf("%s: %s = %s, want %s", tc.in, path, got, want)
			}
		}
	}
}

func TestValueKinds(t *testing.T) {
	body := []byte(`{"model":"m\n","stream":true,"max_tokens":-12,"max_completion_tokens":null,"max_output_tokens":false,"stream_options":{},"messages":[]}`)
	var res Result
	if err := Scan(body, testSpec, Limits{}, &res); err != nil {
		t.Fatal(err)
	}
	want := map[string]Kind{"model": String, "stream": True, "max_tokens": Number, "max_completion_tokens": Null,
		"max_output_tokens": False, "stream_options": Object, "messages": Array}
	for path, k := range want {
		if v, ok := res.Get(testSpec.Index(path)); !ok || v.Kind != k {
			t.Errorf("%s: %+v %v, want %v", path, v, ok, k)
		}
	}
	if v, _ := res.Get(0); !v.Escaped {
		t.Error("model not Escaped")
	}
	if v, _ := res.Get(1); v.Escaped {
		t.Error("stream Escaped")
	}
	if _, ok := res.Get(-1); ok {
		t.Error("Get(-1)")
	}
	if _, ok := res.Get(16); ok {
		t.Error("Get(16)")
	}
	if String.String() != "string" || Kind(99).String() != "Kind(99)" {
		t.Error("Kind.String")
	}
}

func TestNilSpec(t *testing.T) {
	var res Result
	if err := Scan([]byte(`{"model":"x"}`), nil, Limits{}, &res); err != nil || res.Found != 0 || res.Count != 2 {
		t.Fatal(err, res)
	}
	if err := Scan([]byte(`{"model":"x"}`), MustSpec(), Limits{}, &res); err != nil || res.Found != 0 {
		t.Fatal(err, res)
	}
}

func TestNewSpec(t *testing.T) {
	for _, paths := range [][]string{
		{""}, {"a..b"}, {"a."}, {".a"}, {"a.b.c.d.e"}, {"a", "a"}, {"a.b", "a.b"},
		{strings.Repeat("k", 65)}, {"\xff"}, {"a\uFFFDb"},
		strings.Split("a b c d e f g h i j k l m n o p q", " "),
	} {
		if _, err := NewSpec(paths...); err == nil {
			t.Errorf("NewSpec(%q) succeeded", paths)
		}
	}
	s, err := NewSpec(strings.Split("a b c d e f g h i j k l m n o p.q.r."+strings.Repeat("k", 64), " ")...)
	if err != nil || s.Len() != 16 || s.Path(15) != "p.q.r."+strings.Repeat("k", 64) || s.Index("c") != 2 || s.Index("z") != -1 {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustSpec did not panic")
		}
	}()
	MustSpec("")
}

func TestBoolInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int64
		ok   bool
		kind Kind
	}{
		{`0`, 0, true, Number}, {`-0`, 0, true, Number}, {`42`, 42, true, Number}, {`-7`, -7, true, Number},
		{`2.0`, 2, true, Number}, {`1e3`, 1000, true, Number}, {`1E+2`, 100, true, Number}, {`-1.5e1`, -15, true, Number},
		{`1.5`, 0, false, Number}, {`1e-1`, 0, false, Number}, {`0.1e1`, 1, true, Number},
		{`9223372036854775807`, math.MaxInt64, true, Number},
		{`-9223372036854775808`, math.MinInt64, true, Number},
		{`9223372036854775808`, 0, false, Number},
		{`-9223372036854775809`, math.MinInt64, true, Number}, // rounds to -2^63 as a float, as in the plugins
		{`18446744073709551616`, 0, false, Number}, {`99999999999999999999`, 0, false, Number},
		{`1e19`, 0, false, Number}, {`1e400`, 0, false, Number}, {`9007199254740993`, 9007199254740993, true, Number},
		{`"1"`, 0, false, String}, {`true`, 0, false, True}, {`null`, 0, false, Null},
	} {
		body := []byte(`{"max_tokens":` + tc.in + `}`)
		var res Result
		if err := Scan(body, testSpec, Limits{}, &res); err != nil {
			t.Fatal(err)
		}
		v, _ := res.Get(3)
		if v.Kind != tc.kind {
			t.Errorf("%s: kind %v", tc.in, v.Kind)
		}
		if n, ok := v.Int(body); n != tc.n || ok != tc.ok {
			t.Errorf("Int(%s) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
	}
	for _, tc := range []struct {
		v       Value
		val, ok bool
	}{{Value{Kind: True}, true, true}, {Value{Kind: False}, false, true}, {Value{Kind: Null}, false, false}, {Value{Kind: String}, false, false}} {
		if val, ok := tc.v.Bool(); val != tc.val || ok != tc.ok {
			t.Errorf("%v.Bool() = %v, %v", tc.v.Kind, val, ok)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, in := range []string{
		`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u0000\u001f\u007f\u0080\u00e9\u20AC\uffff"`,
		`"\uD83D\uDE00 \ud83d\ude00"`, `"\ud800"`, `"\udc00"`, `"\ud800x"`, `"\ud800\u0041"`,
		`"\ud800\ud800\udc00"`, `"\udc00\ud800"`, `"a\ud800"`, `"\ud800\n"`,
		"\"\xff\xfe\"", "\"a\xc3(b\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"é\\u00e9\xe9\"",
		`"qwen\u0000stream"`, `"` + strings.Repeat(`ab\n`, 100) + `"`,
	} {
		body := []byte(`{"model":` + in + `}`)
		var res Result
		if err := Scan(body, testSpec, Limits{}, &res); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		v, _ := res.Get(0)
		got, err := AppendString([]byte("pre"), body, v)
		var want string
		if jerr := json.Unmarshal([]byte(in), &want); err != nil || jerr != nil || string(got) != "pre"+want {
			t.Errorf("%s: got %q, %v; want %q, %v", in, got, err, want, jerr)
		}
	}
	if _, err := AppendString(nil, []byte(`1`), Value{Kind: Number, End: 1}); err == nil {
		t.Error("AppendString of a number")
	}
}

func TestHasControl(t *testing.T) {
	for in, want := range map[string]bool{
		"": false, "qwen3-8b": false, "qwen\x00stream": true, "a\nb": true, "\x1f": true, "\x7f": true,
		"\u0080": true, "\u009f": true, "\u00a0": false, "é": false, "漢字": false, "\xc2": false, "\xc2\xa9": false,
		"\u2028": false, "x\t": true,
	} {
		if got := HasControl([]byte(in)); got != want {
			t.Errorf("HasControl(%q) = %v", in, got)
		}
	}
}

// A 1M-deep document is refused at the limit in no time, and without a
// limit it is checked with a heap-held bitset, not goroutine stack: the
// goroutine's stack is capped at 1 MiB here (recursing would take tens).
func TestDeepNesting(t *testing.T) {
	const n = 1 << 20
	body := make([]byte, 0, 2*n+10)
	body = append(body, `{"a":`...)
	for range n {
		body = append(body, '[')
	}
	open := len(body)
	for range n {
		body = append(body, ']')
	}
	body = append(body, '}')

	defer debug.SetMaxStack(debug.SetMaxStack(1 << 20))
	done := make(chan struct{})
	var errLimited, errOpen, errFull error
	var res Result
	start := time.Now()
	go func() { // a fresh goroutine, with a small stack
		defer close(done)
		errLimited = Scan(body, nil, Limits{MaxDepth: 128}, &res)
		errOpen = Scan(body[:open], nil, Limits{}, &res)
		errFull = Scan(body, nil, Limits{}, &res)
	}()
	<-done
	var e *Error
	if !errors.As(errLimited, &e) || e.Kind != ErrTooDeep || e.Offset != 5+127 {
		t.Errorf("limited: %v", errLimited)
	}
	if !errors.As(errOpen, &e) || e.Kind != ErrSyntax || e.Offset != open {
		t.Errorf("unclosed: %v", errOpen)
	}
	if errFull != nil || res.Depth != n+1 || res.Count != n+1 {
		t.Errorf("unlimited: %v, depth %d count %d", errFull, res.Depth, res.Count)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
