package responses

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// maxItemsPerCall is how many items one create or add call may carry, as
// in OpenAI's API.
const maxItemsPerCall = 20

// conversationJSON is the conversation object.
func conversationJSON(c store.Conversation) []byte {
	b := append(make([]byte, 0, 96+len(c.Metadata)), `{"id":`...)
	b = jsonw.String(b, c.ID)
	b = append(b, `,"object":"conversation","created_at":`...)
	b = jsonw.Int(b, c.CreatedAt.Unix())
	b = append(b, `,"metadata":`...)
	if len(c.Metadata) == 0 {
		b = append(b, "{}"...)
	} else {
		b = append(b, c.Metadata...)
	}
	return append(b, '}')
}

// readMetadata checks OpenAI's metadata rules (at most 16 string pairs,
// keys up to 64 characters, values up to 512) and returns it as JSON;
// absent or null is {}.
func readMetadata(v *fastjson.Value) ([]byte, error) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return []byte("{}"), nil
	}
	o, err := v.Object()
	if err != nil {
		return nil, badInput("metadata", "Invalid type for 'metadata': expected an object of strings.")
	}
	if o.Len() > 16 {
		return nil, badInput("metadata", "Invalid 'metadata': at most 16 pairs, got %d.", o.Len())
	}
	o.Visit(func(key []byte, vv *fastjson.Value) {
		if err != nil {
			return
		}
		s, e := vv.StringBytes()
		switch {
		case e != nil:
			err = badInput("metadata", "Invalid 'metadata': the value of %q is not a string.", key)
		case utf8.RuneCount(key) > 64:
			err = badInput("metadata", "Invalid 'metadata': a key is longer than 64 characters.")
		case utf8.RuneCount(s) > 512:
			err = badInput("metadata", "Invalid 'metadata': the value of %q is longer than 512 characters.", key)
		}
	})
	if err != nil {
		return nil, err
	}
	return appendValue(nil, v), nil
}

// parseBody parses a JSON object body (an empty body is {}).
func parseBody(p *fastjson.Parser, body []byte) (*fastjson.Value, error) {
	if len(body) == 0 {
		body = []byte("{}")
	}
	if fastjson.ValidateBytes(body) != nil {
		return nil, badInput("", "We could not parse the JSON body of your request.")
	}
	v, err := p.ParseBytes(body)
	if err != nil || v.Type() != fastjson.TypeObject {
		return nil, badInput("", "The request body must be a JSON object.")
	}
	return v, nil
}

// readItems prepares the items of a create or add call.
func (k *Keeper) readItems(a *fastjson.Arena, v *fastjson.Value, required bool, bs *blobSet) ([]prepared, error) {
	iv := v.Get("items")
	if iv == nil || iv.Type() == fastjson.TypeNull {
		if required {
			return nil, badInput("items", "Missing required parameter: 'items'.")
		}
		return nil, nil
	}
	arr, err := iv.Array()
	if err != nil {
		return nil, badInput("items", "Invalid type for 'items': expected an array of items.")
	}
	if len(arr) > maxItemsPerCall || required && len(arr) == 0 {
		return nil, badInput("items", "Invalid 'items': expected 1 to %d items, got %d.", maxItemsPerCall, len(arr))
	}
	items := make([]prepared, len(arr))
	for i, it := range arr {
		if items[i], err = k.prepareItem(a, it, itemName{"items", i}, bs); err != nil {
			return nil, err
		}
	}
	return items, nil
}

func storedItems(items []prepared) []store.ConversationItem {
	out := make([]store.ConversationItem, len(items))
	for i, it := range items {
		out[i] = store.ConversationItem{ItemID: it.id, Item: it.stored}
	}
	return out
}

// storedSize is what items and their new blobs add to the store.
func storedSize(items []prepared, bs *blobSet) int64 {
	var n int64
	for _, it := range items {
		n += int64(len(it.stored))
	}
	for _, b := range bs.blobs {
		n += int64(len(b.Data))
	}
	return n
}

func (k *Keeper) createConversation(ctx context.Context, who *auth.Principal, body []byte) ([]byte, error) {
	owner := who.UserID
	p := k.parsers.Get()
	defer k.parsers.Put(p)
	a := k.arenas.Get()
	defer func() { a.Reset(); k.arenas.Put(a) }()
	v, err := parseBody(p, body)
	if err != nil {
		return nil, err
	}
	meta, err := readMetadata(v.Get("metadata"))
	if err != nil {
		return nil, err
	}
	var bs blobSet
	items, err := k.readItems(a, v, false, &bs)
	if err != nil {
		return nil, err
	}
	if err := k.admitStored(ctx, who, storedSize(items, &bs), int64(len(items))); err != nil {
		return nil, err
	}
	now := k.now()
	c := store.Conversation{ID: newID("conv_", 24), OwnerID: owner, Metadata: meta, CreatedAt: now, TouchedAt: now}
	if err := k.st.CreateConversation(ctx, &c, storedItems(items), bs.blobs); err != nil {
		return nil, storeErr("create a conversation", err)
	}
	return conversationJSON(c), nil
}

func (k *Keeper) conversation(ctx context.Context, owner int64, id string) (store.Conversation, error) {
	if !validID([]byte(id)) {
		return store.Conversation{}, convNotFound(id, "")
	}
	c, err := k.st.Conversation(ctx, owner, id, k.now())
	if err != nil {
		return store.Conversation{}, notFound(err, func() error { return convNotFound(id, "") }, "read a conversation")
	}
	return c, nil
}

