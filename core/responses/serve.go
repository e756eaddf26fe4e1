package responses

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// op is one route the keeper answers.
type op int

const (
	opNone op = iota
	opGetResponse
	opDeleteResponse
	opInputItems
	opCancel
	opCreateConversation
	opGetConversation
	opUpdateConversation
	opDeleteConversation
	opListItems
	opAddItems
	opGetItem
	opDeleteItem
)

var (
	responsesPrefix     = []byte("/v1/responses/")
	conversationsPath   = []byte("/v1/conversations")
	conversationsPrefix = []byte("/v1/conversations/")
)

// route maps a method and path to an op and its ids (slices of path).
// It allocates nothing: Serves runs on every request.
func route(method, path []byte) (o op, id, itemID []byte) {
	m := string(method) // no allocation: compared, not kept
	switch {
	case bytes.HasPrefix(path, responsesPrefix):
		rest := path[len(responsesPrefix):]
		id, sub, _ := bytes.Cut(rest, []byte{'/'})
		if len(id) == 0 {
			return opNone, nil, nil
		}
		switch {
		case len(sub) == 0 && len(rest) == len(id) && m == http.MethodGet:
			return opGetResponse, id, nil
		case len(sub) == 0 && len(rest) == len(id) && m == http.MethodDelete:
			return opDeleteResponse, id, nil
		case string(sub) == "input_items" && m == http.MethodGet:
			return opInputItems, id, nil
		case string(sub) == "cancel" && m == http.MethodPost:
			return opCancel, id, nil
		}
	case bytes.Equal(path, conversationsPath):
		if m == http.MethodPost {
			return opCreateConversation, nil, nil
		}
	case bytes.HasPrefix(path, conversationsPrefix):
		rest := path[len(conversationsPrefix):]
		id, sub, hasSub := bytes.Cut(rest, []byte{'/'})
		if len(id) == 0 {
			return opNone, nil, nil
		}
		if !hasSub {
			switch m {
			case http.MethodGet:
				return opGetConversation, id, nil
			case http.MethodPost:
				return opUpdateConversation, id, nil
			case http.MethodDelete:
				return opDeleteConversation, id, nil
			}
			return opNone, nil, nil
		}
		items, itemID, hasItem := bytes.Cut(sub, []byte{'/'})
		if string(items) != "items" {
			return opNone, nil, nil
		}
		if !hasItem {
			switch m {
			case http.MethodGet:
				return opListItems, id, nil
			case http.MethodPost:
				return opAddItems, id, nil
			}
			return opNone, nil, nil
		}
		if len(itemID) == 0 || bytes.IndexByte(itemID, '/') >= 0 {
			return opNone, nil, nil
		}
		switch m {
		case http.MethodGet:
			return opGetItem, id, itemID
		case http.MethodDelete:
			return opDeleteItem, id, itemID
		}
	}
	return opNone, nil, nil
}

// Serves reports the routes Serve answers: the stored responses'
// GET/DELETE /v1/responses/{id}, GET …/input_items and POST …/cancel,
// and the Conversations API under /v1/conversations. Not POST
// /v1/responses nor POST /v1/responses/input_tokens (the translator's).
func (k *Keeper) Serves(method, path []byte) bool {
	o, _, _ := route(method, path)
	return o != opNone
}

// requestTimeout bounds one route's store calls.
const requestTimeout = 30 * time.Second

