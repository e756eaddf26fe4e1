package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

// responseStore opens a migrated store that must also keep the Responses
// state.
func responseStore(t *testing.T, open func(t *testing.T) store.Store) store.ResponseStore {
	t.Helper()
	rs, ok := migrated(t, open).(store.ResponseStore)
	if !ok {
		t.Fatal("the store does not implement store.ResponseStore")
	}
	return rs
}

func blob(data string, touched time.Time) store.Blob {
	sum := sha256.Sum256([]byte(data))
	return store.Blob{Hash: hex.EncodeToString(sum[:]), Data: []byte(data), CreatedAt: touched, TouchedAt: touched}
}

func testResponses(t *testing.T, open func(t *testing.T) store.Store) {
	s := responseStore(t, open)
	c := ctx(t)
	img := blob("data:image/png;base64,AAAA", at(0))
	r := store.StoredResponse{ID: "resp_0123456789abcdef0123456789abcdef", OwnerID: 7, Model: "m",
		PreviousID: "resp_prev", Input: []byte(`[{"type":"message","id":"msg_1","content":"mr-blob:sha256:` + img.Hash + `"}]`),
		Response: []byte(`{"id":"resp_0123456789abcdef0123456789abcdef","object":"response","output":[]}`),
		BlobRefs: []string{img.Hash}, CreatedAt: at(0), TouchedAt: at(0)}
	must(t, s.PutResponse(c, &r, []store.Blob{img}), "PutResponse")

	got, err := s.Response(c, 7, r.ID, time.Time{})
	must(t, err, "Response")
	diff(t, "Response", got, r)
	b, err := s.Blob(c, img.Hash)
	must(t, err, "Blob")
	diff(t, "the response's blob", b, img)

	_, err = s.Response(c, 8, r.ID, at(5))
	wantErr(t, err, store.ErrNotFound, "another owner's response")
	_, err = s.Response(c, 7, "resp_missing", at(5))
	wantErr(t, err, store.ErrNotFound, "a missing response")
	got, err = s.Response(c, 7, r.ID, time.Time{})
	must(t, err, "Response")
	if !got.TouchedAt.Equal(at(0)) {
		t.Errorf("another owner's read touched the response: %v", got.TouchedAt)
	}
	got, err = s.Response(c, 7, r.ID, at(10))
	must(t, err, "Response touching")
	if !got.TouchedAt.Equal(at(10)) {
		t.Errorf("TouchedAt = %v after a read at %v", got.TouchedAt, at(10))
	}
	got, err = s.Response(c, 7, r.ID, at(3))
	must(t, err, "Response touching earlier")
	if !got.TouchedAt.Equal(at(10)) {
		t.Errorf("an earlier read moved TouchedAt back to %v", got.TouchedAt)
	}

	dup := r
	dup.OwnerID = 8
	wantErr(t, s.PutResponse(c, &dup, nil), store.ErrConflict, "PutResponse with a taken id")

	// Owner 0 (the bootstrap admin key) owns state like any other.
	r0 := store.StoredResponse{ID: "resp_owner0", Input: []byte("[]"), Response: []byte("{}")}
	must(t, s.PutResponse(c, &r0, nil), "PutResponse owner 0")
	if r0.CreatedAt.IsZero() || !r0.TouchedAt.Equal(r0.CreatedAt) {
		t.Errorf("zero times not defaulted: %+v", r0)
	}
	got, err = s.Response(c, 0, "resp_owner0", time.Time{})
	must(t, err, "Response owner 0")
	diff(t, "owner 0's response", got, r0)

	wantErr(t, s.DeleteResponse(c, 8, r.ID), store.ErrNotFound, "DeleteResponse by another owner")
	must(t, s.DeleteResponse(c, 7, r.ID), "DeleteResponse")
	wantErr(t, s.DeleteResponse(c, 7, r.ID), store.ErrNotFound, "DeleteResponse twice")
	_, err = s.Response(c, 7, r.ID, time.Time{})
	wantErr(t, err, store.ErrNotFound, "a deleted response")
	if _, err := s.Blob(c, img.Hash); err != nil {
		t.Errorf("the blob went with the response, before any sweep: %v", err)
	}
}

