package backend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"
)

// chunk frames data as one HTTP chunk.
func chunk(data string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(data), data) }

func TestChunkedBody_DecodesWhatFasthttpReads(t *testing.T) {
	events := []string{"data: {\"a\":1}\n\n", "data: {\"b\":22}\n\n", strings.Repeat("x", 5000), "y", "data: [DONE]\n\n"}
	var wire strings.Builder
	for _, e := range events {
		wire.WriteString(chunk(e))
	}
	wire.WriteString("0\r\nX-Trailer: 1\r\n\r\n")
	for _, tc := range []struct {
		name string
		wire string
	}{
		{"plain", wire.String()},
		{"extension and whitespace", "5;name=v\r\nhello\r\n6 \r\n world\r\nA\t\r\n0123456789\r\n0\r\n\r\n"},
		{"upper hex", "A\r\n0123456789\r\n0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Join(events, "")
			switch tc.name {
			case "extension and whitespace":
				want = "hello world0123456789"
			case "upper hex":
				want = "0123456789"
			}
			// every read size and every way the bytes may arrive
			for _, bufSize := range []int{16, 64, 4096} {
				for _, piece := range []int{1, 3, 7, 100, 1 << 20} {
					br := bufio.NewReaderSize(iotestPieces(tc.wire, piece), bufSize)
					c := &chunkedBody{br: br}
					var got bytes.Buffer
					p := make([]byte, 1+rand.IntN(9000))
					for {
						n, err := c.Read(p)
						got.Write(p[:n])
						if errors.Is(err, io.EOF) {
							break
						}
						if err != nil {
							t.Fatalf("buf %d piece %d: %v", bufSize, piece, err)
						}
						if n == 0 {
							t.Fatalf("buf %d piece %d: a Read returned nothing and no error", bufSize, piece)
						}
					}
					if got.String() != want {
						t.Fatalf("buf %d piece %d: got %q, want %q", bufSize, piece, got.String(), want)
					}
					if br.Buffered() != 0 {
						t.Fatalf("buf %d piece %d: %d bytes left after the body", bufSize, piece, br.Buffered())
					}
				}
			}
		})
	}
}

// iotestPieces delivers s in reads of at most n bytes.
func iotestPieces(s string, n int) io.Reader { return &pieces{s: s, n: n} }

type pieces struct {
	s string
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if p.s == "" {
		return 0, io.EOF
	}
	m := copy(b[:min(len(b), p.n)], p.s)
	p.s = p.s[m:]
	return m, nil
}

// The point of chunkedBody: one Read takes every complete chunk already
// buffered, and never waits for a chunk that has only begun to arrive.
func TestChunkedBody_OneReadTakesTheBufferedEvents(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	br := bufio.NewReaderSize(pr, 4096)
	c := &chunkedBody{br: br}
	p := make([]byte, 8192)
	type res struct {
		n   int
		err error
	}
	read := func() res {
		ch := make(chan res, 1)
		go func() {
			n, err := c.Read(p)
			ch <- res{n, err}
		}()
		select {
		case r := <-ch:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("Read waited for bytes that had not come while it had data to return")
			return res{}
		}
	}
	// Three events and the start of a fourth's size line arrive in one
	// write (the backend ran ahead of the relay): one Read, three events.
	go func() { _, _ = pw.Write([]byte(chunk("e1;") + chunk("e2;") + chunk("e3;") + "1")) }()
	if r := read(); r.err != nil || string(p[:r.n]) != "e1;e2;e3;" {
		t.Fatalf("first read: %q, %v; want the three buffered events", p[:r.n], r.err)
	}
	// The rest of that chunk and the start of the next one's data: the
	// Read returns the whole fourth and the part of the fifth there is.
	go func() { _, _ = pw.Write([]byte("0\r\n" + strings.Repeat("z", 16) + "\r\n5\r\nab")) }()
	if r := read(); r.err != nil || string(p[:r.n]) != strings.Repeat("z", 16)+"ab" {
		t.Fatalf("second read: %q, %v", p[:r.n], r.err)
	}
	// The fifth's end, its CRLF split, then the last chunk and trailer.
	go func() { _, _ = pw.Write([]byte("cde\r")) }()
	if r := read(); r.err != nil || string(p[:r.n]) != "cde" {
		t.Fatalf("third read: %q, %v", p[:r.n], r.err)
	}
	go func() { _, _ = pw.Write([]byte("\n" + chunk("end") + "0\r\n\r\n")) }()
	if r := read(); !errors.Is(r.err, io.EOF) || string(p[:r.n]) != "end" {
		t.Fatalf("last read: %q, %v; want the last event with io.EOF", p[:r.n], r.err)
	}
	if r := read(); r.n != 0 || !errors.Is(r.err, io.EOF) {
		t.Fatalf("read after the end: %d, %v", r.n, r.err)
	}
}

func TestChunkedBody_Errors(t *testing.T) {
	for _, tc := range []struct {
		name, wire string
		want       error
	}{
		{"not hex", "zz\r\nab\r\n0\r\n\r\n", errChunkLine},
		{"no size", "\r\nab\r\n", errChunkLine},
		{"bare LF", "2\nab\r\n0\r\n\r\n", errChunkLine},
		{"data without CRLF", "2\r\nabX\r\n0\r\n\r\n", errChunkLine},
		{"junk after size", "2 x\r\nab\r\n", errChunkLine},
		{"extension after whitespace", "2 ;x\r\nab\r\n", errChunkLine},
		{"huge size", strings.Repeat("f", 16) + "\r\n", errChunkLine},
		{"cut in data", "5\r\nab", io.ErrUnexpectedEOF},
		{"cut in size line", "5", io.ErrUnexpectedEOF},
		{"cut before the trailer's end", "2\r\nab\r\n0\r\n", io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &chunkedBody{br: bufio.NewReader(strings.NewReader(tc.wire))}
			p := make([]byte, 100)
			var err error
			for i := 0; i < 10 && err == nil; i++ {
				_, err = c.Read(p)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// deadlineConn counts read deadline changes.
type deadlineConn struct {
	net.Conn
	sets []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error { c.sets = append(c.sets, t); return nil }

// A stream's reads move the read deadline once it has aged by the slack,
// not at every event, and never let it fall short of idle − slack.
func TestStreamBody_MovesTheIdleDeadlineLazily(t *testing.T) {
	const idle = 160 * time.Millisecond // slack: 10 ms
	conn := &deadlineConn{}
	sb := &streamBody{reader: strings.NewReader(strings.Repeat("x", 1000)), conn: conn, idle: idle, release: func(bool) {}}
	p := make([]byte, 1)
	start := time.Now()
	for i := 0; i < 100; i++ {
		if _, err := sb.Read(p); err != nil {
			t.Fatal(err)
		}
	}
	if len(conn.sets) == 0 || len(conn.sets) > 1+int(time.Since(start)/idleSlack(idle)) {
		t.Fatalf("%d deadline changes for 100 reads in %v", len(conn.sets), time.Since(start))
	}
	time.Sleep(2 * idleSlack(idle))
	before := time.Now()
	if _, err := sb.Read(p); err != nil {
		t.Fatal(err)
	}
	last := conn.sets[len(conn.sets)-1]
	if last.Before(before.Add(idle - idleSlack(idle))) {
		t.Fatalf("after a pause the deadline is %v from the read, want at least idle − slack", last.Sub(before))
	}
}
