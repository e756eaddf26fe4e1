package abi

import (
	"bytes"
	"testing"
)

func buildCall(flags uint32, state, meta, payload []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(state)+len(meta)+len(payload))
	PutHeader(b, Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(meta)), PayloadLen: uint32(len(payload)), RequestID: 42})
	b = append(b, state...)
	b = append(b, meta...)
	return append(b, payload...)
}

func TestParseCall_RoundTrip(t *testing.T) {
	meta := AppendMeta(AppendMeta(nil, "route", "chat"), "id", "x")
	in := buildCall(FlagFirst|FlagEnd, []byte("st"), meta, []byte(`{"a":1}`))
	h, st, m, p, err := ParseCall(in)
	if err != nil {
		t.Fatal(err)
	}
	if h.Flags != FlagFirst|FlagEnd || h.RequestID != 42 || string(st) != "st" || string(p) != `{"a":1}` {
		t.Fatalf("h=%+v st=%q p=%q", h, st, p)
	}
	if v, ok := MetaGet(m, "id"); !ok || string(v) != "x" {
		t.Fatalf("meta id = %q %v", v, ok)
	}
	if _, ok := MetaGet(m, "nope"); ok {
		t.Fatal("found a missing key")
	}
}

func TestParseCall_Rejects(t *testing.T) {
	good := buildCall(0, nil, nil, []byte("xyz"))
	for name, b := range map[string][]byte{
		"short":          good[:HeaderSize-1],
		"payload beyond": good[:len(good)-1],
		"header size":    append([]byte{1, 0, 0, 0}, good[4:]...),
	} {
		if _, _, _, _, err := ParseCall(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestResult_RoundTrip(t *testing.T) {
	b := make([]byte, ResultHeaderSize)
	PutResultHeader(b, StatusBadInput, ResultStateKeep, 1, 2, 3, 4)
	b = append(b, "SMMPPPEEEE"...)
	r, err := ParseResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusBadInput || r.Flags != ResultStateKeep || string(r.State) != "S" || string(r.Meta) != "MM" ||
		string(r.Payload) != "PPP" || string(r.Error) != "EEEE" {
		t.Fatalf("%+v", r)
	}
	if _, err := ParseResult(b[:len(b)-1]); err == nil {
		t.Fatal("accepted a truncated result")
	}
}

func TestItems(t *testing.T) {
	var list []byte
	for _, it := range []string{"a", "", "ccc"} {
		list = AppendItem(list, []byte(it))
	}
	var got []string
	for {
		item, rest, ok, err := NextItem(list)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, string(item))
		list = rest
	}
	if len(got) != 3 || got[2] != "ccc" || got[1] != "" {
		t.Fatalf("items %q", got)
	}
	if _, _, _, err := NextItem([]byte{9, 0, 0, 0, 'x'}); err == nil {
		t.Fatal("accepted an item longer than the list")
	}
}

func TestPack(t *testing.T) {
	p, n := Unpack(Pack(0xdeadbeef, 17))
	if p != 0xdeadbeef || n != 17 {
		t.Fatalf("%x %d", p, n)
	}
	if Op(3).String() != "stream_encode" || Status(2).String() != "bad_input" {
		t.Fatal("names")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(buildCall(1, []byte("s"), AppendMeta(nil, "k", "v"), []byte("p")))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, m, _, err := ParseCall(b); err == nil {
			MetaGet(m, "k")
		}
		_, _ = ParseResult(b)
		for list := b; ; {
			_, rest, ok, err := NextItem(list)
			if !ok || err != nil {
				break
			}
			if len(rest) >= len(list) {
				t.Fatal("NextItem did not advance")
			}
			list = rest
		}
		_ = bytes.Clone(b)
	})
}

// A NUL (or any byte) in a value cannot forge the pairs after it: v1's
// key\0value\0 lists let "qwen3-8b\x00stream\x001" read as model qwen3-8b
// with stream 1.
func TestMetaNULInValue(t *testing.T) {
	m := AppendMeta(nil, MetaModel, "qwen3-8b\x00stream\x001")
	m = AppendMeta(m, MetaStream, "0")
	v, ok := MetaGet(m, MetaModel)
	if !ok || string(v) != "qwen3-8b\x00stream\x001" {
		t.Fatalf("model = %q, %v", v, ok)
	}
	if v, _ := MetaGet(m, MetaStream); string(v) != "0" {
		t.Fatalf("stream = %q, want 0", v)
	}
	if !ValidMeta(m) || ValidMeta(m[:len(m)-1]) {
		t.Fatal("ValidMeta")
	}
}

// FuzzMeta: whatever the bytes, parsing never panics, and a list built by
// AppendMeta reads back exactly.
func FuzzMeta(f *testing.F) {
	f.Add([]byte("k"), []byte("v"), []byte{1, 0, 0, 0, 'k'})
	f.Add([]byte("model"), []byte("a\x00stream\x001"), []byte{255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, k, v, junk []byte) {
		MetaGet(junk, string(k))
		ValidMeta(junk)
		m := AppendMetaBytes(nil, string(k), v)
		m = AppendMeta(m, "tail", "x")
		got, ok := MetaGet(m, string(k))
		if !ok || string(got) != string(v) {
			t.Fatalf("MetaGet(%q) = %q, %v; want %q", k, got, ok, v)
		}
		if string(k) != "tail" {
			if got, _ := MetaGet(m, "tail"); string(got) != "x" {
				t.Fatalf("tail = %q", got)
			}
		}
	})
}

func TestHeaderComponents(t *testing.T) {
	b := make([]byte, HeaderSize)
	PutHeader(b, Header{Flags: FlagEnd, Translator: 3, Adapter: 65535, RequestID: 9})
	h, _, _, _, err := ParseCall(b)
	if err != nil || h.Translator != 3 || h.Adapter != 65535 || h.Flags != FlagEnd || h.RequestID != 9 {
		t.Fatalf("header %+v, %v", h, err)
	}
}