// Serve answers one of the routes Serves reports, for p's own state.
func (k *Keeper) Serve(ctx *fasthttp.RequestCtx, p *auth.Principal, body []byte) {
	o, idb, itemb := route(ctx.Method(), ctx.Path())
	// Not ctx as the parent: a RequestCtx is done only at shutdown, and
	// a bare one (tests) has no server behind Done.
	c, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	id, itemID := string(idb), string(itemb)
	var (
		out []byte
		err error
	)
	switch o {
	case opGetResponse:
		out, err = k.getResponse(c, p.UserID, id, ctx.QueryArgs())
	case opDeleteResponse:
		out, err = k.deleteResponse(c, p.UserID, id)
	case opInputItems:
		out, err = k.inputItems(c, p.UserID, id, ctx.QueryArgs())
	case opCancel:
		err = k.cancel(c, p.UserID, id)
	case opCreateConversation:
		out, err = k.createConversation(c, p, body)
	case opGetConversation:
		out, err = k.getConversation(c, p.UserID, id)
	case opUpdateConversation:
		out, err = k.updateConversation(c, p.UserID, id, body)
	case opDeleteConversation:
		out, err = k.deleteConversation(c, p.UserID, id)
	case opListItems:
		out, err = k.listItems(c, p.UserID, id, ctx.QueryArgs())
	case opAddItems:
		out, err = k.addItems(c, p, id, body)
	case opGetItem:
		out, err = k.getItem(c, p.UserID, id, itemID)
	case opDeleteItem:
		out, err = k.deleteItem(c, p.UserID, id, itemID)
	default:
		err = apierr.New(canon.ErrNotFound, "not_found", "Unknown route "+string(ctx.Method())+" "+string(ctx.Path())+".")
	}
	if err != nil {
		k.writeError(c, ctx, err)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(out)
}

// writeError answers err in OpenAI's error shape; anything not an
// *apierr.Error is a 500 that says nothing more (and is logged).
func (k *Keeper) writeError(c context.Context, ctx *fasthttp.RequestCtx, err error) {
	e := apierr.Public(err)
	if e.Status >= 500 {
		k.log.LogAttrs(c, slog.LevelWarn, "responses state route", slog.String("path", string(ctx.Path())), slog.Any("err", err))
	}
	b := append(make([]byte, 0, 160), `{"error":{"message":`...)
	b = jsonw.String(b, e.Msg)
	b = append(b, `,"type":`...)
	b = jsonw.String(b, openAIType(e))
	b = append(b, `,"param":`...)
	b = nullable(b, e.Param)
	b = append(b, `,"code":`...)
	b = nullable(b, e.Code)
	b = append(b, "}}"...)
	if ra := e.RetryAfterSeconds(); ra > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(ra))
	}
	ctx.SetStatusCode(e.Status)
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(max(e.RetryAfterSeconds(), 1)))
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

func nullable(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return jsonw.String(dst, s)
}

// openAIType is the "type" OpenAI gives an error of e's kind (one
// mapping for every answer in OpenAI's shape the host writes itself).
func openAIType(e *apierr.Error) string { return apierr.OpenAIType(e.Type, e.Status) }

func apiNotFound(msg string) error { return apierr.New(canon.ErrNotFound, "", msg) }

func responseNotFound(id string) error {
	return apiNotFound("Response with id '" + id + "' not found.")
}

// notFound maps a store's not-found to the client's 404 and any other
// failure to a 500.
func notFound(err error, nf func() error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return nf()
	}
	return storeErr(what, err)
}

func (k *Keeper) getResponse(ctx context.Context, owner int64, id string, q *fasthttp.Args) ([]byte, error) {
	if !validID([]byte(id)) {
		return nil, responseNotFound(id)
	}
	if s := q.Peek("stream"); string(s) == "true" {
		return nil, badInput("stream", "Streaming a stored response is only offered for background responses, which this gateway does not offer.")
	}
	r, err := k.st.Response(ctx, owner, id, k.now())
	if err != nil {
		return nil, notFound(err, func() error { return responseNotFound(id) }, "read a response")
	}
	return r.Response, nil
}

func (k *Keeper) deleteResponse(ctx context.Context, owner int64, id string) ([]byte, error) {
	if !validID([]byte(id)) {
		return nil, responseNotFound(id)
	}
	if err := k.st.DeleteResponse(ctx, owner, id); err != nil {
		return nil, notFound(err, func() error { return responseNotFound(id) }, "delete a response")
	}
	return deleted(id, "response"), nil
}

