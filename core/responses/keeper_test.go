package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// A chain: each turn's history is the previous response's expanded
// input and output, the chaining fields are gone from the body, the rest
// of the body is kept, and a stream's terminal event stores the response
// before End.
func TestKeeper_ChainSplicesHistory(t *testing.T) {
	e := newEnv(t)
	first := `{"model":"m","instructions":"be brief","input":"My name is Ada."}`
	sent, r1 := e.answer(alice, first, "Hello Ada.")
	if sent != first {
		t.Errorf("a request with no history was rewritten: %s", sent)
	}

	body2 := `{"model":"m","previous_response_id":"` + r1 + `","stream":true,"tools":[{"type":"function","name":"f"}],` +
		`"input":[{"role":"user","content":"What is my name?"}]}`
	sent, turn, r2 := e.begin(alice, body2)
	if strings.Contains(sent, "previous_response_id") {
		t.Errorf("previous_response_id left in the body: %s", sent)
	}
	var kept struct {
		Model  string           `json:"model"`
		Stream bool             `json:"stream"`
		Tools  []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal([]byte(sent), &kept); err != nil || kept.Model != "m" || !kept.Stream || len(kept.Tools) != 1 {
		t.Errorf("the other fields were not kept: %+v (%v) in %s", kept, err, sent)
	}
	in := inputOf(t, sent)
	if d := cmp.Diff([]string{"My name is Ada.", "Hello Ada.", "What is my name?"}, texts(in)); d != "" {
		t.Errorf("spliced input (-want +got):\n%s", d)
	}
	for i, it := range in {
		if id, _ := it["id"].(string); id == "" || it["type"] != "message" {
			t.Errorf("input item %d has no id or type: %v", i, it)
		}
	}
	if in[0]["role"] != "user" || in[1]["role"] != "assistant" || in[2]["role"] != "user" {
		t.Errorf("roles: %v %v %v", in[0]["role"], in[1]["role"], in[2]["role"])
	}

	// The stream, written in awkward pieces: the response is stored when
	// the terminal event's last byte is written, before End.
	s := stream(r2, "response.completed", "Your name is Ada.")
	for len(s) > 0 {
		n := min(len(s), 7)
		turn.Write([]byte(s[:n]))
		s = s[n:]
	}
	var got responses.Response
	e.ok(alice, "GET", "/v1/responses/"+r2, "", &got)
	turn.End(200)
	if got.ID != r2 || got.PreviousResponseID != r1 || got.OutputText() != "Your name is Ada." {
		t.Errorf("stored response: id %q previous %q text %q", got.ID, got.PreviousResponseID, got.OutputText())
	}

	// A third turn continues from the second with one read.
	sent, _, _ = e.begin(alice, `{"model":"m","previous_response_id":"`+r2+`","input":"And again?"}`)
	if d := cmp.Diff([]string{"My name is Ada.", "Hello Ada.", "What is my name?", "Your name is Ada.", "And again?"},
		texts(inputOf(t, sent))); d != "" {
		t.Errorf("a chain of two (-want +got):\n%s", d)
	}

	// input_items: the expanded input, newest first by default.
	var items responses.ResponseItemList
	e.ok(alice, "GET", "/v1/responses/"+r2+"/input_items", "", &items)
	if len(items.Data) != 3 || items.HasMore || items.FirstID != items.Data[0].ID || items.LastID != items.Data[2].ID {
		t.Fatalf("input_items: %+v", items)
	}
	if m := items.Data[0].AsMessage(); m.Role != "user" || m.Content[0].Text != "What is my name?" {
		t.Errorf("newest input item: %+v", items.Data[0])
	}
}

// Instructions stay the request's own: a continued turn does not inherit
// them, and they are not history.
func TestKeeper_InstructionsNotHistory(t *testing.T) {
	e := newEnv(t)
	_, r1 := e.answer(alice, `{"model":"m","instructions":"talk like a pirate","input":"hi"}`, "Arr.")
	sent, _, _ := e.begin(alice, `{"model":"m","previous_response_id":"`+r1+`","input":"again"}`)
	if strings.Contains(sent, "pirate") {
		t.Errorf("the previous instructions were carried over: %s", sent)
	}
}

// Another owner's id is answered exactly like an unknown one on every
// route, never with its content, and changes nothing.
func TestKeeper_ForeignOwner404(t *testing.T) {
	e := newEnv(t)
	_, r1 := e.answer(alice, `{"model":"m","input":"alice's secret"}`, "noted")
	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", `{"items":[{"role":"user","content":"alice's secret","id":"msg_s"}]}`, &conv)
	c := conv.ID
	const unknownResp, unknownConv = "resp_00000000000000000000000000000fff", "conv_fff"

	for _, tc := range []struct{ method, uri, body string }{
		{"GET", "/v1/responses/" + r1, ""},
		{"DELETE", "/v1/responses/" + r1, ""},
		{"GET", "/v1/responses/" + r1 + "/input_items", ""},
		{"POST", "/v1/responses/" + r1 + "/cancel", ""},
		{"GET", "/v1/conversations/" + c, ""},
		{"POST", "/v1/conversations/" + c, `{"metadata":{"a":"b"}}`},
		{"DELETE", "/v1/conversations/" + c, ""},
		{"GET", "/v1/conversations/" + c + "/items", ""},
		{"POST", "/v1/conversations/" + c + "/items", `{"items":[{"role":"user","content":"x"}]}`},
		{"GET", "/v1/conversations/" + c + "/items/msg_s", ""},
		{"DELETE", "/v1/conversations/" + c + "/items/msg_s", ""},
	} {
		for _, who := range []*auth.Principal{bob, admin} {
			status, out := e.serve(who, tc.method, tc.uri, tc.body)
			var ae apiError
			if err := json.Unmarshal([]byte(out), &ae); err != nil || status != 404 || strings.Contains(out, "secret") ||
				ae.Error.Type != "invalid_request_error" {
				t.Errorf("%s %s %s: %d %s", who.User, tc.method, tc.uri, status, out)
				continue
			}
			// An unknown id reads the same, but for the id.
			ids := strings.NewReplacer(r1, unknownResp, c, unknownConv)
			ue := e.fails(who, tc.method, ids.Replace(tc.uri), tc.body, 404)
			if ue.Error.Message != ids.Replace(ae.Error.Message) || !cmp.Equal(ue.Error.Param, ae.Error.Param) ||
				!cmp.Equal(ue.Error.Code, ae.Error.Code) {
				t.Errorf("%s %s %s: another owner's id %+v, an unknown one %+v", who.User, tc.method, tc.uri, ae, ue)
			}
		}
	}
	ae := e.beginErr(bob, `{"model":"m","previous_response_id":"`+r1+`","input":"x"}`)
	if ae.Status != 404 || ae.Param != "previous_response_id" || ae.Msg != "Previous response with id '"+r1+"' not found." {
		t.Errorf("Begin with another owner's previous response: %+v", ae)
	}
	ae = e.beginErr(bob, `{"model":"m","conversation":{"id":"`+c+`"},"input":"x"}`)
	if ae.Status != 404 || ae.Param != "conversation" {
		t.Errorf("Begin in another owner's conversation: %+v", ae)
	}
	// Nothing of alice's changed.
	e.ok(alice, "GET", "/v1/responses/"+r1, "", nil)
	var list conversations.ConversationItemList
	e.ok(alice, "GET", "/v1/conversations/"+c+"/items", "", &list)
	if len(list.Data) != 1 || list.Data[0].ID != "msg_s" {
		t.Errorf("alice's conversation after bob's tries: %+v", list.Data)
	}
}

// The Conversations lifecycle, decoded with openai-go's types: create
// with items and metadata, respond in it (its input and output are
// appended), list, get and delete an item, update, delete, then 404.
func TestKeeper_ConversationLifecycle(t *testing.T) {
	e := newEnv(t)
	var conv conversations.Conversation
	out := e.ok(alice, "POST", "/v1/conversations",
		`{"metadata":{"topic":"demo"},"items":[{"type":"message","role":"system","content":"Be kind."}]}`, &conv)
	if !strings.HasPrefix(conv.ID, "conv_") || conv.Object != "conversation" || conv.CreatedAt != e.clock.now().Unix() {
		t.Fatalf("created: %s", out)
	}
	if m, _ := conv.Metadata.(map[string]any); m["topic"] != "demo" {
		t.Errorf("metadata: %s", out)
	}

	sent, turn, respID := e.begin(alice, `{"model":"m","conversation":"`+conv.ID+`","input":"Hi there"}`)
	if strings.Contains(sent, `"conversation"`) {
		t.Errorf("conversation left in the body: %s", sent)
	}
	if d := cmp.Diff([]string{"Be kind.", "Hi there"}, texts(inputOf(t, sent))); d != "" {
		t.Errorf("conversation history (-want +got):\n%s", d)
	}
	turn.Write([]byte(responseObject(respID, "completed", "Hello!")))
	turn.End(200)
	var stored responses.Response
	e.ok(alice, "GET", "/v1/responses/"+respID, "", &stored)
	if stored.Conversation.ID != conv.ID {
		t.Errorf("the stored response does not name its conversation: %+v", stored.Conversation)
	}

	var list conversations.ConversationItemList
	e.ok(alice, "GET", "/v1/conversations/"+conv.ID+"/items?order=asc", "", &list)
	var got []string
	for _, it := range list.Data {
		m := it.AsMessage()
		got = append(got, string(m.Role)+": "+m.Content[0].Text)
	}
	if d := cmp.Diff([]string{"system: Be kind.", "user: Hi there", "assistant: Hello!"}, got); d != "" {
		t.Errorf("items after a turn (-want +got):\n%s", d)
	}
	if list.Object != "list" || list.HasMore || list.FirstID != list.Data[0].ID || list.LastID != list.Data[2].ID {
		t.Errorf("list: %+v", list)
	}

	var added conversations.ConversationItemList
	e.ok(alice, "POST", "/v1/conversations/"+conv.ID+"/items",
		`{"items":[{"type":"function_call_output","call_id":"call_1","output":"42"}]}`, &added)
	if len(added.Data) != 1 || !strings.HasPrefix(added.Data[0].ID, "fco_") || added.Data[0].Type != "function_call_output" {
		t.Fatalf("added: %+v", added)
	}
	fco := added.Data[0].ID
	var item conversations.ConversationItemUnion
	e.ok(alice, "GET", "/v1/conversations/"+conv.ID+"/items/"+fco, "", &item)
	if item.CallID != "call_1" {
		t.Errorf("item: %+v", item)
	}
	var after conversations.Conversation
	e.ok(alice, "DELETE", "/v1/conversations/"+conv.ID+"/items/"+fco, "", &after)
	if after.ID != conv.ID {
		t.Errorf("deleting an item answers the conversation: %+v", after)
	}
	e.fails(alice, "GET", "/v1/conversations/"+conv.ID+"/items/"+fco, "", 404)

	var updated conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations/"+conv.ID, `{"metadata":{"topic":"changed"}}`, &updated)
	if m, _ := updated.Metadata.(map[string]any); m["topic"] != "changed" {
		t.Errorf("updated: %+v", updated)
	}
	var del conversations.ConversationDeletedResource
	e.ok(alice, "DELETE", "/v1/conversations/"+conv.ID, "", &del)
	if !del.Deleted || del.ID != conv.ID || del.Object != "conversation.deleted" {
		t.Errorf("deleted: %+v", del)
	}
	e.fails(alice, "GET", "/v1/conversations/"+conv.ID, "", 404)
	e.fails(alice, "GET", "/v1/conversations/"+conv.ID+"/items", "", 404)
	if ae := e.beginErr(alice, `{"model":"m","conversation":"`+conv.ID+`","input":"x"}`); ae.Status != 404 {
		t.Errorf("Begin in a deleted conversation: %+v", ae)
	}
}

// Retrieve, delete, cancel: the delete shape is OpenAI's, cancel is a
// clear 400, and a deleted response cannot be continued.
func TestKeeper_ResponseRoutes(t *testing.T) {
	e := newEnv(t)
	_, r1 := e.answer(admin, `{"model":"m","input":"hi"}`, "hello")
	ae := e.fails(admin, "POST", "/v1/responses/"+r1+"/cancel", "", 400)
	if !strings.Contains(ae.Error.Message, "background") {
		t.Errorf("cancel: %+v", ae)
	}
	e.fails(admin, "GET", "/v1/responses/"+r1+"?stream=true", "", 400)
	out := e.ok(admin, "DELETE", "/v1/responses/"+r1, "", nil)
	if out != `{"id":"`+r1+`","object":"response","deleted":true}` {
		t.Errorf("delete: %s", out)
	}
	e.fails(admin, "GET", "/v1/responses/"+r1, "", 404)
	e.fails(admin, "DELETE", "/v1/responses/"+r1, "", 404)
	if ae := e.beginErr(admin, `{"model":"m","previous_response_id":"`+r1+`"}`); ae.Status != 404 {
		t.Errorf("continuing a deleted response: %+v", ae)
	}
	e.fails(admin, "GET", "/v1/responses/not%20an%20id", "", 404)
}

// store: false keeps nothing but still continues from a stored response;
// a stream that ends without a terminal event and a non-200 answer store
// nothing; a failed response is stored but not appended to its
// conversation.
func TestTurn_WhatIsStored(t *testing.T) {
	e := newEnv(t)
	body := `{"model":"m","store":false,"input":"hi"}`
	sent, turn, _ := e.begin(alice, body)
	if sent != body || turn != nil {
		t.Errorf("store false, no history: %s, %v", sent, turn)
	}
	// Null state keys are no state, and are not passed on.
	for _, b := range []string{`{"model":"m","store":false,"previous_response_id":null,"input":"hi"}`,
		`{"model":"m","conversation":null,"input":"hi"}`} {
		sent, _, _ = e.begin(alice, b)
		if strings.Contains(sent, "previous_response_id") || strings.Contains(sent, "conversation") || !json.Valid([]byte(sent)) {
			t.Errorf("Begin(%s) = %s", b, sent)
		}
	}
	_, r1 := e.answer(alice, `{"model":"m","input":"remember 7"}`, "ok")
	sent, turn, r2 := e.begin(alice, `{"model":"m","store":false,"previous_response_id":"`+r1+`","input":"which number?"}`)
	if turn != nil || len(inputOf(t, sent)) != 3 {
		t.Errorf("store false with history: turn %v, body %s", turn, sent)
	}
	_ = r2

	_, turn, r3 := e.begin(alice, `{"model":"m","stream":true,"input":"cut short"}`)
	s := stream(r3, "response.completed", "never finished")
	turn.Write([]byte(s[:len(s)/2]))
	turn.End(499)
	e.fails(alice, "GET", "/v1/responses/"+r3, "", 404)

	_, turn, r4 := e.begin(alice, `{"model":"m","input":"refused"}`)
	turn.End(429)
	e.fails(alice, "GET", "/v1/responses/"+r4, "", 404)

	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", "", &conv)
	_, turn, r5 := e.begin(alice, `{"model":"m","stream":true,"conversation":{"id":"`+conv.ID+`"},"input":"fail please"}`)
	turn.Write([]byte(stream(r5, "response.failed", "partial")))
	turn.End(200)
	var failed responses.Response
	e.ok(alice, "GET", "/v1/responses/"+r5, "", &failed)
	if failed.Status != "failed" {
		t.Errorf("failed response stored as %q", failed.Status)
	}
	var list conversations.ConversationItemList
	e.ok(alice, "GET", "/v1/conversations/"+conv.ID+"/items", "", &list)
	if len(list.Data) != 0 {
		t.Errorf("a failed turn was appended to its conversation: %+v", list.Data)
	}

	// A body that is not a response object (an input_tokens count) is
	// not stored.
	_, turn, r7 := e.begin(alice, `{"model":"m","input":"count me"}`)
	turn.Write([]byte(`{"object":"response.input_tokens","input_tokens":3,"id":"` + r7 + `"}`))
	turn.End(200)
	e.fails(alice, "GET", "/v1/responses/"+r7, "", 404)

	// A non-streamed body in two writes is stored at End.
	_, turn, r6 := e.begin(alice, `{"model":"m","input":"split body"}`)
	obj := responseObject(r6, "incomplete", "trunc")
	turn.Write([]byte(obj[:10]))
	turn.Write([]byte(obj[10:]))
	turn.End(200)
	e.ok(alice, "GET", "/v1/responses/"+r6, "", nil)
}

// Retention: untouched state goes at the next sweep after Retention; a
// read or a continuation keeps it.
func TestKeeper_Retention(t *testing.T) {
	e := newEnv(t)
	_, old := e.answer(alice, `{"model":"m","input":"old"}`, "x")
	_, read := e.answer(alice, `{"model":"m","input":"read later"}`, "y")
	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", `{"items":[{"role":"user","content":"c"}]}`, &conv)

	e.clock.add(20 * time.Hour)
	e.ok(alice, "GET", "/v1/responses/"+read, "", nil)
	e.ok(alice, "GET", "/v1/conversations/"+conv.ID+"/items", "", nil)
	e.clock.add(5 * time.Hour) // old: 25 h untouched; the others 5 h
	n, err := e.k.Sweep(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 row", n, err)
	}
	e.fails(alice, "GET", "/v1/responses/"+old, "", 404)
	e.ok(alice, "GET", "/v1/responses/"+read, "", nil)
	e.ok(alice, "GET", "/v1/conversations/"+conv.ID, "", nil)

	e.clock.add(25 * time.Hour)
	if n, err := e.k.Sweep(context.Background()); err != nil || n != 2 {
		t.Fatalf("second Sweep = %d, %v; want 2 rows", n, err)
	}
	e.fails(alice, "GET", "/v1/conversations/"+conv.ID, "", 404)

	// Run sweeps at once and stops with its context.
	_, again := e.answer(alice, `{"model":"m","input":"soon gone"}`, "z")
	e.clock.add(25 * time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.k.Run(ctx); close(done) }()
	testutil.WaitFor(t, "Run's sweep", 30*time.Second, func() bool {
		_, err := e.st.Response(context.Background(), alice.UserID, again, time.Time{})
		return errors.Is(err, store.ErrNotFound)
	})
	cancel()
	<-done
}

// A large data: URL image is stored once as a blob, referred to from
// the stored items, and put back wherever items are handed out.
func TestKeeper_BlobsRoundTrip(t *testing.T) {
	e := newEnv(t)
	img := "data:image/png;base64," + strings.Repeat("QUJD", 2000) // 8 KB: over the 1 KiB threshold
	small := "data:image/png;base64,QUJD"
	input := `[{"role":"user","content":[{"type":"input_text","text":"what is this?"},` +
		`{"type":"input_image","image_url":"` + img + `"},{"type":"input_image","image_url":"` + small + `"}]}]`
	_, r1 := e.answer(alice, `{"model":"m","input":`+input+`}`, "a picture")

	st := storedResponse(t, e, alice.UserID, r1)
	if strings.Contains(string(st.Input), img) || !strings.Contains(string(st.Input), blobRef) ||
		!strings.Contains(string(st.Input), small) || len(st.BlobRefs) != 1 {
		t.Fatalf("stored input: %s, refs %v", st.Input, st.BlobRefs)
	}
	b, err := e.st.Blob(context.Background(), st.BlobRefs[0])
	if err != nil || string(b.Data) != img {
		t.Fatalf("the blob: %v, %d bytes", err, len(b.Data))
	}

	out := e.ok(alice, "GET", "/v1/responses/"+r1+"/input_items", "", nil)
	if !strings.Contains(out, img) || strings.Contains(out, blobRef) {
		t.Errorf("input_items did not restore the image")
	}
	sent, turn, r2 := e.begin(alice, `{"model":"m","previous_response_id":"`+r1+`","input":"and now?"}`)
	if !strings.Contains(sent, img) || strings.Contains(sent, blobRef) {
		t.Errorf("the spliced history did not restore the image")
	}
	turn.Write([]byte(responseObject(r2, "completed", "same picture")))
	turn.End(200)
	// The second response refers to the blob too: deleting the first
	// keeps it through a sweep.
	e.ok(alice, "DELETE", "/v1/responses/"+r1, "", nil)
	e.clock.add(2 * time.Hour)
	e.ok(alice, "GET", "/v1/responses/"+r2, "", nil) // touched now; the blob an hour before the cut-off
	if _, err := e.k.st.DeleteExpired(context.Background(), e.clock.now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	out = e.ok(alice, "GET", "/v1/responses/"+r2+"/input_items?order=asc&limit=1", "", nil)
	if !strings.Contains(out, img) {
		t.Errorf("the image of a chained response went with its first holder: %.300s", out)
	}

	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", `{"items":`+input+`}`, &conv)
	out = e.ok(alice, "GET", "/v1/conversations/"+conv.ID+"/items", "", nil)
	if !strings.Contains(out, img) || strings.Contains(out, blobRef) {
		t.Errorf("conversation items did not restore the image")
	}

	ae := e.beginErr(alice, `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"`+
		blobRef+st.BlobRefs[0]+`"}]}]}`)
	if ae.Status != 400 || ae.Param != "input[0]" {
		t.Errorf("a client's own blob reference: %+v", ae)
	}
}

// Bounds: item size, list limits and order, items per call, metadata.
func TestKeeper_Bounds(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxItemBytes = 2048 })
	big := strings.Repeat("x", 3000)
	ae := e.beginErr(alice, `{"model":"m","input":[{"role":"user","content":"ok"},{"role":"user","content":"`+big+`"}]}`)
	if ae.Status != 400 || ae.Param != "input[1]" || !strings.Contains(ae.Msg, "2048") {
		t.Errorf("an item over MaxItemBytes: %+v", ae)
	}
	if ae := e.beginErr(alice, `{"model":"m","input":"`+big+`"}`); ae.Status != 400 || ae.Param != "input" {
		t.Errorf("a string input over MaxItemBytes: %+v", ae)
	}

	var items []string
	for i := range 5 {
		items = append(items, `{"role":"user","content":"m`+string(rune('0'+i))+`","id":"msg_`+string(rune('0'+i))+`"}`)
	}
	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", `{"items":[`+strings.Join(items, ",")+`]}`, &conv)
	_, r1 := e.answer(alice, `{"model":"m","input":[`+strings.Join(items, ",")+`]}`, "done")
	for _, base := range []string{"/v1/conversations/" + conv.ID + "/items", "/v1/responses/" + r1 + "/input_items"} {
		for _, tc := range []struct {
			query string
			ids   []string
			more  bool
		}{
			{"", []string{"msg_4", "msg_3", "msg_2", "msg_1", "msg_0"}, false},
			{"?limit=2", []string{"msg_4", "msg_3"}, true},
			{"?limit=2&after=msg_3", []string{"msg_2", "msg_1"}, true},
			{"?limit=2&after=msg_1", []string{"msg_0"}, false},
			{"?order=asc&limit=3", []string{"msg_0", "msg_1", "msg_2"}, true},
			{"?order=asc&after=msg_2", []string{"msg_3", "msg_4"}, false},
			{"?limit=100", []string{"msg_4", "msg_3", "msg_2", "msg_1", "msg_0"}, false},
		} {
			var l conversations.ConversationItemList
			e.ok(alice, "GET", base+tc.query, "", &l)
			var got []string
			for _, it := range l.Data {
				got = append(got, it.ID)
			}
			if d := cmp.Diff(tc.ids, got); d != "" || l.HasMore != tc.more {
				t.Errorf("%s%s: has_more %v (-want +got):\n%s", base, tc.query, l.HasMore, d)
			}
		}
		for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?order=up", "?after=msg_9"} {
			ae := e.fails(alice, "GET", base+q, "", 400)
			if ae.Error.Param == nil {
				t.Errorf("%s%s: no param: %+v", base, q, ae)
			}
		}
	}

	small := newEnv(t, func(o *Options) { o.MaxHistoryBytes = 500 })
	_, long := small.answer(alice, `{"model":"m","input":"`+strings.Repeat("y", 600)+`"}`, "ok")
	if ae := small.beginErr(alice, `{"model":"m","previous_response_id":"`+long+`","input":"x"}`); ae.Status != 400 ||
		ae.Param != "previous_response_id" {
		t.Errorf("a history over MaxHistoryBytes: %+v", ae)
	}

	many := strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"x"},`, 21), ",")
	e.fails(alice, "POST", "/v1/conversations", `{"items":[`+many+`]}`, 400)
	e.fails(alice, "POST", "/v1/conversations/"+conv.ID+"/items", `{"items":[`+many+`]}`, 400)
	e.fails(alice, "POST", "/v1/conversations/"+conv.ID+"/items", `{"items":[]}`, 400)
	var meta []string
	for i := range 17 {
		meta = append(meta, `"k`+string(rune('a'+i))+`":"v"`)
	}
	e.fails(alice, "POST", "/v1/conversations", `{"metadata":{`+strings.Join(meta, ",")+`}}`, 400)
	e.fails(alice, "POST", "/v1/conversations", `{"metadata":{"k":1}}`, 400)
	e.fails(alice, "POST", "/v1/conversations/"+conv.ID, `{"metadata":{"k":"`+strings.Repeat("v", 513)+`"}}`, 400)
	e.fails(alice, "POST", "/v1/conversations/"+conv.ID, `{}`, 400)
	e.fails(alice, "POST", "/v1/conversations", `not json`, 400)
}

// Begin's refusals, in the client's terms.
func TestKeeper_BeginErrors(t *testing.T) {
	e := newEnv(t)
	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", "", &conv)
	_, r1 := e.answer(alice, `{"model":"m","input":"x"}`, "y")
	for _, tc := range []struct {
		body, param string
		status      int
	}{
		{`{"model":`, "", 400},
		{`[1,2]`, "", 400},
		{`{"model":"m","store":"yes"}`, "store", 400},
		{`{"model":"m","previous_response_id":""}`, "previous_response_id", 400},
		{`{"model":"m","previous_response_id":5}`, "previous_response_id", 400},
		{`{"model":"m","conversation":{"name":"x"}}`, "conversation", 400},
		{`{"model":"m","previous_response_id":"` + r1 + `","conversation":"` + conv.ID + `"}`, "conversation", 400},
		{`{"model":"m","input":5}`, "input", 400},
		{`{"model":"m","input":[5]}`, "input[0]", 400},
		{`{"model":"m","input":[{"role":"user","content":"x","id":"no spaces"}]}`, "input[0].id", 400},
		{`{"model":"m","input":[{"type":7}]}`, "input[0].type", 400},
		{`{"model":"m","previous_response_id":"resp_nope"}`, "previous_response_id", 404},
		{`{"model":"m","previous_response_id":"../etc"}`, "previous_response_id", 404},
		{`{"model":"m","conversation":"conv_nope"}`, "conversation", 404},
	} {
		ae := e.beginErr(alice, tc.body)
		if ae.Status != tc.status || ae.Param != tc.param {
			t.Errorf("Begin(%s) = %d param %q (%s); want %d param %q", tc.body, ae.Status, ae.Param, ae.Msg, tc.status, tc.param)
		}
	}
}

func TestKeeper_Serves(t *testing.T) {
	k := New(nil, Options{}, nil)
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/v1/responses", false},
		{"POST", "/v1/responses/input_tokens", false},
		{"GET", "/v1/responses", false},
		{"GET", "/v1/responses/", false},
		{"GET", "/v1/responses/resp_1", true},
		{"DELETE", "/v1/responses/resp_1", true},
		{"POST", "/v1/responses/resp_1", false},
		{"GET", "/v1/responses/resp_1/input_items", true},
		{"POST", "/v1/responses/resp_1/cancel", true},
		{"GET", "/v1/responses/resp_1/cancel", false},
		{"GET", "/v1/responses/resp_1/other", false},
		{"POST", "/v1/conversations", true},
		{"GET", "/v1/conversations", false},
		{"GET", "/v1/conversations/", false},
		{"GET", "/v1/conversations/conv_1", true},
		{"POST", "/v1/conversations/conv_1", true},
		{"DELETE", "/v1/conversations/conv_1", true},
		{"PUT", "/v1/conversations/conv_1", false},
		{"GET", "/v1/conversations/conv_1/items", true},
		{"POST", "/v1/conversations/conv_1/items", true},
		{"DELETE", "/v1/conversations/conv_1/items", false},
		{"GET", "/v1/conversations/conv_1/items/msg_1", true},
		{"DELETE", "/v1/conversations/conv_1/items/msg_1", true},
		{"POST", "/v1/conversations/conv_1/items/msg_1", false},
		{"GET", "/v1/conversations/conv_1/items/msg_1/x", false},
		{"GET", "/v1/conversations/conv_1/things", false},
		{"POST", "/v1/chat/completions", false},
	} {
		if got := k.Serves([]byte(tc.method), []byte(tc.path)); got != tc.want {
			t.Errorf("Serves(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// State lives in the store, not the process: a new Keeper over the same
// database (a restarted gateway) serves and continues it.
func TestKeeper_SurvivesRestart(t *testing.T) {
	e := newEnv(t)
	_, r1 := e.answer(alice, `{"model":"m","input":"before the restart"}`, "noted")
	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", `{"items":[{"role":"user","content":"kept"}]}`, &conv)
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(context.Background(), sqlstore.SQLite, e.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st, e.k = st, New(st, e.k.opts, nil)
	e.ok(alice, "GET", "/v1/responses/"+r1, "", nil)
	e.ok(alice, "GET", "/v1/conversations/"+conv.ID+"/items", "", nil)
	sent, _, _ := e.begin(alice, `{"model":"m","previous_response_id":"`+r1+`","input":"after"}`)
	if d := cmp.Diff([]string{"before the restart", "noted", "after"}, texts(inputOf(t, sent))); d != "" {
		t.Errorf("continued after a restart (-want +got):\n%s", d)
	}
}

// Chains and conversations of several users at once share one Keeper
// (its parser and arena pools) and one store.
func TestKeeper_Concurrent(t *testing.T) {
	e := newEnv(t)
	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", "", &conv)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &auth.Principal{UserID: int64(100 + w)}
			prev := ""
			for i := range 5 {
				body := `{"model":"m","input":"turn"}`
				if prev != "" {
					body = `{"model":"m","previous_response_id":"` + prev + `","input":"turn"}`
				}
				reqID, respID := e.requestID()
				out, turn, err := e.k.Begin(context.Background(), p, reqID, []byte(body))
				if err != nil {
					errs <- err
					return
				}
				if prev != "" {
					var b struct{ Input []json.RawMessage }
					if err := json.Unmarshal(out, &b); err != nil || len(b.Input) != 2*i+1 {
						errs <- fmt.Errorf("worker %d turn %d: %d input items (%v), want %d", w, i, len(b.Input), err, 2*i+1)
						return
					}
				}
				turn.Write([]byte(stream(respID, "response.completed", "reply")))
				turn.End(200)
				prev = respID
				// Everyone also talks in alice's conversation, as alice.
				reqID, respID = e.requestID()
				_, turn, err = e.k.Begin(context.Background(), alice, reqID, []byte(`{"model":"m","conversation":"`+conv.ID+`","input":"hi"}`))
				if err != nil {
					errs <- err
					return
				}
				turn.Write([]byte(responseObject(respID, "completed", "hello")))
				turn.End(200)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var list conversations.ConversationItemList
	e.ok(alice, "GET", "/v1/conversations/"+conv.ID+"/items?limit=100", "", &list)
	if len(list.Data) != 4*5*2 {
		t.Errorf("%d conversation items, want %d", len(list.Data), 4*5*2)
	}
}
