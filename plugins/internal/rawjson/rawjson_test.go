package rawjson

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fastjson"
)

func TestAppendCompact(t *testing.T) {
	for in, want := range map[string]string{
		`{ "a" : [1, 2.5e3, -0, true, false, null], "b\u00e9" : "x\"\u0001\ud83c\udf89" }`: `{"bé":"x\"\u0001🎉","a":[1,2.5e3,-0,true,false,null]}`,
		`[]`:         `[]`,
		`{"n":1e}`:   `{"n":null}`,
		`{"n":+1}`:   `{"n":1}`,
		`"\u2028"`:   `"\u2028"`,
		`{"c":null}`: `{"c":null}`,
	} {
		v, err := fastjson.Parse(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got := AppendCompact(nil, v)
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON %s", in, got)
		}
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal([]byte(want), &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

func FuzzAppendCompact(f *testing.F) {
	f.Add(`{"content":[{"token":"Hi","logprob":-0.3,"bytes":[72,105],"top_logprobs":[]}]}`)
	f.Add(`{"a":"\ud800"}`)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := fastjson.Parse(s)
		if err != nil {
			return
		}
		if got := AppendCompact(nil, v); !json.Valid(got) {
			t.Fatalf("%q gave invalid JSON %q", s, got)
		}
	})
}
