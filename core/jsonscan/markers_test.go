package jsonscan

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// markSpec has markers of every form, some sharing a key or a path.
var markSpec = mustSpecMarkers([]string{"model", "stream"}, []string{
	"*.type=image_url",                 // 0
	"*.images",                         // 1
	"tools",                            // 2
	"response_format.type=json_schema", // 3
	"response_format.type=json_object", // 4
	"format",                           // 5
	"*.type=input_image",               // 6
	"model=m",                          // 7: a marker on a caller's path
	"*.a",                              // 8
})

func mustSpecMarkers(paths, markers []string) *Spec {
	s, err := NewSpecMarkers(paths, markers)
	if err != nil {
		panic(err)
	}
	return s
}

func TestScan_Markers(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       uint16
	}{
		{"none", `{"model":"x","messages":[{"role":"user","content":"hi"}]}`, 0},
		{"image part", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:"}}]}]}`, 1 << 0},
		{"escaped key and value", `{"messages":[{"content":[{"t\u0079pe":"image\u005furl"}]}]}`, 1 << 0},
		{"other type value", `{"messages":[{"content":[{"type":"image_urls"}]}]}`, 0},
		{"type as a string, not a key", `{"content":"\"type\":\"image_url\""}`, 0},
		{"images non-empty at depth", `{"messages":[{"images":["aGk="]}]}`, 1 << 1},
		{"images top level", `{"images":["aGk="]}`, 1 << 1},
		{"images empty", `{"images":[],"messages":[{"images":[ ]},{"images":null},{"images":""},{"images":{}},{"images":false}]}`, 0},
		{"images string", `{"images":"x"}`, 1 << 1},
		{"tools", `{"tools":[{"type":"function"}]}`, 1 << 2},
		{"tools empty", `{"tools":[]}`, 0},
		{"tools not top level", `{"x":{"tools":[1]}}`, 0},
		{"tools duplicate: the last wins", `{"tools":[1],"tools":[]}`, 0},
		{"schema", `{"response_format":{"type":"json_schema","json_schema":{"type":"object"}}}`, 1 << 3},
		{"json object", `{"response_format":{"type":"json_object"}}`, 1 << 4},
		{"text format", `{"response_format":{"type":"text"}}`, 0},
		{"format string", `{"format":"json"}`, 1 << 5},
		{"format schema", `{"format":{"type":"object"}}`, 1 << 5},
		{"format null", `{"format":null}`, 0},
		{"format empty", `{"format":""}`, 0},
		{"input image", `{"input":[{"content":[{"type":"input_image","image_url":"x"}]}]}`, 1 << 6},
		{"caller's path", `{"model":"m"}`, 1 << 7},
		{"scalars", `{"x":[{"a":0},{"a":-1}]}`, 1 << 8},
		{"true", `{"a":true}`, 1 << 8},
		{"false", `{"a":false,"b":{"a":null}}`, 0},
		{"all", `{"model":"m","tools":[1],"format":1,"response_format":{"type":"json_schema"},"m":[{"type":"image_url","images":[1],"x":{"type":"input_image"}}]}`,
			1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res Result
			if err := Scan([]byte(tc.body), markSpec, Limits{}, &res); err != nil {
				t.Fatal(err)
			}
			if res.Marks != tc.want {
				t.Errorf("Marks = %#b, want %#b", res.Marks, tc.want)
			}
			if got := refMarks(t, []byte(tc.body)); got != tc.want {
				t.Errorf("reference = %#b, want %#b (the test is wrong)", got, tc.want)
			}
		})
	}
}

func TestScan_MarkersCallerPaths(t *testing.T) {
	// Markers' hidden paths leave the caller's indexes and Len alone.
	if markSpec.Len() != 2 || markSpec.Index("tools") != -1 {
		t.Fatalf("Len %d, Index(tools) %d", markSpec.Len(), markSpec.Index("tools"))
	}
	var res Result
	body := []byte(`{"tools":[1],"stream":true,"model":"q"}`)
	if err := Scan(body, markSpec, Limits{}, &res); err != nil {
		t.Fatal(err)
	}
	if v, ok := res.Get(1); !ok || v.Kind != True {
		t.Errorf("stream: %v %v", v, ok)
	}
	// A refused body reports no marks.
	if err := Scan([]byte(`{"tools":[1],"a":tru}`), markSpec, Limits{}, &res); err == nil || res.Marks != 0 {
		t.Errorf("bad body: %v, Marks %#b", err, res.Marks)
	}
	if err := Scan([]byte(`{"tools":[1],"x":[[[1]]]}`), markSpec, Limits{MaxDepth: 3}, &res); err == nil || res.Marks != 0 {
		t.Errorf("too deep: %v, Marks %#b", err, res.Marks)
	}
}

