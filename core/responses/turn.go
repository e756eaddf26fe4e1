package responses

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/core/store"
)

// Answer modes a Turn tells from the first byte it is given.
const (
	modeUnknown = iota
	modeJSON    // a non-streamed answer: the response object
	modeSSE     // a stream of typed events
)

// turn records one exchange's answer. What it stores, and when:
//   - store true: the response (completed, incomplete or failed) with
//     the expanded input, as soon as the answer's terminal event (or the
//     whole non-streamed body) is seen, before that write returns;
//   - a conversation: the request's input items and the output items,
//     appended then, unless the response failed;
//   - a stream that ends without a terminal event (the client left, the
//     gateway cut it) and any non-200 answer: nothing.
//
// Not safe for concurrent use: Write and End run on the request's
// goroutine.
type turn struct {
	k         *Keeper
	owner     int64
	requestID string
	store     bool
	prevID    string
	convID    string
	items     []prepared // the request's own input items
	blobs     []store.Blob
	refs      []string
	input     []byte // the stored expanded input (store true)
	// lazy: Begin's quick path left the request's items to prepare when
	// the response is stored; raw is its input's text (nil for none), in
	// the request body, which the server keeps until End.
	lazy bool
	raw  []byte

	mode int
	done bool
	body []byte // modeJSON: the body so far
	sse  sseScan
}

// Write is given the bytes the client is sent, in order.
func (t *turn) Write(p []byte) {
	if t.done || len(p) == 0 {
		return
	}
	if t.mode == modeUnknown {
		s := bytes.TrimLeft(p, " \t\r\n")
		if len(s) == 0 {
			return
		}
		t.mode = modeSSE
		if s[0] == '{' {
			t.mode = modeJSON
		}
		t.sse.max = t.k.opts.MaxResponseBytes
	}
	if t.mode == modeJSON {
		if len(t.body)+len(p) > t.k.opts.MaxResponseBytes {
			t.give("the response is over max_response_bytes")
			return
		}
		t.body = append(t.body, p...)
		t.tryBody()
		return
	}
	if data, ok := t.sse.feed(p); ok {
		t.finishEvent(data)
	}
}

// End stores a non-streamed body that came in several writes; anything
// else was stored by Write or is not stored.
func (t *turn) End(status int) {
	if !t.done && status == 200 {
		switch t.mode {
		case modeJSON:
			if !t.tryBody() {
				t.give("the response body is not a JSON object")
			}
		case modeSSE:
			t.give("the stream ended without a terminal event")
		}
	}
	t.done = true
	t.release()
}

// give stops recording, logging why at debug level.
func (t *turn) give(why string) {
	if t.k.log.Enabled(context.Background(), slog.LevelDebug) {
		t.k.log.LogAttrs(context.Background(), slog.LevelDebug, "response not stored",
			slog.String("req_id", t.requestID), slog.String("why", why))
	}
	t.done = true
	t.release()
}

func (t *turn) release() {
	t.body, t.sse = nil, sseScan{}
	t.items, t.blobs, t.input, t.raw = nil, nil, nil, nil
}

// prepare does for a quick-path Turn what Begin's full path does before
// the backend call: the request's items normalised, given ids and their
// large images moved to blobs, into the stored input. Begin's scan has
// made sure that this succeeds.
func (t *turn) prepare(a *fastjson.Arena) error {
	var (
		in      []*fastjson.Value
		isArray bool
	)
	if t.raw != nil {
		p := t.k.parsers.Get()
		defer t.k.parsers.Put(p)
		v, err := p.ParseBytes(t.raw)
		if err != nil {
			return err
		}
		isArray = v.Type() == fastjson.TypeArray
		if in, err = inputItems(a, v); err != nil {
			return err
		}
	}
	var bs blobSet
	items, err := t.k.prepareItems(a, in, isArray, &bs)
	if err != nil {
		return err
	}
	t.input, t.blobs, t.refs = expandedInput(nil, items), bs.blobs, bs.refs
	return nil
}

// tryBody stores the body when it is a whole JSON object.
func (t *turn) tryBody() bool {
	if fastjson.ValidateBytes(t.body) != nil {
		return false
	}
	p := t.k.parsers.Get()
	defer t.k.parsers.Put(p)
	v, err := p.ParseBytes(t.body)
	if err != nil || v.Type() != fastjson.TypeObject {
		return false
	}
	if string(v.GetStringBytes("object")) != "response" {
		// Not an answer to keep (an input_tokens count, say).
		t.give("the body is not a response object")
		return true
	}
	t.finish(v)
	return true
}

// finishEvent stores the response of a terminal event's data.
func (t *turn) finishEvent(data []byte) {
	p := t.k.parsers.Get()
	defer t.k.parsers.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		t.give("the terminal event's data is not JSON")
		return
	}
	resp := v.Get("response")
	if resp == nil || resp.Type() != fastjson.TypeObject {
		t.give("the terminal event has no response object")
		return
	}
	t.finish(resp)
}

