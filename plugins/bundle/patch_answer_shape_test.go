package bundle

import (
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/shape"
)

// answerBody is a vLLM chat.completion in the form of form (compact, as
// vLLM and fakellm send it, or indented as the golden vectors are).
func answerBody(indent bool, id, created, content, pt, tt, ct string) []byte {
	b := `{"id":"` + id + `","object":"chat.completion","created":` + created +
		`,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"message":{"role":"assistant","content":"` + content +
		`","refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning_content":null},"logprobs":null,"finish_reason":"stop","stop_reason":null}],` +
		`"service_tier":null,"system_fingerprint":null,"usage":{"prompt_tokens":` + pt + `,"total_tokens":` + tt + `,"completion_tokens":` + ct +
		`,"prompt_tokens_details":null},"prompt_logprobs":null,"kv_transfer_params":null}`
	if indent {
		b = strings.ReplaceAll(strings.ReplaceAll(b, `,"`, ",\n  \""), `{"`, "{\n  \"") + "\n"
	}
	return []byte(b)
}

// The response shape the patch leaves translates every answer it matches
// as the full path does: the same bytes with the gateway's id and created
// of that call, the same metadata but for the usage (the shape's counts)
// and the output estimate (its counted hole), for answers with other
// contents, counts, ids and times than the one that left it; answers it
// must not take (a think tag, an escape jsonw would not write, a count
// past 2^31) do not match.
func TestResponseShape_MatchesPatch(t *testing.T) {
	pp := newPatchPair()
	meta := metaList(headerMeta...)
	contents := []struct {
		s     string
		match bool
	}{
		{"Hello! How can I help?", true}, {"", true}, {`a\nb\tc\r\\d`, true}, {`say \"hi\"`, true},
		{"é ünïcode 😀 中文", true}, {strings.Repeat("long text ", 500), true}, {"<b>bold</b> & more", true},
		{"a <think>b</think> c", false}, {"x</think>", false}, {`\u00e9`, false}, {`\/`, false}, {"\u2028", false},
	}
	counts := []struct {
		pt, tt, ct string
		match      bool
	}{
		{"25", "32", "7", true}, {"0", "1", "1", true}, {"123456789", "123456790", "1", true}, {"7", "7", "0", true},
		{"1234567890", "1234567891", "1", false}, {"5", "0", "0", false}, {"05", "6", "1", false}, {"1.0", "2", "1", false},
	}
	ids := []struct {
		id, created string
	}{{"chatcmpl-b7c2", "1733000123"}, {"", "0"}, {`x\"y`, "1"}, {"cmpl-" + strings.Repeat("f", 40), "99999999999"}}
	gateway := [][2]string{{"chatcmpl-bundle1", "1700000000"}, {"chatcmpl-0123456789abcdef0123456789abcdef", "1800000000"}}
	for _, indent := range []bool{false, true} {
		leave := answerBody(indent, "chatcmpl-b7c2", "1733000123", "Hello!", "25", "32", "7")
		got := do(t, pp.patched, abi.OpFusedResponse, input(OpenAI, pp.ai, 0, nil, meta, leave))
		enc, ok := got.Meta[abi.MetaResponseShape]
		if !ok {
			t.Fatalf("indent %v: no response shape left: %v", indent, got.Meta)
		}
		sh, err := shape.ParseResponse([]byte(enc))
		if err != nil {
			t.Fatal(err)
		}
		// The shape applies to the answer that left it.
		if out, _, ok := sh.Apply(nil, leave, []byte("chatcmpl-bundle1"), []byte("1700000000")); !ok || string(out) != string(got.Payload) {
			t.Fatalf("indent %v: the shape on its own answer: %v\n%s\nwant\n%s", indent, ok, out, got.Payload)
		}
		static := staticMeta(got.Meta)
		matched, n := 0, 0
		for _, c := range contents {
			for _, k := range counts {
				for _, i := range ids {
					for _, g := range gateway {
						n++
						body := answerBody(indent, i.id, i.created, c.s, k.pt, k.tt, k.ct)
						m := metaList(append(append([]string{}, routeMeta...), abi.MetaID, g[0], abi.MetaModel, "served-model", abi.MetaCreated, g[1])...)
						want := do(t, pp.full, abi.OpFusedResponse, input(OpenAI, pp.ai, 0, nil, m, body))
						out, rep, ok := sh.Apply(nil, body, []byte(g[0]), []byte(g[1]))
						if ok != (c.match && k.match) {
							t.Errorf("content %q counts %v id %q: matched %v", c.s, k, i.id, ok)
						}
						if !ok {
							continue
						}
						matched++
						if string(out) != string(want.Payload) {
							t.Fatalf("content %q counts %v id %q:\nshape %s\nfull  %s", c.s, k, i.id, out, want.Payload)
						}
						if d := reportDiff(rep, static, want.Meta); d != "" {
							t.Fatalf("content %q counts %v id %q: %s", c.s, k, i.id, d)
						}
					}
				}
			}
		}
		t.Logf("indent %v: %d of %d answers by the shape", indent, matched, n)
	}
}

