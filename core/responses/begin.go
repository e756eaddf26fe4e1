package responses

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/server"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// request is what Begin reads of a Responses request body.
type request struct {
	store    bool
	prevID   string
	convID   string
	input    []*fastjson.Value // the request's own items (normalised by Begin)
	inputArg *fastjson.Value
}

// readRequest reads the fields the keeper acts on. v is the parsed body.
func readRequest(a *fastjson.Arena, v *fastjson.Value) (request, error) {
	if v.Type() != fastjson.TypeObject {
		return request{}, badInput("", "The request body must be a JSON object.")
	}
	r := request{store: true}
	if sv := v.Get("store"); sv != nil && sv.Type() != fastjson.TypeNull {
		b, err := sv.Bool()
		if err != nil {
			return request{}, badInput("store", "Invalid type for 'store': expected a boolean.")
		}
		r.store = b
	}
	if pv := v.Get("previous_response_id"); pv != nil && pv.Type() != fastjson.TypeNull {
		b, err := pv.StringBytes()
		if err != nil || len(b) == 0 {
			return request{}, badInput("previous_response_id", "Invalid 'previous_response_id': expected a response id.")
		}
		r.prevID = string(b)
	}
	if cv := v.Get("conversation"); cv != nil && cv.Type() != fastjson.TypeNull {
		if cv.Type() == fastjson.TypeObject {
			cv = cv.Get("id")
		}
		var b []byte
		err := errors.New("no id")
		if cv != nil {
			b, err = cv.StringBytes()
		}
		if err != nil || len(b) == 0 {
			return request{}, badInput("conversation", "Invalid 'conversation': expected a conversation id or {\"id\": ...}.")
		}
		r.convID = string(b)
	}
	if r.prevID != "" && r.convID != "" {
		return request{}, badInput("conversation",
			"Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.")
	}
	in := v.Get("input")
	r.inputArg = in
	var err error
	if r.input, err = inputItems(a, in); err != nil {
		return request{}, err
	}
	return r, nil
}

// inputItems is the items of an input value: none for an absent or null
// one, one user message for a string, an array's elements.
func inputItems(a *fastjson.Arena, in *fastjson.Value) ([]*fastjson.Value, error) {
	switch {
	case in == nil || in.Type() == fastjson.TypeNull:
		return nil, nil
	case in.Type() == fastjson.TypeString:
		text, _ := in.StringBytes()
		part := a.NewObject()
		part.Set("type", a.NewString("input_text"))
		part.Set("text", a.NewStringBytes(text))
		parts := a.NewArray()
		parts.SetArrayItem(0, part)
		msg := a.NewObject()
		msg.Set("type", a.NewString("message"))
		msg.Set("role", a.NewString("user"))
		msg.Set("content", parts)
		return []*fastjson.Value{msg}, nil
	case in.Type() == fastjson.TypeArray:
		items, _ := in.Array()
		return items, nil
	}
	return nil, badInput("input", "Invalid type for 'input': expected a string or an array of input items.")
}

