package responses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// TestKeeper_StoreDown: with MariaDB unreachable, a request that would
// store its answer (store true, a conversation) is refused with 503 and
// Retry-After before anything is generated, instead of being answered
// with an id that is then lost; one that stores nothing still goes; the
// state routes answer 503 with Retry-After, not 500; all is well again
// once the store is back.
func TestKeeper_StoreDown(t *testing.T) {
	db := testsvc.StartMariaDB(t)
	px := testsvc.StartProxy(t, db.Addr)
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqlstore.MySQL, db.DSNVia(px))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, k: New(st, Options{}, nil), st: st, clock: &clock{t: time.Now()}}
	_, respID := e.answer(alice, `{"model":"m","input":"hi"}`, "hello")
	var conv struct{ ID string }
	e.ok(alice, "POST", "/v1/conversations", `{}`, &conv)

	px.Cut()
	// The gate trusts the store for a second after it last answered.
	storeDown := func(err error) bool {
		var ae *apierr.Error
		return errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable && ae.RetryAfterSeconds() >= 1
	}
	testutil.WaitFor(t, "a stored request refused", 10*time.Second, func() bool {
		_, _, err := e.k.Begin(ctx, alice, "chatcmpl-1", []byte(`{"model":"m","input":"hi"}`))
		return storeDown(err)
	})
	for _, body := range []string{
		`{"model":"m","input":"hi","store":true}`,
		`{"model":"m","input":"hi","store":false,"conversation":"` + conv.ID + `"}`,
		`{"model":"m","input":"hi","previous_response_id":"` + respID + `"}`,
	} {
		if _, _, err := e.k.Begin(ctx, alice, "chatcmpl-2", []byte(body)); !storeDown(err) {
			t.Errorf("Begin(%s) with the store down: %v, want 503 with Retry-After", body, err)
		}
	}
	if _, turn, err := e.k.Begin(ctx, alice, "chatcmpl-3", []byte(`{"model":"m","input":"hi","store":false}`)); err != nil || turn != nil {
		t.Errorf("store false with the store down: %v, %v; want it through, recording nothing", turn, err)
	}
	for _, r := range []struct{ method, uri, body string }{
		{"GET", "/v1/responses/" + respID, ""},
		{"POST", "/v1/conversations", `{}`},
		{"GET", "/v1/conversations/" + conv.ID + "/items", ""},
	} {
		var req fasthttp.Request
		req.Header.SetMethod(r.method)
		req.SetRequestURI(r.uri)
		var rc fasthttp.RequestCtx
		rc.Init(&req, nil, nil)
		e.k.Serve(&rc, alice, []byte(r.body))
		if rc.Response.StatusCode() != 503 || string(rc.Response.Header.Peek("Retry-After")) == "" {
			t.Errorf("%s %s with the store down: %d Retry-After %q: %s", r.method, r.uri, rc.Response.StatusCode(),
				rc.Response.Header.Peek("Retry-After"), rc.Response.Body())
		}
	}

	px.Restore(t)
	testutil.WaitFor(t, "the store back", 10*time.Second, func() bool {
		_, _, err := e.k.Begin(ctx, alice, "chatcmpl-4", []byte(`{"model":"m","input":"hi"}`))
		return err == nil
	})
	e.ok(alice, "GET", "/v1/responses/"+respID, "", nil)
}

// flakyStore fails the first fails response writes as an unreachable
// store does; when landed, the failed write was stored all the same (its
// acknowledgement was what got lost).
type flakyStore struct {
	*sqlstore.Store
	fails  int
	landed bool
	calls  int
}

func (s *flakyStore) PutResponse(ctx context.Context, r *store.StoredResponse, blobs []store.Blob) error {
	s.calls++
	if s.calls <= s.fails {
		if s.landed {
			if err := s.Store.PutResponse(ctx, r, blobs); err != nil {
				return err
			}
		}
		return fmt.Errorf("put response: %w: connection lost", store.ErrUnavailable)
	}
	return s.Store.PutResponse(ctx, r, blobs)
}

// TestKeeper_WriteRetried: a response write that meets a store blip is
// retried, so the id the client got can be read and continued from; a
// retry that finds the response already stored (only the
// acknowledgement was lost) is a success.
func TestKeeper_WriteRetried(t *testing.T) {
	for _, landed := range []bool{false, true} {
		t.Run(fmt.Sprintf("landed=%v", landed), func(t *testing.T) {
			e := newEnv(t)
			fs := &flakyStore{Store: e.st, fails: 1, landed: landed}
			e.k = New(fs, e.k.opts, nil)
			_, id := e.answer(alice, `{"model":"m","input":"hi"}`, "hello")
			e.ok(alice, "GET", "/v1/responses/"+id, "", nil)
			if fs.calls != 2 {
				t.Errorf("%d writes, want 2 (one failed, one retry)", fs.calls)
			}
		})
	}
}
