package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// HoldStats describes a --hold-streams run.
type HoldStats struct {
	Streams          int     `json:"streams"`
	Completed        int     `json:"completed"`
	RampS            float64 `json:"ramp_s"`
	ExpectIntervalMS float64 `json:"expect_interval_ms"`
	StallThresholdMS float64 `json:"stall_threshold_ms"`
	Stalls           int     `json:"stalls"`          // gaps over the threshold, all streams
	StalledStreams   int     `json:"stalled_streams"` // streams with at least one stall
	Gap              Dist    `json:"gap"`             // gaps between consecutive chunks
	PeakActive       int64   `json:"peak_active"`     // streams open at once, at most
	RSSPerStreamKiB  float64 `json:"rss_per_stream_kib,omitempty"`
}

type holdOpts struct {
	streams        int
	ramp           time.Duration
	expectInterval time.Duration
	stallFactor    float64
	pids           []int
	clk            int
}

// runHold opens o.streams streams (spread over o.ramp), keeps each to its
// end, and reports gaps between chunks and the watched process's memory.
func runHold(t *target, o holdOpts) (*Result, error) {
	if !t.stream {
		return nil, fmt.Errorf("--hold-streams needs a streaming request (--stream)")
	}
	c := t.client(o.streams)
	c.MaxConnWaitTimeout = 0 // one connection per stream; never wait for one
	stallAt := time.Duration(float64(o.expectInterval) * o.stallFactor)
	var before procSample
	var rw *rssWatch
	if len(o.pids) > 0 {
		var err error
		if before, err = readProcs(o.pids); err != nil {
			return nil, fmt.Errorf("--pid: %w", err)
		}
		rw = watchRSS(o.pids, 50*time.Millisecond)
	}
	var (
		wg             sync.WaitGroup
		active, peak   atomic.Int64
		mu             sync.Mutex
		all            = &tally{errs: map[string]int{}}
		gaps           []time.Duration
		stalls, stalld int
	)
	t0 := time.Now()
	for i := range o.streams {
		if o.ramp > 0 {
			time.Sleep(time.Until(t0.Add(o.ramp * time.Duration(i) / time.Duration(o.streams))))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			t.prepare(req)
			sr := newStreamReader(stallAt, true)
			n := active.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			out := t.do(c, req, resp, sr)
			active.Add(-1)
			mu.Lock()
			defer mu.Unlock()
			all.add(out)
			gaps = append(gaps, sr.gaps...)
			stalls += out.st.stalls
			if out.st.stalls > 0 {
				stalld++
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)

	r := &Result{Mode: "hold", URL: t.url, Stream: true, Concurrency: o.streams,
		WallS: round1(wall.Seconds()*1000) / 1000, OK: all.ok, Errors: all.errs}
	r.Count = all.ok
	for _, v := range all.errs {
		r.Count += v
	}
	r.Latency = dist(all.lat)
	d := dist(all.ttft)
	r.TTFT = &d
	cd := countDist(all.chunks)
	r.Chunks = &cd
	h := &HoldStats{Streams: o.streams, Completed: all.ok, RampS: o.ramp.Seconds(),
		ExpectIntervalMS: float64(o.expectInterval) / 1e6, StallThresholdMS: float64(stallAt) / 1e6,
		Stalls: stalls, StalledStreams: stalld, Gap: dist(gaps), PeakActive: peak.Load()}
	if len(o.pids) > 0 {
		after, err := readProcs(o.pids)
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("process %v not readable after the run (%v): no CPU/RSS figures", o.pids, err))
			rw.done()
			r.Hold = h
			return r, nil
		}
		r.Proc = procStats(o.pids, o.clk, before, after, rw.done(), r.Count, all.sum, wall)
		h.RSSPerStreamKiB = round1(float64(r.Proc.RSSPeakKiB-r.Proc.RSSBeforeKiB) / float64(max(h.PeakActive, 1)))
	}
	r.Hold = h
	return r, nil
}
