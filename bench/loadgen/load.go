package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// target is where requests go and what they carry.
type target struct {
	url     string
	host    string // host:port
	key     string
	body    []byte
	stream  bool
	timeout time.Duration
	headers [][2]string // --header: extra request headers (another gateway's routing headers)
}

func newTarget(rawURL, key string, body []byte, stream bool, timeout time.Duration) (*target, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("--url %q: want http://host:port/path", rawURL)
	}
	host := u.Host
	if u.Port() == "" {
		host += ":80"
	}
	return &target{url: rawURL, host: host, key: key, body: body, stream: stream, timeout: timeout}, nil
}

// client returns a HostClient sized for conns connections.
func (t *target) client(conns int) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                t.host,
		MaxConns:            conns,
		MaxConnWaitTimeout:  t.timeout,
		ReadTimeout:         t.timeout,
		WriteTimeout:        t.timeout,
		MaxIdleConnDuration: time.Minute,
		StreamResponseBody:  t.stream,
		ReadBufferSize:      16 << 10,
	}
}

func (t *target) prepare(req *fasthttp.Request) {
	req.SetRequestURI(t.url)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	if t.key != "" {
		req.Header.Set("Authorization", "Bearer "+t.key)
	}
	for _, h := range t.headers {
		req.Header.Set(h[0], h[1])
	}
	req.SetBodyRaw(t.body)
}

// outcome is one request's result.
type outcome struct {
	lat   time.Duration
	err   string // "" when the request succeeded
	st    streamStats
	isStr bool
}

// do sends one request and, for streams, reads the whole body.
func (t *target) do(c *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response, sr *streamReader) outcome {
	start := time.Now()
	err := c.Do(req, resp)
	if err != nil {
		return outcome{lat: time.Since(start), err: errKey(err)}
	}
	status := resp.StatusCode()
	if !t.stream {
		o := outcome{lat: time.Since(start)}
		if status != fasthttp.StatusOK {
			o.err = strconv.Itoa(status)
		}
		return o
	}
	defer resp.CloseBodyStream() //nolint:errcheck // nothing to do on close failure
	if status != fasthttp.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.BodyStream(), 1<<20))
		return outcome{lat: time.Since(start), err: strconv.Itoa(status)}
	}
	ndjson := strings.Contains(string(resp.Header.ContentType()), "ndjson")
	st, err := sr.read(resp.BodyStream(), start, ndjson)
	o := outcome{lat: st.total, st: st, isStr: true}
	if err != nil {
		o.err = errKey(err)
	}
	return o
}

// errKey turns a transport error into a short, countable key.
func errKey(err error) string {
	switch {
	case errors.Is(err, errTruncated):
		return "truncated"
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout):
		return "timeout"
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return "no_free_conns"
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.ErrUnexpectedEOF):
		return "conn_closed"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return "transport: " + s
}

// tally collects one worker's samples.
type tally struct {
	lat    []time.Duration
	ttft   []time.Duration
	chunks []int
	errs   map[string]int
	ok     int
	sum    int64 // chunks in successful streams
}

func (ta *tally) add(o outcome) {
	if o.err != "" {
		ta.errs[o.err]++
		return
	}
	ta.ok++
	ta.lat = append(ta.lat, o.lat)
	if o.isStr {
		ta.ttft = append(ta.ttft, o.st.ttft)
		ta.chunks = append(ta.chunks, o.st.chunks)
		ta.sum += int64(o.st.chunks)
	}
}

// loadOpts are the closed-loop run's knobs.
type loadOpts struct {
	concurrency int
	warmup      time.Duration
	duration    time.Duration
	requests    int   // cap on measured requests; 0: none
	pids        []int // processes to measure (summed); none: no figures
	clk         int
}

// runLoad runs opts.concurrency workers, each sending its next request as
// soon as the previous one finished. Warm-up requests are not recorded; all
// workers finish warming up before the measured phase starts, so the
// process readings bracket measured requests only.
func runLoad(t *target, o loadOpts) (*Result, error) {
	c := t.client(o.concurrency)
	var (
		warmWG, runWG sync.WaitGroup
		startRun      = make(chan struct{})
		issued        atomic.Int64
		runEnd        time.Time
		tallies       = make([]*tally, o.concurrency)
	)
	warmEnd := time.Now().Add(o.warmup)
	for i := range o.concurrency {
		tallies[i] = &tally{errs: map[string]int{}}
		warmWG.Add(1)
		runWG.Add(1)
		go func(ta *tally) {
			defer runWG.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			t.prepare(req)
			sr := newStreamReader(0, false)
			warmErrs := 0
			for time.Now().Before(warmEnd) && warmErrs < 1000 {
				if t.do(c, req, resp, sr).err != "" {
					warmErrs++
				}
			}
			warmWG.Done()
			<-startRun
			for time.Now().Before(runEnd) {
				if o.requests > 0 && issued.Add(1) > int64(o.requests) {
					break
				}
				ta.add(t.do(c, req, resp, sr))
			}
		}(tallies[i])
	}
	warmWG.Wait()
	var before procSample
	var rw *rssWatch
	if len(o.pids) > 0 {
		var err error
		if before, err = readProcs(o.pids); err != nil {
			return nil, fmt.Errorf("--pid: %w", err)
		}
		rw = watchRSS(o.pids, 100*time.Millisecond)
	}
	t0 := time.Now()
	runEnd = t0.Add(o.duration)
	close(startRun)
	runWG.Wait()
	wall := time.Since(t0)

	all := &tally{errs: map[string]int{}}
	for _, ta := range tallies {
		all.lat = append(all.lat, ta.lat...)
		all.ttft = append(all.ttft, ta.ttft...)
		all.chunks = append(all.chunks, ta.chunks...)
		all.ok += ta.ok
		all.sum += ta.sum
		for k, v := range ta.errs {
			all.errs[k] += v
		}
	}
	r := &Result{Mode: "load", URL: t.url, Stream: t.stream, Concurrency: o.concurrency,
		WarmupS: o.warmup.Seconds(), WallS: round1(wall.Seconds()*1000) / 1000, OK: all.ok, Errors: all.errs}
	r.Count = all.ok
	for _, v := range all.errs {
		r.Count += v
	}
	r.RPS = round1(float64(r.Count) / wall.Seconds())
	r.Latency = dist(all.lat)
	if t.stream {
		d := dist(all.ttft)
		r.TTFT = &d
		cd := countDist(all.chunks)
		r.Chunks = &cd
	}
	if len(o.pids) > 0 {
		after, err := readProcs(o.pids)
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("process %v not readable after the run (%v): no CPU/RSS figures", o.pids, err))
			rw.done()
			return r, nil
		}
		r.Proc = procStats(o.pids, o.clk, before, after, rw.done(), r.Count, all.sum, wall)
	}
	return r, nil
}
