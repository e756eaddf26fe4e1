package responses

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

func content(s string) canon.ChatChunk {
	return canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: s}}}}
}

func reasoning(s string) canon.ChatChunk {
	return canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Reasoning: s}}}}
}

func toolDelta(tcs ...canon.ToolCallDelta) canon.ChatChunk {
	return canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: tcs}}}}
}

func finish(f canon.FinishReason) canon.ChatChunk {
	return canon.ChatChunk{Choices: []canon.ChunkChoice{{FinishReason: f}}}
}

func usage(in, out, reasoning int) canon.ChatChunk {
	return canon.ChatChunk{Usage: &canon.Usage{PromptTokens: in, CompletionTokens: out, ReasoningTokens: reasoning}}
}

// streamCases are canonical streams as adapters produce them and what
// the client must see.
var streamCases = []struct {
	name     string
	chunks   []canon.ChatChunk
	terminal string
	types    []string // output item types
	text     string   // the message text
}{
	{"text", []canon.ChatChunk{
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Role: canon.RoleAssistant}}}},
		content("Hel"), content("lo, \"world\""), content("!\n"), finish(canon.FinishStop), usage(9, 4, 0)},
		"response.completed", []string{"message"}, "Hello, \"world\"!\n"},
	{"reasoning_text", []canon.ChatChunk{
		reasoning("The user"), reasoning(" greets."), content("Hi"), content(" there."), finish(canon.FinishStop), usage(11, 20, 12)},
		"response.completed", []string{"reasoning", "message"}, "Hi there."},
	{"parallel_calls", []canon.ChatChunk{
		content("Checking both."),
		toolDelta(canon.ToolCallDelta{Index: 0, ID: "call_p", Name: "weather", Arguments: `{"ci`}),
		toolDelta(canon.ToolCallDelta{Index: 0, Arguments: `ty":"Paris"}`}),
		toolDelta(canon.ToolCallDelta{Index: 1, Name: "weather"}),
		toolDelta(canon.ToolCallDelta{Index: 1, Arguments: `{"city":"Rome"}`}),
		toolDelta(canon.ToolCallDelta{Index: 0, Arguments: ``}),
		finish(canon.FinishToolCalls), usage(30, 25, 0)},
		"response.completed", []string{"message", "function_call", "function_call"}, "Checking both."},
	{"interleaved_calls", []canon.ChatChunk{
		toolDelta(canon.ToolCallDelta{Index: 0, ID: "call_a", Name: "a", Arguments: `{"x"`}, canon.ToolCallDelta{Index: 1, ID: "call_b", Name: "b", Arguments: `{"y"`}),
		toolDelta(canon.ToolCallDelta{Index: 1, Arguments: `:2}`}),
		toolDelta(canon.ToolCallDelta{Index: 0, Arguments: `:1}`}),
		finish(canon.FinishToolCalls)},
		"response.completed", []string{"function_call", "function_call"}, ""},
	{"max_tokens", []canon.ChatChunk{
		reasoning("Long story"), content("Once upon"), content(" a"), finish(canon.FinishLength), usage(5, 16, 10)},
		"response.incomplete", []string{"reasoning", "message"}, "Once upon a"},
	{"empty", []canon.ChatChunk{finish(canon.FinishStop)},
		"response.completed", nil, ""},
}