// deleted is the answer to a delete: {"id","object","deleted":true}.
func deleted(id, object string) []byte {
	b := append(make([]byte, 0, 96), `{"id":`...)
	b = jsonw.String(b, id)
	b = append(b, `,"object":`...)
	b = jsonw.String(b, object)
	return append(b, `,"deleted":true}`...)
}

func (k *Keeper) cancel(ctx context.Context, owner int64, id string) error {
	if !validID([]byte(id)) {
		return responseNotFound(id)
	}
	if _, err := k.st.Response(ctx, owner, id, time.Time{}); err != nil {
		return notFound(err, func() error { return responseNotFound(id) }, "read a response")
	}
	return badInput("", "Only responses created with background=true can be cancelled, and this gateway does not offer background mode.")
}

// page is a list route's query: limit 1–100 (default 20), order asc or
// desc (default desc), after an item id.
type page struct {
	limit int
	desc  bool
	after string
}

func readPage(q *fasthttp.Args) (page, error) {
	pg := page{limit: 20, desc: true}
	if l := q.Peek("limit"); l != nil {
		n, err := strconv.Atoi(string(l))
		if err != nil || n < 1 || n > 100 {
			return page{}, badInput("limit", "Invalid 'limit': expected an integer from 1 to 100.")
		}
		pg.limit = n
	}
	switch o := string(q.Peek("order")); o {
	case "", "desc":
	case "asc":
		pg.desc = false
	default:
		return page{}, badInput("order", "Invalid 'order': expected 'asc' or 'desc'.")
	}
	if a := q.Peek("after"); a != nil {
		pg.after = string(a)
	}
	return pg, nil
}

func afterNotFound(after string) error {
	return badInput("after", "Invalid 'after': no item with id '%s' in this list.", after)
}

// list writes {"object":"list","data":[…],"first_id","last_id","has_more"}.
func list(items []prepared, more bool) []byte {
	n := 64
	for _, it := range items {
		n += len(it.live) + 1
	}
	b := append(make([]byte, 0, n), `{"object":"list","data":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it.live...)
	}
	b = append(b, `],"first_id":`...)
	if len(items) > 0 {
		b = jsonw.String(b, items[0].id)
		b = append(b, `,"last_id":`...)
		b = jsonw.String(b, items[len(items)-1].id)
	} else {
		b = append(b, `null,"last_id":null`...)
	}
	b = append(b, `,"has_more":`...)
	b = jsonw.Bool(b, more)
	return append(b, '}')
}

// inputItems lists a response's expanded input, newest first by default.
func (k *Keeper) inputItems(ctx context.Context, owner int64, id string, q *fasthttp.Args) ([]byte, error) {
	pg, err := readPage(q)
	if err != nil {
		return nil, err
	}
	if !validID([]byte(id)) {
		return nil, responseNotFound(id)
	}
	r, err := k.st.Response(ctx, owner, id, k.now())
	if err != nil {
		return nil, notFound(err, func() error { return responseNotFound(id) }, "read a response")
	}
	p := k.parsers.Get()
	defer k.parsers.Put(p)
	a := k.arenas.Get()
	defer func() { a.Reset(); k.arenas.Put(a) }()
	v, err := p.ParseBytes(r.Input)
	if err != nil {
		return nil, storeErr("read a response's input", err)
	}
	res := &resolver{k: k, ctx: ctx}
	all, _ := v.Array()
	items := make([]prepared, 0, min(len(all), pg.limit+1))
	start, step := 0, 1
	if pg.desc {
		start, step = len(all)-1, -1
	}
	found := pg.after == ""
	for i := start; i >= 0 && i < len(all); i += step {
		itemID := string(all[i].GetStringBytes("id"))
		if !found {
			found = itemID == pg.after
			continue
		}
		if len(items) == pg.limit {
			return list(items, true), nil
		}
		if _, err := res.resolve(a, all[i]); err != nil {
			return nil, err
		}
		items = append(items, prepared{id: itemID, live: appendValue(nil, all[i])})
	}
	if !found {
		return nil, afterNotFound(pg.after)
	}
	return list(items, false), nil
}