// prepareItems prepares each of a request's items; isArray tells how
// they were given (for the parameter an error names).
func (k *Keeper) prepareItems(a *fastjson.Arena, in []*fastjson.Value, isArray bool, bs *blobSet) ([]prepared, error) {
	items := make([]prepared, len(in))
	for i, it := range in {
		at := itemName{"input", -1}
		if isArray {
			at.i = i
		}
		var err error
		if items[i], err = k.prepareItem(a, it, at, bs); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// history is the stored items a request continues from, in both forms.
type history struct {
	live, stored []byte // items joined by commas, no brackets
}

func (h *history) add(live, stored []byte) {
	if len(live) == 0 {
		return
	}
	if len(h.live) > 0 {
		h.live = append(h.live, ',')
		h.stored = append(h.stored, ',')
	}
	h.live = append(h.live, live...)
	h.stored = append(h.stored, stored...)
}

// Begin reads a Responses request: it loads the history that
// previous_response_id or conversation names (404 for an unknown or
// another owner's id), splices it in front of the request's input items
// and drops those two fields, and returns a Turn that stores the answer
// (nil when store is false and there is no conversation). With no
// history to splice the body is returned as it is, after one scan that
// allocates nothing: the items are prepared for storage when the Turn
// stores the response (see quick).
func (k *Keeper) Begin(ctx context.Context, p *auth.Principal, requestID string, body []byte) ([]byte, server.Turn, error) {
	store, input, ok := k.quick(body)
	switch {
	case !ok:
		return k.beginFull(ctx, p, requestID, body)
	case !store:
		return body, nil, nil
	}
	if err := k.gate.check(ctx); err != nil {
		return nil, nil, err
	}
	if err := k.admitStored(ctx, p, int64(len(body)), 1); err != nil {
		return nil, nil, err
	}
	return body, &turn{k: k, owner: p.UserID, requestID: requestID, store: true, lazy: true, raw: input}, nil
}

// beginFull is Begin for any request: the body parsed, each item
// prepared, the history loaded and spliced.
func (k *Keeper) beginFull(ctx context.Context, p *auth.Principal, requestID string, body []byte) ([]byte, server.Turn, error) {
	if err := fastjson.ValidateBytes(body); err != nil {
		return nil, nil, badInput("", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)")
	}
	parser := k.parsers.Get()
	defer k.parsers.Put(parser)
	a := k.arenas.Get()
	defer func() { a.Reset(); k.arenas.Put(a) }()
	v, err := parser.ParseBytes(body)
	if err != nil {
		return nil, nil, badInput("", "We could not parse the JSON body of your request.")
	}
	req, err := readRequest(a, v)
	if err != nil {
		return nil, nil, err
	}
	// A null previous_response_id or conversation is no state, but the
	// translator refuses either key: it goes too.
	hasKeys := v.Get("previous_response_id") != nil || v.Get("conversation") != nil
	if !req.store && req.prevID == "" && req.convID == "" {
		if hasKeys {
			return stripped(v), nil, nil
		}
		return body, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	var (
		owner = p.UserID
		now   = k.now()
		bs    blobSet
		res   = &resolver{k: k, ctx: ctx, refs: &bs}
	)
	hist, err := k.loadHistory(ctx, res, a, owner, req, now)
	if err != nil {
		return nil, nil, err
	}
	items, err := k.prepareItems(a, req.input, req.inputArg != nil && req.inputArg.Type() == fastjson.TypeArray, &bs)
	if err != nil {
		return nil, nil, err
	}
	out := body
	switch {
	case req.prevID != "" || req.convID != "":
		out = splice(v, hist.live, items)
	case hasKeys:
		out = stripped(v)
	}
	if !req.store && req.convID == "" {
		return out, nil, nil
	}
	if err := k.gate.check(ctx); err != nil {
		return nil, nil, err
	}
	t := &turn{k: k, owner: owner, requestID: requestID, store: req.store, prevID: req.prevID, convID: req.convID,
		items: items, blobs: bs.blobs, refs: bs.refs}
	// What the turn will store, less its answer (not known yet): the
	// expanded input of a stored response (its history included) and a
	// conversation's new items, each with the images stored with them.
	var addBytes, addItems int64
	for _, b := range bs.blobs {
		addBytes += int64(len(b.Data))
	}
	if req.store {
		t.input = expandedInput(hist.stored, items)
		addBytes, addItems = addBytes+int64(len(t.input)), addItems+1
	}
	if req.convID != "" {
		for _, it := range items {
			addBytes += int64(len(it.stored))
		}
		addItems += int64(len(items)) + 1 // and at least one output item
	}
	if err := k.admitStored(ctx, p, addBytes, addItems); err != nil {
		return nil, nil, err
	}
	return out, t, nil
}

// loadHistory loads the history req continues, bounded by
// MaxHistoryBytes.
func (k *Keeper) loadHistory(ctx context.Context, res *resolver, a *fastjson.Arena, owner int64, req request,
	now time.Time) (history, error) {
	var h history
	p := k.parsers.Get()
	defer k.parsers.Put(p)
	if req.prevID != "" {
		if err := k.loadPrevious(ctx, res, p, a, owner, req.prevID, now, &h); err != nil {
			return h, k.orTooLarge(req, err)
		}
	}
	if req.convID != "" {
		if err := k.loadConversation(ctx, res, p, a, owner, req.convID, now, &h); err != nil {
			return h, k.orTooLarge(req, err)
		}
	}
	if len(h.live) > k.opts.MaxHistoryBytes {
		return h, k.historyTooLarge(req)
	}
	return h, nil
}

// errHistoryTooLarge: a history load stopped at MaxHistoryBytes.
var errHistoryTooLarge = errors.New("history over the limit")

// historyTooLarge is the client's 400 for a history over MaxHistoryBytes,
// which the keeper stops reading once it is over: its whole size is not
// known, nor loaded.
func (k *Keeper) historyTooLarge(req request) error {
	param := "previous_response_id"
	if req.convID != "" {
		param = "conversation"
	}
	return badInput(param, "The stored history this request continues is more than this gateway's limit of %d bytes; start a new one.",
		k.opts.MaxHistoryBytes)
}

// loadPrevious adds a stored response's expanded input and output to h.
func (k *Keeper) loadPrevious(ctx context.Context, res *resolver, p *fastjson.Parser, a *fastjson.Arena, owner int64,
	id string, now time.Time, h *history) error {
	notFound := apierr.New(canon.ErrNotFound, "previous_response_not_found", "Previous response with id '"+id+"' not found.")
	notFound.Param = "previous_response_id"
	if !validID([]byte(id)) {
		return notFound
	}
	r, err := k.st.Response(ctx, owner, id, now)
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return storeErr("read the previous response", err)
	}
	if len(r.Input)+len(r.Response) > k.opts.MaxHistoryBytes {
		return errHistoryTooLarge // refused before its images are expanded
	}
	if inner := arrayInner(r.Input); len(inner) > 0 {
		for _, ref := range r.BlobRefs {
			res.refs.refer(ref)
		}
		live, err := res.liveJSON(p, a, r.Input)
		if err != nil {
			return err
		}
		h.add(arrayInner(live), inner)
	}
	rv, err := p.ParseBytes(r.Response)
	if err != nil {
		return storeErr("read the previous response", err)
	}
	for _, item := range rv.GetArray("output") {
		b := appendValue(nil, item)
		h.add(b, b)
	}
	return nil
}

// loadConversation adds a conversation's items to h.
func (k *Keeper) loadConversation(ctx context.Context, res *resolver, p *fastjson.Parser, a *fastjson.Arena, owner int64,
	id string, now time.Time, h *history) error {
	if !validID([]byte(id)) {
		return convNotFound(id, "conversation")
	}
	if _, err := k.st.Conversation(ctx, owner, id, now); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return convNotFound(id, "conversation")
		}
		return storeErr("read the conversation", err)
	}
	// Read no more than the history may hold: the stored items are no
	// larger than their live form (images by reference), so a
	// conversation over the limit stops loading at it.
	room := k.opts.MaxHistoryBytes - len(h.live)
	if room <= 0 {
		return errHistoryTooLarge
	}
	items, over, err := k.st.ConversationItems(ctx, owner, id, store.ItemPage{MaxBytes: room})
	if errors.Is(err, store.ErrNotFound) {
		return convNotFound(id, "conversation")
	}
	if err != nil {
		return storeErr("read the conversation's items", err)
	}
	if over {
		return errHistoryTooLarge
	}
	for _, it := range items {
		live, err := res.liveJSON(p, a, it.Item)
		if err != nil {
			return err
		}
		if h.add(live, it.Item); len(h.live) > k.opts.MaxHistoryBytes {
			return errHistoryTooLarge // its images made it too large
		}
	}
	return nil
}

