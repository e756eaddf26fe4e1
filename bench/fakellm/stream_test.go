package fakellm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each event goes out as its own HTTP chunk, as from vLLM and Ollama, even
// when the generator runs far ahead of the connection (tps 0): a gateway
// gets the framing real engines send, not batches of piled-up events.
func TestStream_OneChunkPerEvent(t *testing.T) {
	for _, tc := range []struct {
		name, engine, path, body string
		event                    func(string) bool // one event's chunk data
	}{
		{"ollama", "ollama", "/api/chat", `{"model":"llama3.1-8b","messages":[{"role":"user","content":"Hi"}]}`,
			func(d string) bool { return strings.Count(d, "\n") == 1 && strings.HasSuffix(d, "}\n") }},
		{"vllm", "vllm", "/v1/chat/completions", `{"model":"qwen3-8b","stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
			func(d string) bool { return strings.Count(d, "data: ") == 1 && strings.HasSuffix(d, "\n\n") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startServer(t, Config{Engine: tc.engine, Tokens: 200})
			conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", tc.path, len(tc.body), tc.body)
			// read nothing until the whole answer is written: every event is
			// piled up by then
			time.Sleep(300 * time.Millisecond)
			br := bufio.NewReader(conn)
			if status, _ := br.ReadString('\n'); status != "HTTP/1.1 200 OK\r\n" {
				t.Fatalf("status line %q", status)
			}
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if line == "\r\n" {
					break
				}
			}
			chunks := 0
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				size64, err := strconv.ParseInt(strings.TrimSuffix(line, "\r\n"), 16, 32)
				if err != nil {
					t.Fatalf("chunk size line %q: %v", line, err)
				}
				size := int(size64)
				if size == 0 {
					break
				}
				data := make([]byte, size+2)
				if _, err := io.ReadFull(br, data); err != nil || !bytes.HasSuffix(data, []byte("\r\n")) {
					t.Fatalf("chunk data: %v", err)
				}
				if d := string(data[:size]); !tc.event(d) {
					t.Fatalf("chunk %d holds not one event: %q", chunks, d)
				}
				chunks++
			}
			if chunks < 200 {
				t.Fatalf("%d chunks for 200 tokens", chunks)
			}
		})
	}
}