func (k *Keeper) getConversation(ctx context.Context, owner int64, id string) ([]byte, error) {
	c, err := k.conversation(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	return conversationJSON(c), nil
}

func (k *Keeper) updateConversation(ctx context.Context, owner int64, id string, body []byte) ([]byte, error) {
	if !validID([]byte(id)) {
		return nil, convNotFound(id, "")
	}
	p := k.parsers.Get()
	defer k.parsers.Put(p)
	v, err := parseBody(p, body)
	if err != nil {
		return nil, err
	}
	mv := v.Get("metadata")
	if mv == nil {
		return nil, badInput("metadata", "Missing required parameter: 'metadata'.")
	}
	meta, err := readMetadata(mv)
	if err != nil {
		return nil, err
	}
	c, err := k.st.UpdateConversation(ctx, owner, id, meta, k.now())
	if err != nil {
		return nil, notFound(err, func() error { return convNotFound(id, "") }, "update a conversation")
	}
	return conversationJSON(c), nil
}

func (k *Keeper) deleteConversation(ctx context.Context, owner int64, id string) ([]byte, error) {
	if !validID([]byte(id)) {
		return nil, convNotFound(id, "")
	}
	if err := k.st.DeleteConversation(ctx, owner, id); err != nil {
		return nil, notFound(err, func() error { return convNotFound(id, "") }, "delete a conversation")
	}
	return deleted(id, "conversation.deleted"), nil
}

func (k *Keeper) listItems(ctx context.Context, owner int64, id string, q *fasthttp.Args) ([]byte, error) {
	pg, err := readPage(q)
	if err != nil {
		return nil, err
	}
	if _, err := k.conversation(ctx, owner, id); err != nil {
		return nil, err
	}
	if pg.after != "" && !validID([]byte(pg.after)) {
		return nil, afterNotFound(pg.after)
	}
	stored, more, err := k.st.ConversationItems(ctx, owner, id, store.ItemPage{After: pg.after, Limit: pg.limit, Desc: pg.desc})
	if errors.Is(err, store.ErrNotFound) && pg.after != "" {
		return nil, afterNotFound(pg.after)
	}
	if err != nil {
		return nil, notFound(err, func() error { return convNotFound(id, "") }, "list a conversation's items")
	}
	items, err := k.liveItems(ctx, stored)
	if err != nil {
		return nil, err
	}
	return list(items, more), nil
}

// liveItems resolves stored conversation items for a client.
func (k *Keeper) liveItems(ctx context.Context, stored []store.ConversationItem) ([]prepared, error) {
	p := k.parsers.Get()
	defer k.parsers.Put(p)
	a := k.arenas.Get()
	defer func() { a.Reset(); k.arenas.Put(a) }()
	res := &resolver{k: k, ctx: ctx}
	items := make([]prepared, len(stored))
	for i, it := range stored {
		live, err := res.liveJSON(p, a, it.Item)
		if err != nil {
			return nil, err
		}
		items[i] = prepared{id: it.ItemID, live: live}
	}
	return items, nil
}

func (k *Keeper) addItems(ctx context.Context, who *auth.Principal, id string, body []byte) ([]byte, error) {
	owner := who.UserID
	if !validID([]byte(id)) {
		return nil, convNotFound(id, "")
	}
	p := k.parsers.Get()
	defer k.parsers.Put(p)
	a := k.arenas.Get()
	defer func() { a.Reset(); k.arenas.Put(a) }()
	v, err := parseBody(p, body)
	if err != nil {
		return nil, err
	}
	var bs blobSet
	items, err := k.readItems(a, v, true, &bs)
	if err != nil {
		return nil, err
	}
	if err := k.admitStored(ctx, who, storedSize(items, &bs), int64(len(items))); err != nil {
		return nil, err
	}
	if err := k.st.AppendConversationItems(ctx, owner, id, storedItems(items), bs.blobs, k.now()); err != nil {
		return nil, notFound(err, func() error { return convNotFound(id, "") }, "add items to a conversation")
	}
	return list(items, false), nil
}

func itemNotFound(itemID string) error {
	return apiNotFound("Item with id '" + itemID + "' not found.")
}

func (k *Keeper) getItem(ctx context.Context, owner int64, id, itemID string) ([]byte, error) {
	if _, err := k.conversation(ctx, owner, id); err != nil {
		return nil, err
	}
	if !validID([]byte(itemID)) {
		return nil, itemNotFound(itemID)
	}
	it, err := k.st.ConversationItem(ctx, owner, id, itemID)
	if err != nil {
		return nil, notFound(err, func() error { return itemNotFound(itemID) }, "read a conversation item")
	}
	items, err := k.liveItems(ctx, []store.ConversationItem{it})
	if err != nil {
		return nil, err
	}
	return items[0].live, nil
}

// deleteItem deletes an item and answers the conversation, as OpenAI does.
func (k *Keeper) deleteItem(ctx context.Context, owner int64, id, itemID string) ([]byte, error) {
	if _, err := k.conversation(ctx, owner, id); err != nil {
		return nil, err
	}
	if !validID([]byte(itemID)) {
		return nil, itemNotFound(itemID)
	}
	if err := k.st.DeleteConversationItem(ctx, owner, id, itemID, k.now()); err != nil {
		return nil, notFound(err, func() error { return itemNotFound(itemID) }, "delete a conversation item")
	}
	return k.getConversation(ctx, owner, id)
}