// orTooLarge is err as the client sees it.
func (k *Keeper) orTooLarge(req request, err error) error {
	if errors.Is(err, errHistoryTooLarge) {
		return k.historyTooLarge(req)
	}
	return err
}

func convNotFound(id, param string) *apierr.Error {
	e := apierr.New(canon.ErrNotFound, "conversation_not_found", "Conversation with id '"+id+"' not found.")
	e.Param = param
	return e
}

// arrayInner is a JSON array's text between its brackets (the store keeps
// arrays this package wrote: no whitespace around them).
func arrayInner(b []byte) []byte {
	s := strings.TrimSpace(string(b))
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil
	}
	return []byte(strings.TrimSpace(s[1 : len(s)-1]))
}

// stripped is v without previous_response_id and conversation.
func stripped(v *fastjson.Value) []byte {
	delAll(v, "previous_response_id", "conversation")
	return appendValue(nil, v)
}

// delAll deletes every occurrence of each key (a body may repeat one).
func delAll(v *fastjson.Value, keys ...string) {
	for _, key := range keys {
		for v.Get(key) != nil {
			v.Del(key)
		}
	}
}

// splice writes the body the translator gets: v without
// previous_response_id, conversation and input, then "input" with the
// history and the request's items.
func splice(v *fastjson.Value, hist []byte, items []prepared) []byte {
	delAll(v, "previous_response_id", "conversation", "input")
	out := appendValue(make([]byte, 0, len(hist)+64), v)
	out = out[:len(out)-1] // the closing brace
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, `"input":[`...)
	out = append(out, hist...)
	for i, it := range items {
		if i > 0 || len(hist) > 0 {
			out = append(out, ',')
		}
		out = append(out, it.live...)
	}
	return append(out, "]}"...)
}

// expandedInput is the stored form of the whole input: history, then the
// request's items.
func expandedInput(hist []byte, items []prepared) []byte {
	out := append(make([]byte, 0, len(hist)+2), '[')
	out = append(out, hist...)
	for i, it := range items {
		if i > 0 || len(hist) > 0 {
			out = append(out, ',')
		}
		out = append(out, it.stored...)
	}
	return append(out, ']')
}
