package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/conversations"
	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/config"
)

// serveCtx runs one of the keeper's routes and returns the response.
func (e *env) serveCtx(p *auth.Principal, method, uri, body string) *fasthttp.Response {
	e.t.Helper()
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, nil, nil)
	e.k.Serve(&ctx, p, []byte(body))
	var resp fasthttp.Response
	ctx.Response.CopyTo(&resp)
	return &resp
}

func errCode(t *testing.T, body []byte) string {
	t.Helper()
	var ae apiError
	if err := json.Unmarshal(body, &ae); err != nil || ae.Error.Code == nil {
		t.Fatalf("not an OpenAI error with a code: %s", body)
	}
	return *ae.Error.Code
}

// Bug: stored state was free: a user could store conversations of 15 MB
// each, as many as they liked, kept for the retention at no charge. Each
// user's stored responses and conversation items are bounded (bytes and
// items, by group or the default): a write over the bound is a 429 in
// OpenAI's shape with Retry-After, one larger than the bound alone a
// 413, and a Responses request that would be stored is refused before
// anything is generated. Deleting makes room again.
func TestKeeper_StoredStateIsBounded(t *testing.T) {
	const limit = 100 << 10
	staff := &auth.Principal{User: "carol", UserID: 13, Group: "staff"}
	e := newEnv(t, func(o *Options) {
		o.Stored = StoredLimit{Bytes: limit, Items: 50}
		o.GroupStored = map[string]StoredLimit{"staff": {Bytes: 10 * limit}}
	})
	item := `{"role":"user","content":"` + strings.Repeat("y", 30<<10) + `"}`
	var ids []string
	for range 3 { // 90 KiB of 100
		var c conversations.Conversation
		e.ok(alice, "POST", "/v1/conversations", `{"items":[`+item+`]}`, &c)
		ids = append(ids, c.ID)
	}
	r := e.serveCtx(alice, "POST", "/v1/conversations", `{"items":[`+item+`]}`)
	if r.StatusCode() != 429 || errCode(t, r.Body()) != "stored_state_limit_exceeded" || len(r.Header.Peek("Retry-After")) == 0 {
		t.Fatalf("a conversation past the bound: %d %s (Retry-After %q)", r.StatusCode(), r.Body(), r.Header.Peek("Retry-After"))
	}
	r = e.serveCtx(alice, "POST", "/v1/conversations/"+ids[0]+"/items", `{"items":[`+item+`]}`)
	if r.StatusCode() != 429 {
		t.Fatalf("items past the bound: %d %s", r.StatusCode(), r.Body())
	}
	if ae := e.beginErr(alice, `{"model":"m","input":"`+strings.Repeat("z", 20<<10)+`"}`); ae.Status != 429 {
		t.Fatalf("a stored response past the bound, before generating: %+v", ae)
	}
	if _, turn, _ := e.begin(alice, `{"model":"m","store":false,"input":"`+strings.Repeat("z", 20<<10)+`"}`); turn != nil {
		t.Fatal("store: false was given a turn")
	}
	huge := strings.TrimSuffix(strings.Repeat(item+",", 4), ",")
	r = e.serveCtx(bob, "POST", "/v1/conversations", `{"items":[`+huge+`]}`)
	if r.StatusCode() != 413 || errCode(t, r.Body()) != "stored_state_too_large" {
		t.Fatalf("a write larger than the bound alone: %d %s", r.StatusCode(), r.Body())
	}
	// Another user, and a group with a larger bound, are not affected.
	e.ok(bob, "POST", "/v1/conversations", `{"items":[`+item+`]}`, nil)
	e.ok(staff, "POST", "/v1/conversations", `{"items":[`+huge+`]}`, nil)
	// Deleting makes room.
	e.ok(alice, "DELETE", "/v1/conversations/"+ids[1], "", nil)
	e.ok(alice, "POST", "/v1/conversations", `{"items":[`+item+`]}`, nil)
}

// The configuration's bounds reach the keeper, a group's override
// keeping the default for what it does not name.
func TestOptionsFrom_StoredLimits(t *testing.T) {
	c, err := config.Parse([]byte("responses: {max_stored_bytes: 1000, max_stored_items: 7, groups: {staff: {max_stored_bytes: 0}}}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	o := OptionsFrom(c.Responses)
	if o.Stored != (StoredLimit{Bytes: 1000, Items: 7}) || o.GroupStored["staff"] != (StoredLimit{Bytes: 0, Items: 7}) {
		t.Fatalf("stored %+v, groups %+v", o.Stored, o.GroupStored)
	}
	if d := OptionsFrom(config.Default().Responses); d.Stored.Bytes <= 0 || d.Stored.Items <= 0 {
		t.Fatalf("the default bounds nothing: %+v", d.Stored)
	}
}
