//go:build faults

package faultmatrix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// result is one request of the load.
type result struct {
	at      time.Time // when it ended
	ok      bool      // its complete answer arrived
	id      string    // X-Request-ID (answered requests)
	replica int       // the replica that answered (or last failed)
	tokens  int64     // total tokens the answer reported (its usage)
	err     error
}

// load is a small mixed load: clients alternating streamed (with usage)
// and non-streamed chat requests, each client on its own replica. Like a
// load balancer, a client whose connection to its replica is refused
// sends the request to the other replica (nothing was sent: safe); a
// failure after the request went out counts as a client error.
type load struct {
	c    *cluster
	key  string
	stop chan struct{}
	wg   sync.WaitGroup
	n    atomic.Int64

	mu  sync.Mutex
	res []result
}

func startLoad(c *cluster, clients int) *load {
	l := &load{c: c, key: c.userKey, stop: make(chan struct{})}
	for i := range clients {
		l.wg.Add(1)
		go l.client(i)
	}
	return l
}

func (l *load) client(n int) {
	defer l.wg.Done()
	hcs := make([]*http.Client, len(l.c.replicas))
	for i := range hcs {
		hcs[i] = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	}
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		r := l.one(hcs, n, i)
		l.mu.Lock()
		l.res = append(l.res, r)
		l.mu.Unlock()
		if !r.ok {
			time.Sleep(50 * time.Millisecond) // do not spin on an outage
		}
	}
}

// one sends one request, falling over to the other replica when its own
// refuses the connection.
func (l *load) one(hcs []*http.Client, n, i int) result {
	first := n % len(hcs)
	var r result
	for k := range hcs {
		rep := (first + k) % len(hcs)
		r = l.send(hcs[rep], l.c.replicas[rep].base, n, i)
		r.replica = rep
		if r.ok || !refused(r.err) {
			return r
		}
	}
	return r
}

func refused(err error) bool {
	var op *net.OpError
	return err != nil && errors.As(err, &op) && op.Op == "dial"
}

func (l *load) send(hc *http.Client, base string, n, i int) result {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(l.key),
		option.WithMaxRetries(0), option.WithHTTPClient(hc))
	var id, failure string
	grab := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if res != nil {
			id = res.Header.Get("X-Request-ID")
			if res.StatusCode >= 400 {
				// The answer's own words, for the row's log: the SDK's
				// error may not show a body that is not its JSON.
				body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
				res.Body.Close()
				res.Body = io.NopCloser(bytes.NewReader(body))
				failure = fmt.Sprintf(" (answer %d, request id %q, body %q)", res.StatusCode, id, body)
			}
		}
		return res, err
	})
	withAnswer := func(err error) error {
		if failure != "" {
			return fmt.Errorf("%w%s", err, failure)
		}
		return err
	}
	p := openai.ChatCompletionNewParams{Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("client %d request %d", n, i))}}
	if i%2 == 0 {
		resp, err := c.Chat.Completions.New(ctx, p, grab)
		if err == nil && (id == "" || len(resp.Choices) != 1 || resp.Choices[0].FinishReason == "") {
			err = fmt.Errorf("incomplete answer (id %q)", id)
		}
		if err != nil {
			return result{at: time.Now(), err: withAnswer(err)}
		}
		return result{at: time.Now(), ok: true, id: id, tokens: resp.Usage.TotalTokens}
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(ctx, p, grab)
	finished := false
	var tokens int64
	for s.Next() {
		ch := s.Current()
		if len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
			finished = true
		}
		if ch.Usage.TotalTokens > 0 {
			tokens = ch.Usage.TotalTokens
		}
	}
	err := s.Err()
	if err == nil && (!finished || id == "" || tokens == 0) {
		err = fmt.Errorf("incomplete stream (id %q, finished %v, usage %d)", id, finished, tokens)
	}
	if err != nil {
		return result{at: time.Now(), err: withAnswer(err)}
	}
	return result{at: time.Now(), ok: true, id: id, tokens: tokens}
}

// halt stops the load and returns every request's result.
func (l *load) halt() []result {
	close(l.stop)
	l.wg.Wait()
	return l.res
}

// answered is the number of requests answered so far.
func (l *load) answered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.res {
		if r.ok {
			n++
		}
	}
	return n
}
