package jsonr

import (
	"testing"

	"github.com/valyala/fastjson"
)

func parse(t testing.TB, s string) *fastjson.Value {
	t.Helper()
	v, err := fastjson.Parse(s)
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

const chat = `{"model":"m","max_tokens":16,"stream":true,"temperature":0.5,
 "messages":[
  {"role":"system","content":"be brief"},
  {"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"http://x/a.png"}}]}
 ],
 "stop":["a","b"],"metadata":{"k":true,"odd key":null},"response_format":{"type":"json_schema","schema":{"a" : [1, 2]}}}`

func TestHappyPath(t *testing.T) {
	r := New(parse(t, chat))
	if got := r.String("model"); got != "m" {
		t.Errorf("model = %q", got)
	}
	if n, ok := r.OptInt("max_tokens", 1, 1<<20); !ok || n != 16 {
		t.Errorf("max_tokens = %d, %v", n, ok)
	}
	if n, ok := r.OptInt("n", 1, 8); ok || n != 0 {
		t.Errorf("absent n = %d, %v", n, ok)
	}
	if !r.Bool("stream") || r.Float("temperature") != 0.5 {
		t.Error("stream or temperature")
	}
	msgs := r.Array("messages")
	if msgs.Len() != 2 {
		t.Fatalf("len = %d", msgs.Len())
	}
	var roles []string
	for i, m := range msgs.All() {
		roles = append(roles, m.String("role"))
		if i == 0 && m.String("content") != "be brief" {
			t.Error("content 0")
		}
	}
	if len(roles) != 2 || roles[0] != "system" || roles[1] != "user" {
		t.Errorf("roles %q", roles)
	}
	if u := msgs.At(1).Array("content").At(1).Object("image_url").String("url"); u != "http://x/a.png" {
		t.Errorf("url %q", u)
	}
	stop := r.OptArray("stop")
	if stop.Len() != 2 || stop.At(1).AsString() != "b" {
		t.Error("stop")
	}
	if got := string(r.Object("response_format").Raw(nil, "schema")); got != `{"a":[1,2]}` {
		t.Errorf("raw %s", got)
	}
	if o := r.OptObject("tools"); o.Exists() || o.String("x") != "" {
		t.Error("absent optional object must read as empty without error")
	}
	var keys []string
	r.Object("metadata").Visit(func(k []byte, v Value) { keys = append(keys, string(k)) })
	if len(keys) != 2 {
		t.Errorf("keys %q", keys)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		read      func(r Value)
		want      string
	}{
		{"required", `{"messages":[{"content":"x"}]}`,
			func(r Value) { r.Array("messages").At(0).String("role") }, "messages[0].role: required"},
		{"deep type", `{"messages":[{},{},{},{"content":[{},{"image_url":5}]}]}`,
			func(r Value) {
				for _, m := range r.Array("messages").All() {
					m.OptArray("content").At(1).Object("image_url").String("url")
				}
			}, "messages[3].content[1].image_url: expected object, got number"},
		{"string got number", `{"a":{"b":[1,2,{"c":7}]}}`,
			func(r Value) { r.Object("a").Array("b").At(2).String("c") }, "a.b[2].c: expected string, got number"},
		{"shared true node", `{"a":true,"b":[true,true]}`,
			func(r Value) { r.Bool("a"); r.Array("b").At(1).AsString() }, "b[1]: expected string, got boolean"},
		{"shared null node", `{"a":null,"b":null}`,
			func(r Value) { r.OptString("a"); r.String("b") }, "b: expected string, got null"},
		{"int range", `{"n":500}`,
			func(r Value) { r.Int("n", 1, 128) }, "n: expected an integer from 1 to 128, got 500"},
		{"int fraction", `{"n":1.5}`,
			func(r Value) { r.OptInt("n", 0, 10) }, "n: expected an integer, got 1.5"},
		{"float not finite", `{"t":1e999}`,
			func(r Value) { r.OptFloat("t") }, "t: expected a finite number, got"},
		{"root not object", `[1]`,
			func(r Value) { r.String("model") }, "expected object, got array"},
		{"odd key", `{"a b":{"c.d":"x"}}`,
			func(r Value) { r.Object("a b").Int("c.d", 0, 1) }, `["a b"]["c.d"]: expected integer, got string`},
		{"index past end", `{"content":[{}]}`,
			func(r Value) { r.Array("content").At(1).String("x") }, "content: expected at least 2 elements, got 1"},
		{"fail on absent key", `{"o":{}}`,
			func(r Value) { r.Object("o").Opt("role").Fail("must be user or assistant") }, "o.role: must be user or assistant"},
		{"visit values", `{"m":{"k1":1,"k2":"x"}}`,
			func(r Value) { r.Object("m").Visit(func(_ []byte, v Value) { v.AsInt(0, 9) }) }, "m.k2: expected integer, got string"},
		{"first error wins", `{"a":1,"b":2}`,
			func(r Value) { r.String("a"); r.String("b") }, "a: expected string, got number"},
		{"bool", `{"s":"true"}`,
			func(r Value) { r.Bool("s") }, "s: expected boolean, got string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := New(parse(t, tc.doc))
			tc.read(r)
			err := r.Err()
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if got := err.Error(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}

// After an error every getter reads zero, so code after a mistake cannot
// act on half-read input; All stops iterating.
func TestAfterError(t *testing.T) {
	r := New(parse(t, `{"a":1,"b":"x","l":[1,2,3]}`))
	r.String("a")
	if r.String("b") != "" {
		t.Error("read after error")
	}
	n := 0
	for range r.OptArray("l").All() {
		n++
	}
	if n != 0 {
		t.Errorf("iterated %d elements after an error", n)
	}
}

func TestReaderReset(t *testing.T) {
	var rd Reader
	r := rd.Reset(parse(t, `{"a":1}`))
	r.String("a")
	if rd.Err() == nil {
		t.Fatal("want error")
	}
	r = rd.Reset(parse(t, `{"a":"x"}`))
	if r.String("a") != "x" || rd.Err() != nil {
		t.Fatal("Reset must clear the error")
	}
}

func TestZeroValue(t *testing.T) {
	var v Value
	if v.String("x") != "" || v.Err() != nil || v.Array("y").Len() != 0 {
		t.Error("zero Value must read as absent")
	}
	v.Fail("ignored")
}

func TestNoAllocs(t *testing.T) {
	var p fastjson.Parser
	doc, err := p.Parse(chat)
	if err != nil {
		t.Fatal(err)
	}
	var rd Reader
	n := testing.AllocsPerRun(100, func() { readChat(rd.Reset(doc)) })
	if n != 0 {
		t.Errorf("%v allocations per read, want 0", n)
	}
	// New's Reader is the one allocation it may cost.
	n = testing.AllocsPerRun(100, func() { readChat(New(doc)) })
	if n > 1 {
		t.Errorf("New: %v allocations per read, want at most 1", n)
	}
}

// readChat reads every field of chat without copying strings.
func readChat(r Value) int {
	n := len(r.Bytes("model"))
	if m, ok := r.OptInt("max_tokens", 1, 1<<20); ok {
		n += m
	}
	r.Bool("stream")
	r.OptFloat("temperature")
	for _, m := range r.Array("messages").All() {
		n += len(m.Bytes("role"))
		c := m.Get("content")
		if c.Type() == fastjson.TypeString {
			n += len(c.AsBytes())
			continue
		}
		for _, part := range c.AsArray().All() {
			switch string(part.Bytes("type")) {
			case "text":
				n += len(part.Bytes("text"))
			case "image_url":
				n += len(part.Object("image_url").Bytes("url"))
			}
		}
	}
	for _, s := range r.OptArray("stop").All() {
		n += len(s.AsBytes())
	}
	if r.Err() != nil {
		panic(r.Err())
	}
	return n
}

func BenchmarkRead(b *testing.B) {
	var p fastjson.Parser
	doc, err := p.Parse(chat)
	if err != nil {
		b.Fatal(err)
	}
	var rd Reader
	b.ReportAllocs()
	for b.Loop() {
		readChat(rd.Reset(doc))
	}
}

// BenchmarkFastjson is the same read with bare fastjson calls and no
// paths, for comparison.
func BenchmarkFastjson(b *testing.B) {
	var p fastjson.Parser
	doc, err := p.Parse(chat)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		n := len(doc.GetStringBytes("model")) + doc.GetInt("max_tokens")
		doc.GetBool("stream")
		doc.GetFloat64("temperature")
		for _, m := range doc.GetArray("messages") {
			n += len(m.GetStringBytes("role"))
			c := m.Get("content")
			if c.Type() == fastjson.TypeString {
				s, _ := c.StringBytes()
				n += len(s)
				continue
			}
			for _, part := range c.GetArray() {
				switch string(part.GetStringBytes("type")) {
				case "text":
					n += len(part.GetStringBytes("text"))
				case "image_url":
					n += len(part.GetStringBytes("image_url", "url"))
				}
			}
		}
		for _, s := range doc.GetArray("stop") {
			sb, _ := s.StringBytes()
			n += len(sb)
		}
		_ = n
	}
}
