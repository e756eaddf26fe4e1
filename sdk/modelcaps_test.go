package sdk

import (
	"strconv"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// capsTranslator decodes "img" to a request with an image part, "tools"
// to one with a tool, anything else to plain text.
type capsTranslator struct{ Unimplemented }

func (capsTranslator) DecodeRequest(_ *Call, body []byte, req *canon.ChatRequest) error {
	req.Model, req.MaxTokens = "m1", 64
	msg := canon.Message{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "hi"}}}
	switch string(body) {
	case "img":
		msg.Content = append(msg.Content, canon.Part{Type: canon.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="})
	case "tools":
		req.Tools = []canon.Tool{{Name: "f"}}
	}
	req.Messages = []canon.Message{msg}
	return nil
}

// The host's model caps (abi.MetaModelCaps, ABI 2.4) refuse an image
// without "vision" and tools without "tools" with bad_input before the
// adapter encodes, fused or not; unknown caps refuse nothing; a fused
// request the caps could refuse skips the patch path (which copies the
// client's body as is).
func TestModelCaps(t *testing.T) {
	p := NewBundle("b", "1", AdapterPart(Manifest{Name: "a"}, capAdapter{}), TranslatorPart(Manifest{Name: "t"}, capsTranslator{}).Patch("a", capPatch{}))
	const ok, noImg, noTools = "ok", "model m1 does not accept images", "model m1 does not support tools"
	for _, tc := range []struct {
		caps string // "-": no meta
		body string
		want string
	}{
		{"-", "img", ok}, {"-", "tools", ok}, {"-", "plain", ok},
		{"completion,tools", "img", noImg}, {"completion,tools", "tools", ok}, {"completion,tools", "plain", ok},
		{"completion,vision", "img", ok}, {"completion,vision", "tools", noTools},
		{"", "img", noImg}, {"", "tools", noTools}, {"", "plain", ok},
		{"completion, vision ,tools", "img", ok}, {"visionary", "img", noImg},
		{"vision,tools", "img", ok}, {"vision,tools", "tools", ok},
	} {
		var encMeta []byte
		meta := metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat")
		if tc.caps != "-" {
			encMeta = metaList(abi.MetaModelCaps, tc.caps)
			meta = abi.AppendMeta(meta, abi.MetaModelCaps, tc.caps)
		}
		dec := run(t, p, abi.OpRequestDecode, callIdx(1, 0, 0, nil, metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat"), []byte(tc.body)))
		results := map[string]copied{
			"unfused": run(t, p, abi.OpRequestEncode, callIdx(1, 0, 0, nil, encMeta, dec.Payload)),
			"fused":   run(t, p, abi.OpFusedRequest, callIdx(1, 0, 0, nil, meta, []byte(tc.body))),
		}
		for path, r := range results {
			switch {
			case tc.want == ok && r.Status != abi.StatusOK:
				t.Errorf("%s, caps %q, %s: status %v (%s), want ok", path, tc.caps, tc.body, r.Status, r.Error)
			case tc.want != ok && (r.Status != abi.StatusBadInput || r.Error != tc.want):
				t.Errorf("%s, caps %q, %s: status %v %q, want bad_input %q", path, tc.caps, tc.body, r.Status, r.Error, tc.want)
			}
		}
		// The patch answers only when the caps could refuse nothing.
		patched := string(results["fused"].Payload) == "patched"
		if wantPatch := tc.caps == "-" || hasCap([]byte(tc.caps), canon.CapVision) && hasCap([]byte(tc.caps), canon.CapTools); patched != wantPatch {
			t.Errorf("fused, caps %q, %s: patched %v, want %v", tc.caps, tc.body, patched, wantPatch)
		}
	}
}

// thinkTranslator decodes "optional" to thinking on with a budget that
// may go unmet (ChatRequest.ThinkOptional, Anthropic's thinking), "off" to
// thinking off, anything else to thinking on that must be met.
type thinkTranslator struct{ Unimplemented }

func (thinkTranslator) DecodeRequest(_ *Call, body []byte, req *canon.ChatRequest) error {
	req.Model, req.MaxTokens = "m1", 64
	req.Messages = []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "hi"}}}}
	req.Think, req.ThinkBudget = canon.ThinkOn, 100
	switch string(body) {
	case "optional":
		req.ThinkOptional = true
	case "off":
		req.Think, req.ThinkBudget, req.ThinkOptional = canon.ThinkOff, 0, true
	}
	return nil
}

// thinkAdapter reports the thinking setting the adapter was given.
type thinkAdapter struct{ Unimplemented }

func (thinkAdapter) EncodeRequest(_ *Call, req *canon.ChatRequest, out *Output) error {
	out.Body = append(out.Body, "think="+string(req.Think)+" budget="+strconv.Itoa(req.ThinkBudget)...)
	return nil
}

