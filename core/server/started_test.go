package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/outcome"
)

// starterFunc records what it is told at admission and at the end.
type starterFunc struct {
	started, observed []outcome.Outcome
}

func (f *starterFunc) Started(o *outcome.Outcome) { f.started = append(f.started, *o) }
func (f *starterFunc) Observe(o *outcome.Outcome) { f.observed = append(f.observed, *o) }

func panicServer(obs ...outcome.Observer) *Server {
	s := &Server{cfg: config.Default(), log: slog.New(slog.DiscardHandler), met: newMetrics(), baseCtx: context.Background(),
		observers: obs, starters: starters(obs)}
	s.exchanges.New = func() any { return newExchange() }
	return s
}

// A handler that panics still tells the observers how the request
// ended: Panicked, 500, the panic in the error.
func TestServer_RecoverPanicObserves(t *testing.T) {
	f := &starterFunc{}
	s := panicServer(f)
	ex := newExchange()
	ex.begin(s, nil)
	ex.principal.User = "alice"
	ex.out.User, ex.out.Model = "alice", "qwen3-8b"
	ex.noteStarted()
	var ctx fasthttp.RequestCtx
	func() {
		defer s.recoverPanic(&ctx, ex)
		panic("a bug")
	}()
	if len(f.started) != 1 || f.started[0].RequestID != ex.id || f.started[0].Panicked {
		t.Fatalf("started %+v", f.started)
	}
	if len(f.observed) != 1 {
		t.Fatalf("observed %d outcomes, want 1", len(f.observed))
	}
	o := f.observed[0]
	if !o.Panicked || o.Status != 500 || o.RequestID != ex.id || o.Error != "panic: a bug" || o.Model != "qwen3-8b" || o.Duration <= 0 {
		t.Errorf("observed %+v", o)
	}
}

// With the audit recorder as the observer, the panicking request's row
// (written at admission) ends as a panic row, not a started one.
func TestServer_RecoverPanicAuditRow(t *testing.T) {
	dir := t.TempDir()
	rec, err := audit.New(audit.Options{Dir: filepath.Join(dir, "spool"), EmbeddedPath: filepath.Join(dir, "audit.db"),
		FlushEvery: 20 * time.Millisecond, Replica: "gw", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = rec.Run(ctx); close(ran) }()
	t.Cleanup(func() { _ = rec.Close(context.Background()); cancel(); <-ran })
	s := panicServer(rec)
	ex := newExchange()
	ex.begin(s, nil)
	ex.out.User, ex.out.Model = "alice", "qwen3-8b"
	ex.noteStarted()
	id := ex.id
	var rctx fasthttp.RequestCtx
	func() {
		defer s.recoverPanic(&rctx, ex)
		panic("a bug")
	}()
	search := audit.NewSQLiteSearcher(rec.EmbeddedDB())
	var got audit.Event
	testutil.WaitFor(t, "the panic row", 20*time.Second, func() bool {
		got, err = search.Get(context.Background(), id)
		return err == nil && got.State == audit.RowPanic
	})
	if got.Status != 500 || got.Error != "panic: a bug" || got.Model != "qwen3-8b" {
		t.Errorf("row %+v", got)
	}
}