// finish stores the response object resp (and appends to the
// conversation), synchronously: a client may chain from it at once.
func (t *turn) finish(resp *fastjson.Value) {
	defer func() { t.done = true; t.release() }()
	a := t.k.arenas.Get()
	defer func() { a.Reset(); t.k.arenas.Put(a) }()
	id := string(resp.GetStringBytes("id"))
	if !validID([]byte(id)) {
		id = "resp_" + strings.TrimPrefix(t.requestID, "chatcmpl-")
	}
	// The translator never saw these two (Begin took them out); a stored
	// response carries them as OpenAI's does.
	if t.prevID != "" {
		resp.Set("previous_response_id", a.NewString(t.prevID))
	}
	if t.convID != "" {
		conv := a.NewObject()
		conv.Set("id", a.NewString(t.convID))
		resp.Set("conversation", conv)
	}
	failed := string(resp.GetStringBytes("status")) == "failed"
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	now := t.k.now()
	if t.lazy {
		if err := t.prepare(a); err != nil {
			t.k.log.LogAttrs(ctx, slog.LevelWarn, "prepare the input to store", slog.String("req_id", t.requestID), slog.Any("err", err))
			return
		}
	}
	if t.store {
		r := &store.StoredResponse{ID: id, OwnerID: t.owner, Model: clip(resp.GetStringBytes("model"), 255),
			PreviousID: t.prevID, ConversationID: t.convID, Input: t.input, Response: appendValue(nil, resp),
			BlobRefs: t.refs, CreatedAt: now, TouchedAt: now}
		err := t.k.putResponse(ctx, r, t.blobs)
		t.k.gate.wrote(err)
		if err != nil {
			t.k.log.LogAttrs(ctx, slog.LevelWarn, "store response", slog.String("req_id", t.requestID), slog.Any("err", err))
		}
	}
	if t.convID == "" || failed {
		return
	}
	output := resp.GetArray("output")
	items := make([]store.ConversationItem, 0, len(t.items)+len(output))
	for _, it := range t.items {
		items = append(items, store.ConversationItem{ItemID: it.id, Item: it.stored})
	}
	for _, o := range output {
		itemID := o.GetStringBytes("id")
		if !validID(itemID) {
			o.Set("id", a.NewString(newID("item_", 16)))
			itemID = o.GetStringBytes("id")
		}
		items = append(items, store.ConversationItem{ItemID: string(itemID), Item: appendValue(nil, o)})
	}
	err := t.k.st.AppendConversationItems(ctx, t.owner, t.convID, items, t.blobs, now)
	t.k.gate.wrote(err)
	if err != nil {
		t.k.log.LogAttrs(ctx, slog.LevelWarn, "append to conversation", slog.String("req_id", t.requestID), slog.Any("err", err))
	}
}

// sseScan finds the terminal event of a Responses stream written in any
// split. It keeps one line at a time, never the data of an event named
// as not terminal (the deltas), and at most max bytes of any line.
type sseScan struct {
	max    int
	line   []byte // the current line so far
	event  []byte // the current event's name
	data   []byte // the current event's data (only when it may be terminal)
	skip   bool   // dropping the rest of the current line
	broken bool   // the current event lost a line: it cannot be stored
}

// terminal reports one of the three events that end a Responses stream.
func terminal(name []byte) bool {
	switch string(name) {
	case "response.completed", "response.incomplete", "response.failed":
		return true
	}
	return false
}

// feed scans p and returns the data of the first terminal event it
// completes.
func (s *sseScan) feed(p []byte) ([]byte, bool) {
	for len(p) > 0 {
		seg, rest, complete := bytes.Cut(p, []byte{'\n'})
		p = rest
		if !s.skip {
			switch {
			case len(s.line) == 0 && s.ignorable(seg):
				s.skip = true // a delta's data line: not kept
			case len(s.line)+len(seg) > s.max:
				s.line, s.skip, s.broken = s.line[:0], true, true
			default:
				s.line = append(s.line, seg...)
			}
		}
		if !complete {
			return nil, false
		}
		if s.skip {
			s.skip = false
			continue
		}
		data, ok := s.handle(bytes.TrimSuffix(s.line, []byte{'\r'}))
		s.line = s.line[:0]
		if ok {
			return data, true
		}
	}
	return nil, false
}

// ignorable reports a line that starts as a data line of an event named
// as not terminal.
func (s *sseScan) ignorable(seg []byte) bool {
	return len(s.event) > 0 && !terminal(s.event) && bytes.HasPrefix(seg, []byte("data:"))
}

// handle takes one whole line.
func (s *sseScan) handle(line []byte) ([]byte, bool) {
	switch {
	case len(line) == 0: // the event ends
		data, ok := s.data, len(s.data) > 0 && !s.broken && (len(s.event) == 0 || terminal(s.event))
		if ok && len(s.event) == 0 {
			// No event: line (allowed by SSE): the data names its type.
			ok = terminal(peekType(data))
		}
		s.event, s.data, s.broken = s.event[:0], s.data[:0], false
		return data, ok
	case bytes.HasPrefix(line, []byte("event:")):
		s.event = append(s.event[:0], bytes.TrimSpace(line[len("event:"):])...)
	case bytes.HasPrefix(line, []byte("data:")):
		if len(s.event) > 0 && !terminal(s.event) {
			return nil, false
		}
		d := line[len("data:"):]
		if len(d) > 0 && d[0] == ' ' {
			d = d[1:]
		}
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(d) > s.max {
			s.broken = true
			return nil, false
		}
		s.data = append(s.data, d...)
	}
	return nil, false
}

// peekType is the "type" of an event's JSON data, "" when it has none.
func peekType(data []byte) []byte {
	var p fastjson.Parser
	v, err := p.ParseBytes(data)
	if err != nil {
		return nil
	}
	return v.GetStringBytes("type")
}

// clip is s cut to at most n bytes at a character boundary (a column's
// width).
func clip(s []byte, n int) string {
	if len(s) <= n {
		return string(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return string(s[:n])
}