// TestEncodeStream checks each transcript byte for byte (golden), that it
// does not depend on how the stream is cut into calls, and that the
// official SDK's stream reader reads it event by event as the API's.
func TestEncodeStream(t *testing.T) {
	p := newPlugin()
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			out := sdktest.SplitInvariant(t, p, abi.OpStreamEncode, sdktest.Chunks(tc.chunks...), sdktest.Meta(gwMeta...))
			sdktest.Golden(t, filepath.Join("testdata", "streams", tc.name+".sse"), out)
			if bytes.Contains(out, []byte("[DONE]")) {
				t.Error("the Responses API sends no [DONE]")
			}
			events := readEvents(t, out)
			last := checkSequence(t, events, tc.terminal)
			r := last.Response
			if r.ID != "resp_"+testHex || r.Model != "qwen3-8b" || len(r.Output) != len(tc.types) {
				t.Fatalf("terminal response id %q model %q output %d", r.ID, r.Model, len(r.Output))
			}
			for i, it := range r.Output {
				if it.Type != tc.types[i] {
					t.Errorf("output[%d] %q, want %q", i, it.Type, tc.types[i])
				}
			}
			if r.OutputText() != tc.text {
				t.Errorf("OutputText %q, want %q", r.OutputText(), tc.text)
			}
			for _, ch := range tc.chunks {
				if u := ch.Usage; u != nil && (r.Usage.InputTokens != int64(u.PromptTokens) || r.Usage.OutputTokens != int64(u.CompletionTokens) ||
					r.Usage.OutputTokensDetails.ReasoningTokens != int64(u.ReasoningTokens)) {
					t.Errorf("usage %+v, want %+v", r.Usage, u)
				}
			}
		})
	}
}

// readEvents reads an SSE body with openai-go's own stream reader, as
// client.Responses.NewStreaming does, requiring every data payload to
// carry the type its event line names.
func readEvents(t *testing.T, body []byte) []responses.ResponseStreamEventUnion {
	t.Helper()
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
	s := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(res), nil)
	var events []responses.ResponseStreamEventUnion
	for s.Next() {
		events = append(events, s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("SDK stream: %v", err)
	}
	// The event lines must match the payloads' types.
	i := 0
	for _, block := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(block, "event: "), "\n")
		if i >= len(events) || events[i].Type != name {
			t.Fatalf("event %d: line names %q", i, name)
		}
		i++
	}
	return events
}

// checkSequence checks the event grammar: sequence numbers 0, 1, 2, ...;
// created, in_progress, then items each opened, streamed and closed in
// order with their .done events repeating the deltas, and exactly one
// terminal event, last, of the given type. It returns that event.
func checkSequence(t *testing.T, events []responses.ResponseStreamEventUnion, terminal string) responses.ResponseStreamEventUnion {
	t.Helper()
	if len(events) < 3 || events[0].Type != "response.created" || events[1].Type != "response.in_progress" {
		t.Fatalf("stream opens with %d events", len(events))
	}
	if s := events[0].Response.Status; s != "in_progress" {
		t.Errorf("created status %q", s)
	}
	deltas := map[int64]string{}
	open := map[int64]bool{}
	for i, e := range events {
		if e.SequenceNumber != int64(i) {
			t.Fatalf("event %d (%s) has sequence_number %d", i, e.Type, e.SequenceNumber)
		}
		isTerminal := e.Type == "response.completed" || e.Type == "response.incomplete" || e.Type == "response.failed"
		if isTerminal != (i == len(events)-1) {
			t.Fatalf("event %d is %s", i, e.Type)
		}
		switch e.Type {
		case "response.output_item.added":
			if open[e.OutputIndex] {
				t.Errorf("item %d added twice", e.OutputIndex)
			}
			open[e.OutputIndex] = true
		case "response.output_text.delta", "response.reasoning_text.delta", "response.function_call_arguments.delta":
			if !open[e.OutputIndex] {
				t.Errorf("%s for item %d, which is not open", e.Type, e.OutputIndex)
			}
			deltas[e.OutputIndex] += e.Delta
		case "response.output_text.done", "response.reasoning_text.done":
			if e.Text != deltas[e.OutputIndex] {
				t.Errorf("%s text %q, deltas %q", e.Type, e.Text, deltas[e.OutputIndex])
			}
		case "response.function_call_arguments.done":
			if want := arguments(deltas[e.OutputIndex]); e.Arguments != want {
				t.Errorf("arguments %q, deltas %q", e.Arguments, want)
			}
		case "response.output_item.done":
			if !open[e.OutputIndex] {
				t.Errorf("item %d done before added", e.OutputIndex)
			}
			open[e.OutputIndex] = false
		}
	}
	for n, o := range open {
		if o {
			t.Errorf("item %d never done", n)
		}
	}
	last := events[len(events)-1]
	if last.Type != terminal {
		t.Fatalf("terminal %s, want %s", last.Type, terminal)
	}
	want := map[string]responses.ResponseStatus{"response.completed": "completed", "response.incomplete": "incomplete", "response.failed": "failed"}[terminal]
	if last.Response.Status != want {
		t.Errorf("terminal status %q", last.Response.Status)
	}
	if terminal == "response.incomplete" && last.Response.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("incomplete reason %q", last.Response.IncompleteDetails.Reason)
	}
	return last
}

