package store

import (
	"context"
	"time"
)

// StoredResponse is an OpenAI Responses API response kept for its owner:
// what GET /v1/responses/{id} answers and what previous_response_id
// continues from. Input is the whole expanded input the response was
// generated from (its history spliced in front of the request's items),
// so continuing a chain is one read, not a walk.
type StoredResponse struct {
	ID             string // "resp_<32 hex>"
	OwnerID        int64  // auth.Principal.UserID (0: the bootstrap admin key)
	Model          string
	PreviousID     string // previous_response_id, "" for none
	ConversationID string // the conversation it answered in, "" for none
	// Input is a JSON array of the expanded input items; large images are
	// references to blobs ("mr-blob:sha256:<hex>").
	Input []byte
	// Response is the response object as the client got it (JSON).
	Response []byte
	// BlobRefs are the hashes of the blobs Input refers to; they keep
	// those blobs alive while the response is.
	BlobRefs []string
	// Size is the bytes it added to the store, set by PutResponse: Input,
	// Response and the blobs put with it (StoredUsage sums it).
	Size      int64
	CreatedAt time.Time
	TouchedAt time.Time // the last write or read that kept it alive
}

// Conversation is an OpenAI Conversations API conversation.
type Conversation struct {
	ID        string // "conv_<hex>"
	OwnerID   int64
	Metadata  []byte // a JSON object of string pairs ({} for none)
	CreatedAt time.Time
	TouchedAt time.Time
}

// ConversationItem is one item of a conversation, in the order the
// conversation got them (Seq).
type ConversationItem struct {
	ConversationID string
	ItemID         string // the item's "id"; not unique: the newest wins a lookup
	Seq            int64  // set by the store, increasing within a conversation
	Item           []byte // the item (JSON), large images by reference
	CreatedAt      time.Time
}

// Blob is content-addressed data kept once however many items refer to
// it: a large image of an input item.
type Blob struct {
	Hash      string // hex SHA-256 of Data
	Data      []byte
	CreatedAt time.Time
	TouchedAt time.Time // the last put
}

// ItemPage selects conversation items: after the item After (exclusive,
// "" from the first) in ascending Seq order, or descending when Desc, at
// most Limit (0: all). MaxBytes (0: no bound) stops the read at the first
// item that would bring the items' total bytes over it: that item and the
// rest are not read, and more is true. A caller that bounds what it
// loads (a conversation's history) so never reads more than its bound.
type ItemPage struct {
	After    string
	Limit    int
	Desc     bool
	MaxBytes int
}

// StoredUsage is what one owner's stored responses and conversation
// items hold: the bytes they added to the store (their JSON and the
// blobs first stored with them) and their number.
type StoredUsage struct {
	Bytes, Items int64
}

// ResponseStore keeps the Responses and Conversations state. Every read
// and write of a response or conversation names its owner: another
// owner's id is ErrNotFound, exactly like an unknown one. Methods that
// take `at` set the row's touched_at to it (a zero at leaves it), which
// keeps it from DeleteExpired. Safe for concurrent use.
type ResponseStore interface {
	// PutResponse inserts r (ErrConflict when its ID exists), the blobs
	// given (each kept once: an existing hash is only touched) and a
	// reference from r to each of r.BlobRefs, in one transaction.
	PutResponse(ctx context.Context, r *StoredResponse, blobs []Blob) error
	// Response reads a response with its BlobRefs, touching it at at.
	Response(ctx context.Context, ownerID int64, id string, at time.Time) (StoredResponse, error)
	DeleteResponse(ctx context.Context, ownerID int64, id string) error

	// CreateConversation inserts c with its first items (their Seq set)
	// and blobs in one transaction. ErrConflict when its ID exists.
	CreateConversation(ctx context.Context, c *Conversation, items []ConversationItem, blobs []Blob) error
	Conversation(ctx context.Context, ownerID int64, id string, at time.Time) (Conversation, error)
	// UpdateConversation replaces the metadata.
	UpdateConversation(ctx context.Context, ownerID int64, id string, metadata []byte, at time.Time) (Conversation, error)
	// DeleteConversation deletes it with its items.
	DeleteConversation(ctx context.Context, ownerID int64, id string) error
	// AppendConversationItems adds items after the existing ones (setting
	// their Seq and ConversationID) and blobs, in one transaction.
	AppendConversationItems(ctx context.Context, ownerID int64, id string, items []ConversationItem, blobs []Blob, at time.Time) error
	// ConversationItems lists a page of items and whether more follow.
	// ErrNotFound when the conversation or the After item is not there.
	ConversationItems(ctx context.Context, ownerID int64, id string, page ItemPage) (items []ConversationItem, more bool, err error)
	ConversationItem(ctx context.Context, ownerID int64, id, itemID string) (ConversationItem, error)
	// DeleteConversationItem deletes every item of the conversation with
	// that id.
	DeleteConversationItem(ctx context.Context, ownerID int64, id, itemID string, at time.Time) error

	// PutBlob stores b (CreatedAt and TouchedAt default to now); an
	// existing hash is only touched. A blob nothing refers to is removed
	// by the next DeleteExpired after its TouchedAt falls before the
	// cut-off.
	PutBlob(ctx context.Context, b *Blob) error
	Blob(ctx context.Context, hash string) (Blob, error)
	DeleteBlob(ctx context.Context, hash string) error

	// StoredUsage sums an owner's stored responses and conversation
	// items, from their recorded sizes (no content is read).
	StoredUsage(ctx context.Context, ownerID int64) (StoredUsage, error)

	// DeleteExpired deletes responses and conversations touched before
	// before, then blobs touched before it that nothing refers to, and
	// returns how many rows of the three it deleted.
	DeleteExpired(ctx context.Context, before time.Time) (int64, error)
}