// staticMeta is a call's result metadata without what a response shape's
// holes give (the usage and the output estimate) and the shape itself.
func staticMeta(m map[string]string) map[string]string {
	m = maps.Clone(m)
	for _, k := range []string{abi.MetaPromptTokens, abi.MetaCompletionTokens, abi.MetaOutputTokens, abi.MetaResponseShape} {
		delete(m, k)
	}
	return m
}

// reportDiff compares what the host makes of a shaped answer (the leaving
// call's static metadata, the shape's report) with a call's metadata.
func reportDiff(rep shape.Report, static, want map[string]string) string {
	got := maps.Clone(static)
	if rep.HasUsage {
		got[abi.MetaPromptTokens] = strconv.Itoa(rep.Prompt)
		got[abi.MetaCompletionTokens] = strconv.Itoa(rep.Completion)
	}
	if rep.Counted >= 0 {
		if n := sdk.OutputTokens(rep.Counted); n > 0 {
			got[abi.MetaOutputTokens] = strconv.Itoa(n)
		}
	}
	if metaString(got) != metaString(want) {
		return "meta " + metaString(got) + ", the call's " + metaString(want)
	}
	return ""
}

// No shape where the patch cannot vouch for one: tool calls, reasoning,
// cached tokens, no usage or total, an id that needs escaping, and every
// golden vector but the plain ones.
func TestResponseShape_NotLeft(t *testing.T) {
	pp := newPatchPair()
	plain := string(answerBody(false, "a", "1", "x", "1", "2", "1"))
	for name, c := range map[string]struct {
		meta []string
		body string
	}{
		"cached tokens":   {headerMeta, strings.Replace(plain, `"prompt_tokens_details":null`, `"prompt_tokens_details":{"cached_tokens":1}`, 1)},
		"no total":        {headerMeta, strings.Replace(plain, `"total_tokens":2,`, ``, 1)},
		"no usage":        {headerMeta, strings.Replace(plain, `"usage":{"prompt_tokens":1,"total_tokens":2,"completion_tokens":1,"prompt_tokens_details":null},`, ``, 1)},
		"repeated id":     {headerMeta, strings.Replace(plain, `{"id":"a",`, `{"id":"a","id":"b",`, 1)},
		"escaped gateway": {append(append([]string{}, routeMeta...), abi.MetaID, `a"b`, abi.MetaModel, "m", abi.MetaCreated, "1"), plain},
	} {
		got := do(t, pp.patched, abi.OpFusedResponse, input(OpenAI, pp.ai, 0, nil, metaList(c.meta...), []byte(c.body)))
		if !got.ok() {
			t.Fatalf("%s: %s %s", name, got.Status, got.Error)
		}
		if _, ok := got.Meta[abi.MetaResponseShape]; ok {
			t.Errorf("%s: a shape was left", name)
		}
	}
}

// checkResponseShape checks that a response shape a fused response call
// left (got) translates its own answer (body) to the call's output, with
// the call's id and created (headerMeta), and removes it from got.Meta.
func checkResponseShape(t *testing.T, name string, got res, body []byte) {
	t.Helper()
	enc, ok := got.Meta[abi.MetaResponseShape]
	if !ok {
		return
	}
	delete(got.Meta, abi.MetaResponseShape)
	sh, err := shape.ParseResponse([]byte(enc))
	if err != nil {
		t.Errorf("%s: the response shape: %v", name, err)
		return
	}
	m := map[string]string{}
	for i := 0; i+1 < len(headerMeta); i += 2 {
		m[headerMeta[i]] = headerMeta[i+1]
	}
	out, rep, ok := sh.Apply(nil, body, []byte(m[abi.MetaID]), []byte(m[abi.MetaCreated]))
	if !ok || string(out) != string(got.Payload) {
		t.Errorf("%s: the response shape on its own answer: %v\n%s\nwant\n%s", name, ok, out, got.Payload)
		return
	}
	if d := reportDiff(rep, staticMeta(got.Meta), got.Meta); d != "" {
		t.Errorf("%s: %s", name, d)
	}
}