// TestEncodeStream_Failed: a backend that breaks mid-stream ends it with
// response.failed, the stream's one terminal event (EncodeError with meta
// stream = "1", which the host sends without the stream's state; and
// EncodeStreamError, which has it).
func TestEncodeStream_Failed(t *testing.T) {
	h := newHarness(t)
	chunks := []canon.ChatChunk{reasoning("Hmm"), content("Part")}
	// One call per chunk and no end call: the stream stays open, as a
	// broken backend leaves it.
	var state []byte
	var body []byte
	for i, c := range chunks {
		flags := uint32(0)
		if i == 0 {
			flags = abi.FlagFirst
		}
		r := h.Call(abi.OpStreamEncode, sdktest.Meta(gwMeta...), sdktest.Items(sdktest.Chunks(c)...), sdktest.Flags(flags), sdktest.State(state))
		if !r.OK() {
			t.Fatal(r.Status, r.Error)
		}
		if r.State != nil {
			state = r.State
		}
		body = append(body, r.Payload...)
	}
	ce := canon.Error{Status: 502, Type: canon.ErrBackend, Code: "backend_stream_truncated", Message: "the backend b1 closed the stream before it was complete (request " + testID + ")", RequestID: testID}

	t.Run("stateless", func(t *testing.T) {
		r := h.Call(abi.OpErrorEncode, sdktest.Meta(append(append([]string(nil), routeMeta...), abi.MetaStream, "1")...), sdktest.Payload(ce.AppendJSON(nil)))
		if !r.OK() {
			t.Fatal(r.Status, r.Error)
		}
		sdktest.Golden(t, filepath.Join("testdata", "streams", "failed_stateless.sse"), r.Payload)
		events := readEvents(t, append(append([]byte(nil), body...), r.Payload...))
		last := events[len(events)-1]
		if last.Type != "response.failed" || last.Response.Status != "failed" || last.Response.Error.Code != "server_error" ||
			last.Response.Error.Message != ce.Message || last.Response.ID != "resp_"+testHex || last.SequenceNumber <= events[len(events)-2].SequenceNumber {
			t.Errorf("failed event %s", last.RawJSON())
		}
	})
	t.Run("with state", func(t *testing.T) {
		var out sdk.Output
		if err := New().EncodeStreamError(&sdk.Call{}, &sdk.State{In: state}, &ce, &out); err != nil {
			t.Fatal(err)
		}
		full := append(append([]byte(nil), body...), out.Body...)
		sdktest.Golden(t, filepath.Join("testdata", "streams", "failed.sse"), full)
		// The open items were never closed: the failed response carries
		// the output so far, and nothing else follows.
		events := readEvents(t, full)
		last := events[len(events)-1]
		for i, e := range events {
			if e.SequenceNumber != int64(i) {
				t.Fatalf("event %d has sequence_number %d", i, e.SequenceNumber)
			}
		}
		if last.Type != "response.failed" || last.Response.Error.Code != "server_error" || last.Response.OutputText() != "Part" {
			t.Errorf("failed event %s", last.RawJSON())
		}
	})
	t.Run("state outgrown", func(t *testing.T) {
		// The host ends a stream whose state outgrew state_max_kb with
		// this code: the answer so far is complete as far as it goes, so
		// the response is incomplete (max_output_tokens), not failed.
		big := canon.Error{Status: 502, Type: canon.ErrBackend, Code: CodeStateTooLarge,
			Message: "the answer outgrew the stream state", RequestID: testID}
		var out sdk.Output
		if err := New().EncodeStreamError(&sdk.Call{}, &sdk.State{In: state}, &big, &out); err != nil {
			t.Fatal(err)
		}
		events := readEvents(t, append(append([]byte(nil), body...), out.Body...))
		for i, e := range events {
			if e.SequenceNumber != int64(i) {
				t.Fatalf("event %d has sequence_number %d", i, e.SequenceNumber)
			}
		}
		last := events[len(events)-1]
		if last.Type != "response.incomplete" || last.Response.IncompleteDetails.Reason != "max_output_tokens" ||
			last.Response.OutputText() != "Part" {
			t.Errorf("last event %s", last.RawJSON())
		}
	})
	t.Run("after the terminal event", func(t *testing.T) {
		st := h.Stream(abi.OpStreamEncode, [][][]byte{sdktest.Chunks(chunks...)}, sdktest.Meta(gwMeta...))
		end := st.Calls[len(st.Calls)-1].State
		var out sdk.Output
		if err := New().EncodeStreamError(&sdk.Call{}, &sdk.State{In: end}, &ce, &out); err != nil || len(out.Body) != 0 {
			t.Errorf("%q %v", out.Body, err)
		}
	})
}