func testConversations(t *testing.T, open func(t *testing.T) store.Store) {
	s := responseStore(t, open)
	c := ctx(t)
	conv := store.Conversation{ID: "conv_1", OwnerID: 3, Metadata: []byte(`{"topic":"x"}`), CreatedAt: at(0), TouchedAt: at(0)}
	first := []store.ConversationItem{
		{ItemID: "msg_a", Item: []byte(`{"id":"msg_a"}`)},
		{ItemID: "msg_b", Item: []byte(`{"id":"msg_b"}`)},
	}
	must(t, s.CreateConversation(c, &conv, first, nil), "CreateConversation")
	if first[0].Seq >= first[1].Seq || first[0].ConversationID != "conv_1" {
		t.Fatalf("items not numbered: %+v", first)
	}
	wantErr(t, s.CreateConversation(c, &store.Conversation{ID: "conv_1", OwnerID: 4}, nil, nil), store.ErrConflict,
		"CreateConversation with a taken id")

	got, err := s.Conversation(c, 3, "conv_1", time.Time{})
	must(t, err, "Conversation")
	diff(t, "Conversation", got, conv)
	_, err = s.Conversation(c, 4, "conv_1", time.Time{})
	wantErr(t, err, store.ErrNotFound, "another owner's conversation")

	got, err = s.UpdateConversation(c, 3, "conv_1", []byte(`{"topic":"y"}`), at(20))
	must(t, err, "UpdateConversation")
	if string(got.Metadata) != `{"topic":"y"}` || !got.TouchedAt.Equal(at(20)) {
		t.Errorf("after UpdateConversation: %s touched %v", got.Metadata, got.TouchedAt)
	}
	_, err = s.UpdateConversation(c, 4, "conv_1", []byte(`{}`), at(21))
	wantErr(t, err, store.ErrNotFound, "UpdateConversation by another owner")

	more := []store.ConversationItem{
		{ItemID: "msg_c", Item: []byte(`{"id":"msg_c"}`)},
		{ItemID: "msg_a", Item: []byte(`{"id":"msg_a","again":true}`)}, // ids may repeat: the newest wins
		{ItemID: "msg_d", Item: []byte(`{"id":"msg_d"}`)},
	}
	must(t, s.AppendConversationItems(c, 3, "conv_1", more, nil, at(30)), "AppendConversationItems")
	if more[0].Seq <= first[1].Seq {
		t.Errorf("appended items numbered %d after %d", more[0].Seq, first[1].Seq)
	}
	wantErr(t, s.AppendConversationItems(c, 4, "conv_1", more[:1], nil, at(31)), store.ErrNotFound,
		"AppendConversationItems by another owner")

	ids := func(items []store.ConversationItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.ItemID)
		}
		return out
	}
	for _, tc := range []struct {
		page     store.ItemPage
		want     []string
		wantMore bool
	}{
		{store.ItemPage{}, []string{"msg_a", "msg_b", "msg_c", "msg_a", "msg_d"}, false},
		{store.ItemPage{Desc: true}, []string{"msg_d", "msg_a", "msg_c", "msg_b", "msg_a"}, false},
		{store.ItemPage{Limit: 2}, []string{"msg_a", "msg_b"}, true},
		{store.ItemPage{After: "msg_b", Limit: 2}, []string{"msg_c", "msg_a"}, true},
		{store.ItemPage{After: "msg_c", Limit: 2}, []string{"msg_a", "msg_d"}, false},
		{store.ItemPage{After: "msg_c", Limit: 2, Desc: true}, []string{"msg_b", "msg_a"}, false},
		{store.ItemPage{After: "msg_d", Limit: 1, Desc: true}, []string{"msg_a"}, true},
		{store.ItemPage{After: "msg_a"}, []string{"msg_d"}, false}, // after the newest msg_a
		// MaxBytes stops before the item that would go over it.
		{store.ItemPage{MaxBytes: 28}, []string{"msg_a", "msg_b"}, true},
		{store.ItemPage{MaxBytes: 27}, []string{"msg_a"}, true},
		{store.ItemPage{MaxBytes: 1}, nil, true},
		{store.ItemPage{MaxBytes: 1 << 20}, []string{"msg_a", "msg_b", "msg_c", "msg_a", "msg_d"}, false},
		{store.ItemPage{Limit: 2, MaxBytes: 1 << 20}, []string{"msg_a", "msg_b"}, true},
	} {
		items, gotMore, err := s.ConversationItems(c, 3, "conv_1", tc.page)
		must(t, err, fmt.Sprintf("ConversationItems %+v", tc.page))
		diff(t, fmt.Sprintf("ConversationItems %+v", tc.page), ids(items), tc.want)
		if gotMore != tc.wantMore {
			t.Errorf("ConversationItems %+v: more = %v, want %v", tc.page, gotMore, tc.wantMore)
		}
	}
	_, _, err = s.ConversationItems(c, 4, "conv_1", store.ItemPage{})
	wantErr(t, err, store.ErrNotFound, "ConversationItems of another owner's conversation")
	_, _, err = s.ConversationItems(c, 3, "conv_1", store.ItemPage{After: "msg_zzz"})
	wantErr(t, err, store.ErrNotFound, "ConversationItems after a missing item")

	it, err := s.ConversationItem(c, 3, "conv_1", "msg_a")
	must(t, err, "ConversationItem")
	if string(it.Item) != `{"id":"msg_a","again":true}` || it.Seq != more[1].Seq {
		t.Errorf("ConversationItem = %+v, want the newest msg_a", it)
	}
	_, err = s.ConversationItem(c, 4, "conv_1", "msg_a")
	wantErr(t, err, store.ErrNotFound, "another owner's item")
	_, err = s.ConversationItem(c, 3, "conv_1", "msg_zzz")
	wantErr(t, err, store.ErrNotFound, "a missing item")

	wantErr(t, s.DeleteConversationItem(c, 4, "conv_1", "msg_a", at(40)), store.ErrNotFound, "deleting another owner's item")
	must(t, s.DeleteConversationItem(c, 3, "conv_1", "msg_a", at(40)), "DeleteConversationItem")
	wantErr(t, s.DeleteConversationItem(c, 3, "conv_1", "msg_a", at(41)), store.ErrNotFound, "deleting it again")
	items, _, err := s.ConversationItems(c, 3, "conv_1", store.ItemPage{})
	must(t, err, "ConversationItems")
	diff(t, "items after deleting msg_a", ids(items), []string{"msg_b", "msg_c", "msg_d"})
	got, err = s.Conversation(c, 3, "conv_1", time.Time{})
	must(t, err, "Conversation")
	if !got.TouchedAt.Equal(at(40)) {
		t.Errorf("TouchedAt = %v after the item delete at %v", got.TouchedAt, at(40))
	}

	wantErr(t, s.DeleteConversation(c, 4, "conv_1"), store.ErrNotFound, "DeleteConversation by another owner")
	must(t, s.DeleteConversation(c, 3, "conv_1"), "DeleteConversation")
	_, err = s.Conversation(c, 3, "conv_1", time.Time{})
	wantErr(t, err, store.ErrNotFound, "a deleted conversation")
	_, err = s.ConversationItem(c, 3, "conv_1", "msg_b")
	wantErr(t, err, store.ErrNotFound, "an item of a deleted conversation")

	// A conversation created with no metadata reads back as {}.
	bare := store.Conversation{ID: "conv_2", OwnerID: 0}
	must(t, s.CreateConversation(c, &bare, nil, nil), "CreateConversation bare")
	got, err = s.Conversation(c, 0, "conv_2", time.Time{})
	must(t, err, "Conversation bare")
	if string(got.Metadata) != "{}" {
		t.Errorf("metadata = %q, want {}", got.Metadata)
	}
}

