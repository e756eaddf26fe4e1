package server

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// tcpPair returns the two ends of a loopback TCP connection (net.Pipe
// has no real deadlines).
func tcpPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			acc <- nil
			return
		}
		acc <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-acc
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// watchedEx is an exchange of s whose request arrived on conn, as the
// handler sees it.
func watchedEx(t testing.TB, conn net.Conn) *exchange {
	t.Helper()
	s := newTestServer(t, nil)
	rc := new(fasthttp.RequestCtx)
	rc.Init2(conn, nil, false)
	ex := newEx(s, rc)
	if ex.watch.conn != conn {
		t.Fatal("the watcher does not watch the request's connection")
	}
	return ex
}

func TestWatcher_ClientCloseCancels(t *testing.T) {
	server, client := tcpPair(t)
	ex := watchedEx(t, server)
	ex.watch.start()
	time.Sleep(watchDelay + 20*time.Millisecond) // the read is armed
	t0 := time.Now()
	client.Close()
	select {
	case <-ex.ctx.Done():
		if d := time.Since(t0); d > time.Second {
			t.Fatalf("cancelled after %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request's context was not cancelled when the client closed")
	}
	ex.watch.stop()
	if ex.watch.stole {
		t.Fatal("a close counted as a stolen byte")
	}
}

// A client that closes before the watch delay is noticed once the read
// starts.
func TestWatcher_CloseBeforeDelay(t *testing.T) {
	server, client := tcpPair(t)
	ex := watchedEx(t, server)
	ex.watch.start()
	client.Close()
	select {
	case <-ex.ctx.Done():
	case <-time.After(watchDelay + 200*time.Millisecond):
		t.Fatal("not cancelled")
	}
	ex.watch.stop()
}

func TestWatcher_StopLeavesConnectionUsable(t *testing.T) {
	server, client := tcpPair(t)
	ex := watchedEx(t, server)
	settle()
	before := runtime.NumGoroutine()

	ex.watch.start()
	time.Sleep(watchDelay + 30*time.Millisecond) // the read is blocked in the kernel
	stopped := make(chan struct{})
	go func() { ex.watch.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(2 * time.Second):
		t.Fatal("stop did not return")
	}
	if ex.ctx.Err() != nil {
		t.Fatal("stop cancelled the request")
	}
	if ex.watch.stole {
		t.Fatal("stole set without a byte")
	}

	// The connection still works both ways, with no deadline left behind.
	if _, err := server.Write([]byte("resp")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	_ = client.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "resp" {
		t.Fatalf("client read %q %v", buf, err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond) // after the server's read began
		_, _ = client.Write([]byte("next"))
	}()
	if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "next" {
		t.Fatalf("server read %q %v: a read deadline was left on the connection", buf, err)
	}

	// The watcher's goroutine is gone.
	if n := settledGoroutines(before); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines %d > %d before start:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// stop before the delay: no read ever starts, and a second start/stop
// cycle (a pooled exchange) works the same.
func TestWatcher_StopBeforeDelay(t *testing.T) {
	server, client := tcpPair(t)
	ex := watchedEx(t, server)
	for i := 0; i < 3; i++ {
		ex.watch.start()
		ex.watch.start() // twice is harmless
		ex.watch.stop()
		ex.watch.stop() // and so is stopping twice
	}
	time.Sleep(watchDelay + 30*time.Millisecond) // a read started after stop would take the byte
	client.Write([]byte("x"))
	buf := make([]byte, 1)
	_ = server.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := server.Read(buf); err != nil || buf[0] != 'x' {
		t.Fatalf("the watcher consumed the client's byte: %q %v", buf, err)
	}
	if ex.ctx.Err() != nil {
		t.Fatal("cancelled")
	}
}

func TestWatcher_PipelinedByteMarksStole(t *testing.T) {
	server, client := tcpPair(t)
	ex := watchedEx(t, server)
	ex.watch.start()
	time.Sleep(watchDelay + 20*time.Millisecond)
	if _, err := client.Write([]byte("G")); err != nil { // the next request's first byte
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	ex.watch.stop()
	if !ex.watch.stole {
		t.Fatal("stole not set after the watcher consumed a byte")
	}
	if ex.ctx.Err() != nil {
		t.Fatal("a pipelined byte cancelled the request")
	}
	// finish closes such a connection after the response.
	ctx := new(fasthttp.RequestCtx)
	ex.s.finish(ctx, ex)
	if !ctx.Response.ConnectionClose() {
		t.Fatal("no Connection: close after a stolen byte")
	}
}

// The watcher is idle without a connection (transport errors).
func TestWatcher_NoConn(t *testing.T) {
	s := newTestServer(t, nil)
	ex := newEx(s, nil)
	ex.watch.start()
	time.Sleep(watchDelay + 10*time.Millisecond)
	ex.watch.stop()
	if ex.watch.timer != nil || ex.ctx.Err() != nil {
		t.Fatal("a watcher without a connection armed itself")
	}
}

func settle() {
	for i := 0; i < 5; i++ {
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond)
	}
}

// settledGoroutines waits up to a second for the goroutine count to fall
// to want and returns the last count.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	return n
}