// TestEncodeStream_State checks the state blob: a stream call after the
// terminal event writes nothing, and a corrupt blob is bad input.
func TestEncodeStream_State(t *testing.T) {
	h := newHarness(t)
	st := h.Stream(abi.OpStreamEncode, [][][]byte{sdktest.Chunks(content("x"), finish(canon.FinishStop))}, sdktest.Meta(gwMeta...))
	end := st.Calls[len(st.Calls)-1].State
	r := h.Call(abi.OpStreamEncode, sdktest.Meta(gwMeta...), sdktest.Items(sdktest.Chunks(content("late"))...), sdktest.State(end), sdktest.Flags(abi.FlagEnd))
	if !r.OK() || len(r.Payload) != 0 {
		t.Errorf("after the end: %s %q", r.Status, r.Payload)
	}
	for _, bad := range [][]byte{{9}, {stateVersion}, {stateVersion, 0, 0, 0, 1, 0xff}, append(append([]byte(nil), end...), 0)} {
		r := h.Call(abi.OpStreamEncode, sdktest.Meta(gwMeta...), sdktest.State(bad))
		if r.Status != abi.StatusBadInput {
			t.Errorf("state %v: %s", bad, r.Status)
		}
	}
}

// TestEncodeError: OpenAI's error shape, with param named from the
// message of a decode error.
func TestEncodeError(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		e    canon.Error
		want string
	}{
		{canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Code: "invalid_request", Message: ErrNoState},
			`{"error":{"message":"previous_response_id needs stored responses, which are off on this gateway","type":"invalid_request_error","param":"previous_response_id","code":"invalid_request"}}`},
		{canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "input[0].content[1].type: input_file is not supported"},
			`{"error":{"message":"input[0].content[1].type: input_file is not supported","type":"invalid_request_error","param":"input[0].content[1].type","code":null}}`},
		{canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "the request body is too large"},
			`{"error":{"message":"the request body is too large","type":"invalid_request_error","param":null,"code":null}}`},
		{canon.Error{Status: 404, Type: canon.ErrNotFound, Message: "model nope not found", Code: "model_not_found", Param: "model"},
			`{"error":{"message":"model nope not found","type":"invalid_request_error","param":"model","code":"model_not_found"}}`},
		{canon.Error{Status: 503, Type: canon.ErrOverloaded},
			`{"error":{"message":"the model is currently overloaded, please retry","type":"server_error","param":null,"code":null}}`},
	} {
		r := h.Call(abi.OpErrorEncode, sdktest.Meta(routeMeta...), sdktest.Payload(tc.e.AppendJSON(nil)))
		if !r.OK() || string(r.Payload) != tc.want {
			t.Errorf("%+v:\n got %s %s\nwant %s", tc.e, r.Status, r.Payload, tc.want)
		}
		var v struct{ Error map[string]any }
		if err := json.Unmarshal(r.Payload, &v); err != nil || v.Error["message"] == nil {
			t.Errorf("%s: %v", r.Payload, err)
		}
	}
}