func testBlobs(t *testing.T, open func(t *testing.T) store.Store) {
	s := responseStore(t, open)
	c := ctx(t)
	b := blob("data:image/png;base64,"+string(make([]byte, 70_000)), at(0))
	must(t, s.PutBlob(c, &b), "PutBlob")
	got, err := s.Blob(c, b.Hash)
	must(t, err, "Blob")
	diff(t, "Blob", got, b)

	again := blob("data:image/png;base64,"+string(make([]byte, 70_000)), at(50))
	must(t, s.PutBlob(c, &again), "PutBlob again")
	got, err = s.Blob(c, b.Hash)
	must(t, err, "Blob")
	if !got.CreatedAt.Equal(at(0)) || !got.TouchedAt.Equal(at(50)) || len(got.Data) != len(b.Data) {
		t.Errorf("a second put: created %v touched %v (%d bytes), want created %v touched %v", got.CreatedAt, got.TouchedAt,
			len(got.Data), at(0), at(50))
	}
	must(t, s.DeleteBlob(c, b.Hash), "DeleteBlob")
	_, err = s.Blob(c, b.Hash)
	wantErr(t, err, store.ErrNotFound, "a deleted blob")
	wantErr(t, s.DeleteBlob(c, b.Hash), store.ErrNotFound, "DeleteBlob twice")
}

