package sdk

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// countAdapter counts a request's messages as its engine would: its count
// request names the model, the context length and each message's text.
type countAdapter struct{ fakeAdapter }

func (countAdapter) EncodeCountRequest(c *Call, req *canon.ChatRequest, out *Output) error {
	if req.Model == "" {
		return BadInput("model: required")
	}
	if len(req.Prompt) > 0 {
		return ErrUnsupported
	}
	out.SetMeta(abi.MetaPath, "/count")
	out.Body = append(out.Body, req.Model+"@"+strconv.Itoa(req.ContextLength)+":"...)
	for i := range req.Messages {
		out.Body = append(out.Body, req.Messages[i].Text()+"|"...)
	}
	return nil
}

func (countAdapter) DecodeCountResponse(c *Call, body []byte, tc *canon.TokenCount) error {
	n, max, ok := strings.Cut(string(body), "/")
	var err error
	if tc.Count, err = strconv.Atoi(n); err != nil || !ok {
		return BadInput("no count")
	}
	tc.MaxModelLen, _ = strconv.Atoi(max)
	tc.Estimate = true // the SDK says exact whatever the adapter set
	return nil
}

func TestCountOps(t *testing.T) {
	p := NewAdapter(Manifest{Name: "c", Format: "c"}, countAdapter{})
	if !p.Manifest().CountsTokens {
		t.Fatal("the manifest of a TokenCountAdapter does not say counts_tokens")
	}
	req := canon.ChatRequest{Model: "m", Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "hi"}}}}}
	r := run(t, p, abi.OpCountRequestEncode, call(0, nil, abi.AppendMeta(nil, abi.MetaContextLength, "4096"), req.AppendJSON(nil)))
	if r.Status != abi.StatusOK || string(r.Payload) != "m@4096:hi|" || r.Meta[abi.MetaPath] != "/count" {
		t.Fatalf("count_request_encode: %+v", r)
	}
	r = run(t, p, abi.OpCountResponseDecode, call(0, nil, nil, []byte("12/32768")))
	var tc canon.TokenCount
	if r.Status != abi.StatusOK || tc.DecodeJSON(r.Payload) != nil || tc != (canon.TokenCount{Count: 12, MaxModelLen: 32768}) {
		t.Fatalf("count_response_decode: %+v (%s)", r, r.Payload)
	}
	for _, tc := range []struct {
		name string
		op   abi.Op
		in   []byte
		want abi.Status
	}{
		{"no count in the answer", abi.OpCountResponseDecode, []byte("none"), abi.StatusBadInput},
		{"not canonical JSON", abi.OpCountRequestEncode, []byte("{"), abi.StatusBadInput},
		{"the adapter refuses", abi.OpCountRequestEncode, (&canon.ChatRequest{Messages: req.Messages}).AppendJSON(nil), abi.StatusBadInput},
		{"the adapter cannot count it", abi.OpCountRequestEncode, (&canon.ChatRequest{Model: "m", Prompt: []string{"x"}}).AppendJSON(nil), abi.StatusUnsupported},
	} {
		if r := run(t, p, tc.op, call(0, nil, nil, tc.in)); r.Status != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, r.Status, r.Error, tc.want)
		}
	}

	// An adapter without the interface: not in its manifest, and the ops
	// answer unsupported.
	plain := NewAdapter(Manifest{Name: "p", Format: "p", CountsTokens: true}, fakeAdapter{})
	if plain.Manifest().CountsTokens {
		t.Error("counts_tokens kept on an adapter without the ops")
	}
	for _, op := range []abi.Op{abi.OpCountRequestEncode, abi.OpCountResponseDecode} {
		if r := run(t, plain, op, call(0, nil, nil, req.AppendJSON(nil))); r.Status != abi.StatusUnsupported {
			t.Errorf("%s on a plain adapter: %s", op, r.Status)
		}
	}
	if op := abi.OpCountRequestEncode.String() + "," + abi.OpCountResponseDecode.String(); op != "count_request_encode,count_response_decode" {
		t.Errorf("op names %s", op)
	}
}

// In a bundle the count ops go to the adapter the header names, and the
// bundle's manifest says which components count.
func TestCountOps_Bundle(t *testing.T) {
	p := NewBundle("b", "1", TranslatorPart(Manifest{Name: "t"}, fakeTranslator{}),
		AdapterPart(Manifest{Name: "plain", Format: "p"}, fakeAdapter{}), AdapterPart(Manifest{Name: "c", Format: "c"}, countAdapter{}))
	m := p.Manifest()
	if m.Components[1].CountsTokens || !m.Components[2].CountsTokens || m.CountsTokens {
		t.Fatalf("components' counts_tokens: %+v", m.Components)
	}
	if r := run(t, p, abi.OpCountResponseDecode, callIdx(0, 2, 0, nil, nil, []byte("3/"))); r.Status != abi.StatusOK {
		t.Fatalf("component 2: %+v", r)
	}
	if r := run(t, p, abi.OpCountResponseDecode, callIdx(0, 1, 0, nil, nil, []byte("3/"))); r.Status != abi.StatusUnsupported {
		t.Fatalf("component 1: %+v", r)
	}
	if r := run(t, p, abi.OpCountResponseDecode, callIdx(0, 0, 0, nil, nil, []byte("3/"))); r.Status != abi.StatusUnsupported {
		t.Fatalf("the translator: %+v", r)
	}
}
