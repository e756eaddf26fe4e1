package fakellm

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Fault injection. Each inference request draws, in order, whether it errors
// (HTTP 500 in the engine's error shape), hangs (no answer at all until the
// client disconnects) or drops (the connection closes mid-response). Draws
// come from one random source seeded by Config.Seed.

type faultKind uint8

const (
	faultNone faultKind = iota
	faultError
	faultHang
	faultDrop
)

type faults struct {
	errorRate, hangRate, dropRate float64

	mu  sync.Mutex
	rng *rand.Rand

	errors, hangs, drops atomic.Int64
}

func (f *faults) init(cfg Config) {
	f.errorRate, f.hangRate, f.dropRate = cfg.ErrorRate, cfg.HangRate, cfg.DropRate
	f.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6661_6b65_6c6c_6d21))
}

// draw decides the fault of one request.
func (f *faults) draw() faultKind {
	if f.errorRate == 0 && f.hangRate == 0 && f.dropRate == 0 {
		return faultNone
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errorRate > 0 && f.rng.Float64() < f.errorRate {
		f.errors.Add(1)
		return faultError
	}
	if f.hangRate > 0 && f.rng.Float64() < f.hangRate {
		f.hangs.Add(1)
		return faultHang
	}
	if f.dropRate > 0 && f.rng.Float64() < f.dropRate {
		f.drops.Add(1)
		return faultDrop
	}
	return faultNone
}

// Engine error messages used for injected 500s: what a crashed engine
// answers.
const (
	vllmFaultMessage   = "EngineCore encountered an issue. See stack trace (above) for the root cause."
	ollamaFaultMessage = "llama runner process has terminated: exit status 2"
)

// hang takes the connection over and answers nothing until the client
// closes it or the server closes.
func (s *Server) hang(ctx *fasthttp.RequestCtx) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		done := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, c)
			close(done)
		}()
		select {
		case <-done:
		case <-s.closing:
			// unblock the read; fasthttp closes the connection when
			// this handler returns
			_ = c.SetReadDeadline(time.Unix(1, 0))
			<-done
		}
	})
}

// drop closes the connection without sending a response (fasthttp closes a
// hijacked connection when its handler returns).
func (s *Server) drop(ctx *fasthttp.RequestCtx) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(net.Conn) {})
}
