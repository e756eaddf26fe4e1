package responses

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3/conversations"

	"github.com/mindrouter/mindrouter/core/store"
)

// itemCounter is a store that counts the conversation item bytes it hands
// the keeper.
type itemCounter struct {
	store.ResponseStore
	bytes atomic.Int64
}

func (c *itemCounter) ConversationItems(ctx context.Context, owner int64, id string, page store.ItemPage) ([]store.ConversationItem, bool, error) {
	items, more, err := c.ResponseStore.ConversationItems(ctx, owner, id, page)
	for _, it := range items {
		c.bytes.Add(int64(len(it.Item)))
	}
	return items, more, err
}

// Bug: a request continuing a conversation loaded its whole history
// before its size was checked: two requests on a 300 MB conversation
// took the gateway from 0.8 to 4 GB to answer 400. The read stops at
// MaxHistoryBytes.
func TestKeeper_ConversationHistoryReadIsBounded(t *testing.T) {
	const limit, itemText, items = 64 << 10, 8 << 10, 40
	e := newEnv(t, func(o *Options) { o.MaxHistoryBytes = limit })
	var conv conversations.Conversation
	e.ok(alice, "POST", "/v1/conversations", `{}`, &conv)
	item := `{"role":"user","content":"` + strings.Repeat("y", itemText) + `"}`
	for i := 0; i < items; i += 10 {
		e.ok(alice, "POST", "/v1/conversations/"+conv.ID+"/items",
			`{"items":[`+strings.TrimSuffix(strings.Repeat(item+",", 10), ",")+`]}`, nil)
	}
	counted := &itemCounter{ResponseStore: e.st}
	e.k = New(counted, e.k.opts, nil)

	ae := e.beginErr(alice, `{"model":"m","conversation":"`+conv.ID+`","input":"x"}`)
	if ae.Status != 400 || ae.Param != "conversation" {
		t.Fatalf("a conversation of %d bytes over a %d-byte limit: %+v", items*itemText, limit, ae)
	}
	if got := counted.bytes.Load(); got > limit {
		t.Fatalf("the keeper read %d bytes of a %d-byte conversation for a %d-byte history limit", got, items*itemText, limit)
	}
	// Within the limit the history is spliced as before.
	small := newEnv(t, func(o *Options) { o.MaxHistoryBytes = limit })
	var c2 conversations.Conversation
	small.ok(alice, "POST", "/v1/conversations", `{"items":[`+item+`]}`, &c2)
	if out, _, _ := small.begin(alice, `{"model":"m","conversation":"`+c2.ID+`","input":"x"}`); !strings.Contains(out, strings.Repeat("y", itemText)) {
		t.Fatalf("the history was not spliced: %.200s", out)
	}
}
