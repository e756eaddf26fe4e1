package sdk

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// imageAdapter inlines every URL image the host fetched and asks for the
// rest, as an engine taking inline images only must.
type imageAdapter struct{ Unimplemented }

func (imageAdapter) EncodeRequest(c *Call, req *canon.ChatRequest, out *Output) error {
	var missing []string
	for _, m := range req.Messages {
		for _, p := range m.Content {
			if p.Type != canon.PartImage || p.URL == "" {
				continue
			}
			mt, b64, ok := c.Image(p.URL)
			if !ok {
				missing = append(missing, p.URL)
				continue
			}
			out.Body = append(out.Body, mt+":"+b64+";"...)
		}
	}
	if len(missing) > 0 {
		return NeedImages(missing...)
	}
	return nil
}

func TestNeedImages(t *testing.T) {
	p := NewAdapter(Manifest{Name: "img", Version: "0", Format: "x"}, imageAdapter{})
	req := canon.ChatRequest{Model: "m", Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{
		{Type: canon.PartImage, URL: "https://a.example/1.png"}, {Type: canon.PartText, Text: "hi"},
		{Type: canon.PartImage, URL: "https://a.example/2.jpg"}}}}}
	payload := req.AppendJSON(nil)

	r := run(t, p, abi.OpRequestEncode, callIdx(0, 0, 0, nil, nil, payload))
	if r.Status != abi.StatusNeedImages {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	urls := abi.NeededImages(string(r.Error))
	if len(urls) != 2 || urls[0] != "https://a.example/1.png" || urls[1] != "https://a.example/2.jpg" {
		t.Fatalf("urls %q", urls)
	}

	meta := abi.AppendImage(nil, urls[0], "image/png", "AAAA")
	meta = abi.AppendImage(meta, urls[1], "image/jpeg", "BBBB")
	r = run(t, p, abi.OpRequestEncode, callIdx(0, 0, 0, nil, meta, payload))
	if r.Status != abi.StatusOK || string(r.Payload) != "image/png:AAAA;image/jpeg:BBBB;" {
		t.Fatalf("status %s payload %q error %q", r.Status, r.Payload, r.Error)
	}
}

func TestParseImage(t *testing.T) {
	m := abi.AppendImage(nil, "https://x/y", "image/gif", "R0lG")
	_, v, _, err := abi.NextMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	u, mt, b, ok := abi.ParseImage(string(v))
	if !ok || u != "https://x/y" || mt != "image/gif" || b != "R0lG" {
		t.Fatalf("%q %q %q %v", u, mt, b, ok)
	}
	if _, _, _, ok := abi.ParseImage("no newline"); ok {
		t.Fatal("a value without separators parsed")
	}
}