func testDeleteExpired(t *testing.T, open func(t *testing.T) store.Store) {
	s := responseStore(t, open)
	c := ctx(t)
	shared := blob("shared image", at(0))  // referred to by an old response and a fresh conversation
	oldOnly := blob("old image", at(0))    // referred to by an old response only
	orphan := blob("orphan", at(0))        // put, never referred to
	freshOrphan := blob("fresh", at(1000)) // put just now: a write may be about to refer to it
	for _, b := range []store.Blob{orphan, freshOrphan} {
		must(t, s.PutBlob(c, &b), "PutBlob")
	}
	old := store.StoredResponse{ID: "resp_old", OwnerID: 1, Input: []byte("[]"), Response: []byte("{}"),
		BlobRefs: []string{shared.Hash, oldOnly.Hash}, CreatedAt: at(0), TouchedAt: at(0)}
	must(t, s.PutResponse(c, &old, []store.Blob{shared, oldOnly}), "PutResponse old")
	kept := store.StoredResponse{ID: "resp_kept", OwnerID: 1, Input: []byte("[]"), Response: []byte("{}"), CreatedAt: at(0), TouchedAt: at(0)}
	must(t, s.PutResponse(c, &kept, nil), "PutResponse kept")
	_, err := s.Response(c, 1, "resp_kept", at(900)) // a read keeps it
	must(t, err, "Response")
	oldConv := store.Conversation{ID: "conv_old", OwnerID: 1, CreatedAt: at(0), TouchedAt: at(0)}
	must(t, s.CreateConversation(c, &oldConv, []store.ConversationItem{{ItemID: "msg_1", Item: []byte("{}")}}, nil), "CreateConversation old")
	freshConv := store.Conversation{ID: "conv_fresh", OwnerID: 1, CreatedAt: at(0), TouchedAt: at(0)}
	must(t, s.CreateConversation(c, &freshConv, nil, nil), "CreateConversation fresh")
	shared2 := shared
	shared2.TouchedAt = at(0) // put again by an old write: only the reference keeps it
	must(t, s.AppendConversationItems(c, 1, "conv_fresh", []store.ConversationItem{{ItemID: "msg_2", Item: []byte("{}")}},
		[]store.Blob{shared2}, at(950)), "AppendConversationItems")

	n, err := s.DeleteExpired(c, at(500))
	must(t, err, "DeleteExpired")
	// resp_old, conv_old, and the blobs oldOnly and orphan.
	if n != 4 {
		t.Errorf("DeleteExpired deleted %d rows, want 4", n)
	}
	_, err = s.Response(c, 1, "resp_old", time.Time{})
	wantErr(t, err, store.ErrNotFound, "an expired response")
	_, err = s.Response(c, 1, "resp_kept", time.Time{})
	must(t, err, "a response read after the cut-off")
	_, err = s.Conversation(c, 1, "conv_old", time.Time{})
	wantErr(t, err, store.ErrNotFound, "an expired conversation")
	_, err = s.ConversationItem(c, 1, "conv_old", "msg_1")
	wantErr(t, err, store.ErrNotFound, "an expired conversation's item")
	_, err = s.Conversation(c, 1, "conv_fresh", time.Time{})
	must(t, err, "a conversation appended to after the cut-off")
	for _, b := range []store.Blob{oldOnly, orphan} {
		_, err = s.Blob(c, b.Hash)
		wantErr(t, err, store.ErrNotFound, "an orphaned old blob "+string(b.Data))
	}
	for _, b := range []store.Blob{shared, freshOrphan} {
		_, err = s.Blob(c, b.Hash)
		must(t, err, "a blob still referred to or fresh: "+string(b.Data))
	}
	n, err = s.DeleteExpired(c, at(500))
	must(t, err, "DeleteExpired again")
	if n != 0 {
		t.Errorf("a second sweep deleted %d rows", n)
	}

	// Once the conversation goes, the shared blob is an orphan too.
	must(t, s.DeleteConversation(c, 1, "conv_fresh"), "DeleteConversation")
	n, err = s.DeleteExpired(c, at(2000))
	must(t, err, "DeleteExpired later")
	if n != 3 { // resp_kept, shared, freshOrphan
		t.Errorf("the later sweep deleted %d rows, want 3", n)
	}
	_, err = s.Blob(c, shared.Hash)
	wantErr(t, err, store.ErrNotFound, "the shared blob after its holders went")
}