func TestNewSpecMarkers_Errors(t *testing.T) {
	many := make([]string, MaxMarkers+1)
	for i := range many {
		many[i] = "*.k"
	}
	paths := make([]string, MaxPaths)
	for i := range paths {
		paths[i] = "p" + strings.Repeat("x", i)
	}
	for _, tc := range []struct {
		name           string
		paths, markers []string
		want           string
	}{
		{"too many markers", nil, many, "more than 16 markers"},
		{"empty value", nil, []string{"a="}, "invalid value"},
		{"long value", nil, []string{"a=" + strings.Repeat("v", MaxKeyLen+1)}, "invalid value"},
		{"dotted any key", nil, []string{"*.a.b"}, "invalid key"},
		{"empty any key", nil, []string{"*."}, "invalid key"},
		{"bad path", nil, []string{"a..b"}, "invalid key"},
		{"deep path", nil, []string{"a.b.c.d.e"}, "more than 4 keys"},
		{"paths budget", paths, []string{"tools"}, "more than 16 paths"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSpecMarkers(tc.paths, tc.markers)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// A marker on one of the 16 paths costs no path.
	if _, err := NewSpecMarkers(paths, []string{"p=x", "px"}); err != nil {
		t.Error(err)
	}
}

// FuzzMarkers checks Marks against refMarks, a reference built on
// encoding/json.
func FuzzMarkers(f *testing.F) {
	for _, s := range []string{
		`{"tools":[1],"response_format":{"type":"json_schema"},"m":[{"type":"image_url","images":[1]}]}`,
		`{"t\u0079pe":"image\u005furl","images":[ ],"format":null}`, `{"a":{"a":{"a":0}},"format":{}}`,
		`{"tools":[1],"tools":[],"model":"m","model":"n"}`, "{\"type\":\"image_url\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res Result
		if Scan(data, markSpec, Limits{}, &res) != nil {
			return
		}
		if dupKeys(data) {
			return // the reference's maps keep the last of duplicate keys
		}
		if want := refMarks(t, data); res.Marks != want {
			t.Fatalf("%q: Marks %#b, want %#b", data, res.Marks, want)
		}
	})
}

// refMarks computes markSpec's marks with encoding/json.
func refMarks(t *testing.T, data []byte) uint16 {
	var m uint16
	// Any-depth markers: walk the tokens.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct{ obj, wantKey bool }
	var st []frame
	key := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		isKey := len(st) > 0 && st[len(st)-1].obj && st[len(st)-1].wantKey
		if len(st) > 0 && st[len(st)-1].obj {
			st[len(st)-1].wantKey = !st[len(st)-1].wantKey
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			st = st[:len(st)-1]
			if len(st) > 0 && st[len(st)-1].obj {
				st[len(st)-1].wantKey = true
			}
			continue
		}
		if isKey {
			key = tok.(string)
			continue
		}
		var v any = tok
		if d, ok := tok.(json.Delim); ok {
			st = append(st, frame{obj: d == '{', wantKey: true})
			v = map[string]any{} // judged by whether a member follows
			if dec.More() {
				v = []any{1}
			}
		}
		switch key {
		case "type":
			m |= refCond(v, "image_url", 1<<0) | refCond(v, "input_image", 1<<6)
		case "images":
			m |= refCond(v, "", 1<<1)
		case "a":
			m |= refCond(v, "", 1<<8)
		}
		key = ""
	}
	// Path markers: the decoded object.
	var top map[string]any
	dec = json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		t.Fatalf("reference: %v", err)
	}
	at := func(path string) any {
		var v any = top
		for _, k := range strings.Split(path, ".") {
			o, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = o[k]
		}
		return v
	}
	m |= refCond(at("tools"), "", 1<<2) | refCond(at("response_format.type"), "json_schema", 1<<3) |
		refCond(at("response_format.type"), "json_object", 1<<4) | refCond(at("format"), "", 1<<5) |
		refCond(at("model"), "m", 1<<7)
	return m
}

// refCond returns bit when v is the string want, or, want being "",
// when v is non-empty.
func refCond(v any, want string, bit uint16) uint16 {
	ok := false
	switch v := v.(type) {
	case string:
		ok = want == "" && v != "" || want != "" && v == want
	case json.Number:
		ok = want == ""
	case bool:
		ok = want == "" && v
	case []any:
		ok = want == "" && len(v) > 0
	case map[string]any:
		ok = want == "" && len(v) > 0
	}
	if ok {
		return bit
	}
	return 0
}

// dupKeys reports whether an object in data repeats a key.
func dupKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj, wantKey bool
		keys         map[string]bool
	}
	var st []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if len(st) > 0 && st[len(st)-1].obj {
			f := st[len(st)-1]
			if f.wantKey {
				if d, ok := tok.(json.Delim); !ok || d != '}' {
					k := tok.(string)
					if f.keys[k] {
						return true
					}
					f.keys[k] = true
					f.wantKey = false
					continue
				}
			}
			f.wantKey = true
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '}' || d == ']' {
				st = st[:len(st)-1]
				continue
			}
			st = append(st, &frame{obj: d == '{', wantKey: true, keys: map[string]bool{}})
		}
	}
}