// An optional thinking request (ThinkOptional) is dropped before the
// adapter encodes when the host's model caps are known and lack
// "thinking", fused or not; a required one, thinking off, and unknown or
// thinking caps pass unchanged (the backend decides, as before).
func TestModelCaps_ThinkOptional(t *testing.T) {
	p := NewBundle("b", "1", AdapterPart(Manifest{Name: "a"}, thinkAdapter{}), TranslatorPart(Manifest{Name: "t"}, thinkTranslator{}))
	const on, dropped, off = "think=on budget=100", "think= budget=0", "think=off budget=0"
	for _, tc := range []struct{ caps, body, want string }{
		{"-", "optional", on}, {"completion,thinking", "optional", on}, {"completion, thinking", "optional", on},
		{"completion,tools", "optional", dropped}, {"", "optional", dropped},
		{"completion,tools", "required", on}, {"completion,tools", "off", off},
	} {
		var encMeta []byte
		meta := metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat")
		if tc.caps != "-" {
			encMeta = metaList(abi.MetaModelCaps, tc.caps)
			meta = abi.AppendMeta(meta, abi.MetaModelCaps, tc.caps)
		}
		dec := run(t, p, abi.OpRequestDecode, callIdx(1, 0, 0, nil, metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat"), []byte(tc.body)))
		for path, r := range map[string]copied{
			"unfused": run(t, p, abi.OpRequestEncode, callIdx(1, 0, 0, nil, encMeta, dec.Payload)),
			"fused":   run(t, p, abi.OpFusedRequest, callIdx(1, 0, 0, nil, meta, []byte(tc.body))),
		} {
			if r.Status != abi.StatusOK || string(r.Payload) != tc.want {
				t.Errorf("%s, caps %q, %s: %v %q (%s), want %q", path, tc.caps, tc.body, r.Status, r.Payload, r.Error, tc.want)
			}
		}
	}
}

// unsetThinkTranslator decodes "unset" to a request that says nothing
// about thinking, anything else as thinkTranslator does.
type unsetThinkTranslator struct{ thinkTranslator }

func (t unsetThinkTranslator) DecodeRequest(c *Call, body []byte, req *canon.ChatRequest) error {
	if err := t.thinkTranslator.DecodeRequest(c, body, req); err != nil {
		return err
	}
	if string(body) == "unset" {
		req.Think, req.ThinkBudget = canon.ThinkUnset, 0
	}
	return nil
}

// The host's per-model thinking default (abi.MetaThinkDefault) applies,
// fused or not, only to a request that says
// nothing: "off" and "on" become the switch, except for a model whose
// known caps lack "thinking"; no meta (the model's own default) or an
// unknown value sends nothing; what the client said wins.
func TestThinkDefault(t *testing.T) {
	p := NewBundle("b", "1", AdapterPart(Manifest{Name: "a"}, thinkAdapter{}), TranslatorPart(Manifest{Name: "t"}, unsetThinkTranslator{}))
	const unset, on, off, asked = "think= budget=0", "think=on budget=0", "think=off budget=0", "think=on budget=100"
	for _, tc := range []struct{ def, caps, body, want string }{
		{"-", "-", "unset", unset}, {"off", "-", "unset", off}, {"on", "-", "unset", on}, {"sometimes", "-", "unset", unset},
		{"off", "completion,thinking", "unset", off}, {"on", "completion,thinking", "unset", on},
		{"off", "completion,tools", "unset", unset}, {"on", "completion,tools", "unset", unset},
		{"off", "-", "required", asked}, {"on", "-", "off", "think=off budget=0"},
	} {
		var encMeta []byte
		meta := metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat")
		if tc.def != "-" {
			encMeta = abi.AppendMeta(encMeta, abi.MetaThinkDefault, tc.def)
			meta = abi.AppendMeta(meta, abi.MetaThinkDefault, tc.def)
		}
		if tc.caps != "-" {
			encMeta = abi.AppendMeta(encMeta, abi.MetaModelCaps, tc.caps)
			meta = abi.AppendMeta(meta, abi.MetaModelCaps, tc.caps)
		}
		dec := run(t, p, abi.OpRequestDecode, callIdx(1, 0, 0, nil, metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat"), []byte(tc.body)))
		for path, r := range map[string]copied{
			"unfused": run(t, p, abi.OpRequestEncode, callIdx(1, 0, 0, nil, encMeta, dec.Payload)),
			"fused":   run(t, p, abi.OpFusedRequest, callIdx(1, 0, 0, nil, meta, []byte(tc.body))),
		} {
			if r.Status != abi.StatusOK || string(r.Payload) != tc.want {
				t.Errorf("%s, default %q caps %q, %s: %v %q (%s), want %q", path, tc.def, tc.caps, tc.body, r.Status, r.Payload, r.Error, tc.want)
			}
		}
	}
}