// Appends to one conversation from many goroutines number every item
// once, with no gap.
func testConversationAppendConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := responseStore(t, open)
	c := ctx(t)
	conv := store.Conversation{ID: "conv_c", OwnerID: 1}
	must(t, s.CreateConversation(c, &conv, nil, nil), "CreateConversation")
	const workers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				items := []store.ConversationItem{
					{ItemID: fmt.Sprintf("msg_%d_%d_a", w, i), Item: []byte("{}")},
					{ItemID: fmt.Sprintf("msg_%d_%d_b", w, i), Item: []byte("{}")},
				}
				if err := s.AppendConversationItems(c, 1, "conv_c", items, nil, time.Time{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent append: %v", err)
	}
	items, _, err := s.ConversationItems(c, 1, "conv_c", store.ItemPage{})
	must(t, err, "ConversationItems")
	if len(items) != workers*each*2 {
		t.Fatalf("%d items, want %d", len(items), workers*each*2)
	}
	for i, it := range items {
		if it.Seq != items[0].Seq+int64(i) {
			t.Fatalf("item %d numbered %d after %d: a gap or a repeat", i, it.Seq, items[0].Seq)
		}
		if i%2 == 1 && it.ItemID[:len(it.ItemID)-1] != items[i-1].ItemID[:len(it.ItemID)-1] {
			t.Fatalf("one append's two items were split: %s, %s", items[i-1].ItemID, it.ItemID)
		}
	}
}

// StoredUsage sums an owner's responses and conversation items, each
// with the blobs put with it, and nothing of other owners'; deletes give
// it back.
func testStoredUsage(t *testing.T, open func(t *testing.T) store.Store) {
	s, c := responseStore(t, open), ctx(t)
	r := store.StoredResponse{ID: "resp_u1", OwnerID: 7, Input: []byte(`[{"a":1}]`), Response: []byte(`{"id":"resp_u1"}`),
		BlobRefs: []string{blob("imgdata", at(1)).Hash}}
	must(t, s.PutResponse(c, &r, []store.Blob{blob("imgdata", at(1))}), "PutResponse")
	conv := store.Conversation{ID: "conv_u1", OwnerID: 7}
	items := []store.ConversationItem{{ItemID: "msg_1", Item: []byte(`{"id":"msg_1"}`)}, {ItemID: "msg_2", Item: []byte(`{"id":"msg_2"}`)}}
	must(t, s.CreateConversation(c, &conv, items, []store.Blob{blob("more", at(1))}), "CreateConversation")
	other := store.StoredResponse{ID: "resp_u2", OwnerID: 8, Input: []byte(`[]`), Response: []byte(`{}`)}
	must(t, s.PutResponse(c, &other, nil), "PutResponse")

	want := store.StoredUsage{Bytes: int64(len(r.Input) + len(r.Response) + len("imgdata") + 14 + 14 + len("more")), Items: 3}
	u, err := s.StoredUsage(c, 7)
	must(t, err, "StoredUsage")
	diff(t, "StoredUsage", u, want)
	u, err = s.StoredUsage(c, 9)
	must(t, err, "StoredUsage of an owner with nothing")
	diff(t, "StoredUsage of an owner with nothing", u, store.StoredUsage{})

	must(t, s.DeleteConversation(c, 7, "conv_u1"), "DeleteConversation")
	must(t, s.DeleteResponse(c, 7, "resp_u1"), "DeleteResponse")
	u, err = s.StoredUsage(c, 7)
	must(t, err, "StoredUsage")
	diff(t, "StoredUsage after the deletes", u, store.StoredUsage{})
}
