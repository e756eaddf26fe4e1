package sdktest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// fakeTB records failures instead of failing the real test, so the kit's
// own checks can be tested for catching what they must catch.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	msgs   []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.msgs = append(f.msgs, fmt.Sprintf(format, a...))
}
func (f *fakeTB) Error(a ...any)                 { f.Errorf("%s", fmt.Sprint(a...)) }
func (f *fakeTB) Fatalf(format string, a ...any) { f.Errorf(format, a...); runtime.Goexit() }
func (f *fakeTB) Fatal(a ...any)                 { f.Error(a...); runtime.Goexit() }
func (f *fakeTB) FailNow()                       { f.Errorf("FailNow"); runtime.Goexit() }
func (f *fakeTB) Failed() bool                   { return f.failed }
func (f *fakeTB) text() string                   { return strings.Join(f.msgs, "\n") }

// run calls fn with a fakeTB in its own goroutine (Fatal ends it) and
// returns the fakeTB.
func run(t *testing.T, fn func(tb *fakeTB)) *fakeTB {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

// echo is a translator whose stream output does not depend on batching:
// one line per chunk's text, and a trailer counting them (kept in the
// state blob) on the end call.
type echo struct {
	sdk.Unimplemented
	perCall bool // the bug: a line per call, so batching shows
	panics  bool
}

func manifest(name string, kind sdk.Kind) sdk.Manifest {
	return sdk.Manifest{Name: name, Version: "1", Kind: kind, Format: name,
		Routes: []sdk.Route{{Name: "talk", Kind: sdk.EndpointChat, Method: "POST", Path: "/talk"},
			{Name: "list", Kind: sdk.EndpointModels, Method: "GET", Path: "/list"}},
		Probes: []sdk.Probe{{Name: "health", Method: "GET", Path: "/health"}}}
}

func newEcho(e *echo) *sdk.Plugin { return sdk.NewTranslator(manifest("echo", sdk.KindTranslator), e) }

func (e *echo) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	if e.panics && strings.Contains(string(body), "boom") {
		panic("boom")
	}
	if len(body) == 0 {
		return sdk.BadInput("empty body")
	}
	req.Model = c.Meta(abi.MetaRoute) + "/" + c.Meta(abi.MetaKind) + "/" + string(body)
	return nil
}

func (e *echo) EncodeResponse(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	out.Body = fmt.Appendf(out.Body, "%s %s %s %s", c.Meta(abi.MetaID), c.Meta(abi.MetaModel), c.Meta(abi.MetaCreated), resp.Model)
	out.SetMeta("x", "1")
	out.SetMeta("x", "2")
	return nil
}

func (e *echo) EncodeStream(c *sdk.Call, st *sdk.State, chunks []canon.ChatChunk, out *sdk.Output) error {
	r := sdk.StateReader{B: st.In}
	n := uint64(0)
	if len(st.In) > 0 {
		if n = r.Uint(); r.Err() != nil {
			return sdk.BadInput("bad state")
		}
	}
	if e.perCall {
		out.Body = append(out.Body, "call\n"...)
	}
	for i := range chunks {
		for _, ch := range chunks[i].Choices {
			out.Body = append(out.Body, ch.Delta.Content+"\n"...)
			n++
		}
	}
	if c.End() {
		out.Body = fmt.Appendf(out.Body, "end %d\n", n)
	} else if len(chunks) > 0 {
		w := sdk.StateWriter{}
		w.Uint(n)
		st.Set(w.B)
	}
	return nil
}

// counter is an adapter decoding NDJSON lines "text" into chunks until a
// line "done".
type counter struct{ sdk.Unimplemented }

func (counter) DecodeStream(c *sdk.Call, st *sdk.State, events [][]byte, chunks *[]canon.ChatChunk) error {
	for _, ev := range events {
		if string(ev) == "done" {
			c.Done()
			return nil
		}
		*chunks = append(*chunks, canon.ChatChunk{ID: "x", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: string(ev)}}}})
	}
	return nil
}

func (counter) DecodeProbe(c *sdk.Call, probe string, body []byte, d *canon.Discovery) error {
	d.Version = probe + " " + c.Meta(abi.MetaStatus) + " " + string(body)
	return nil
}

func chunk(s string) canon.ChatChunk {
	return canon.ChatChunk{ID: "x", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: s}}}}
}
