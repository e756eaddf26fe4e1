// Command bad is a translator that misbehaves on demand: OpRequestDecode's
// body names what to do ("loop", "trap", "oom", "panic", "log", "print",
// "spin:<ms>"). Every other op behaves, so the plugin loads and passes the
// host's self-test.
package main

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

type translator struct{ sdk.Unimplemented }

var (
	sink int
	hold [][]byte
)

func (translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	switch {
	case bytes.Equal(body, []byte("loop")):
		for i := 0; ; i++ {
			sink = i
		}
	case bytes.Equal(body, []byte("trap")):
		// A fatal runtime error is not recoverable: the module traps.
		var mu sync.Mutex
		mu.Unlock()
	case bytes.Equal(body, []byte("oom")):
		for i := 0; i < 64; i++ {
			hold = append(hold, make([]byte, 16<<20)) // 1 GiB in total
			hold[i][0] = 1
		}
	case bytes.Equal(body, []byte("panic")):
		panic("boom")
	case bytes.Equal(body, []byte("log")):
		for i := 0; i < 100; i++ {
			c.Log(0, "log line "+strconv.Itoa(i))
		}
	case bytes.Equal(body, []byte("print")):
		for i := 0; i < 100; i++ {
			fmt.Println("stdout line", i)
		}
	case bytes.HasPrefix(body, []byte("spin:")):
		ms, _ := strconv.Atoi(string(body[5:]))
		end := time.Now().Add(time.Duration(ms) * time.Millisecond)
		for time.Now().Before(end) {
			sink++
		}
	}
	req.Model = string(body)
	return nil
}

func (translator) EncodeError(c *sdk.Call, e *canon.Error, out *sdk.Output) error {
	out.Body = append(out.Body, e.Message...)
	return nil
}

func init() {
	sdk.RegisterTranslator(sdk.Manifest{Name: "bad", Version: "1", Format: "test",
		// A chat route lets gateway tests drive the misbehaviour over HTTP.
		Routes: []sdk.Route{{Name: "chat", Method: "POST", Path: "/test/bad/chat"}}}, translator{})
}

func main() {}
