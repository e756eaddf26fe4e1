package server

import (
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// watcher notices a client that closes its connection while the gateway
// waits on its behalf (queued for a backend slot, or waiting for a
// backend's answer) and cancels the request's context, which frees the
// queue place and aborts the backend call (closing the backend connection
// stops the generation there).
//
// fasthttp offers no close notification, so the watcher reads the raw
// connection: between a request's body and its response an HTTP/1.1
// client sends nothing, so a read returns only when the client closes
// (EOF, reset). The read starts only after watchDelay, so fast requests pay
// one timer and nothing else. A client that pipelines its next request
// meanwhile would have its first byte consumed: the watcher then marks the
// connection to be closed after this response, and that client retries on
// a new connection (HTTP/1.1 clients, LLM SDKs included, do not pipeline
// POSTs).
type watcher struct {
	conn  net.Conn
	ex    *exchange
	timer *time.Timer
	armed bool           // the owner's view: start was called, stop not yet
	fired sync.WaitGroup // held from arming until fire returned or was cancelled

	mu      sync.Mutex // guards conn, running, stopped against fire and read
	running bool
	stopped bool
	done    chan struct{}
	stole   bool // read a byte of a pipelined request
}

// watchDelay is how long a request must be waiting before its
// connection is watched.
const watchDelay = 20 * time.Millisecond

func (w *watcher) reset(rc *fasthttp.RequestCtx) {
	w.mu.Lock()
	w.conn = nil
	if rc != nil {
		w.conn = rc.Conn()
	}
	w.running, w.stopped, w.stole = false, false, false
	w.mu.Unlock()
}

// start arms the watcher; stop disarms it. Only the exchange's owner calls
// them; calling start twice is harmless.
func (w *watcher) start() {
	if w.conn == nil || w.armed {
		return
	}
	w.mu.Lock()
	w.stopped = false
	w.mu.Unlock()
	w.armed = true
	w.fired.Add(1)
	if w.timer == nil {
		w.done = make(chan struct{}, 1)
		w.timer = time.AfterFunc(watchDelay, w.fire)
		return
	}
	w.timer.Reset(watchDelay)
}

func (w *watcher) fire() {
	defer w.fired.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.running {
		return
	}
	// Cleared here, under the lock, so a stop that comes later always
	// sees running and its unblocking deadline is never undone.
	_ = w.conn.SetReadDeadline(time.Time{})
	w.running = true
	go w.read(w.conn)
}

func (w *watcher) read(conn net.Conn) {
	var b [1]byte
	n, err := conn.Read(b[:])
	w.mu.Lock()
	stopped := w.stopped
	if n > 0 {
		w.stole = true
	}
	w.mu.Unlock()
	if n == 0 && err != nil && !stopped {
		w.ex.cancel() // the client went away
	}
	w.done <- struct{}{}
}

// stop disarms the watcher and waits until neither its timer nor its read
// can touch the connection. The connection goes back to fasthttp with no
// read deadline of ours.
func (w *watcher) stop() {
	if !w.armed {
		return
	}
	w.armed = false
	if w.timer.Stop() {
		w.fired.Done() // it will not fire
	}
	w.mu.Lock()
	w.stopped = true
	running := w.running
	w.mu.Unlock()
	if running {
		_ = w.conn.SetReadDeadline(time.Unix(1, 0)) // unblocks the read
		<-w.done
		w.mu.Lock()
		w.running = false
		w.mu.Unlock()
		_ = w.conn.SetReadDeadline(time.Time{})
	}
	w.fired.Wait()
}
