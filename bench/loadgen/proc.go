package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// procSample is one reading of a process's CPU time and memory.
type procSample struct {
	cpuTicks int64 // utime + stime, in clock ticks
	rssKiB   int64 // VmRSS
}

// parsePids reads --pid: one process id or a comma-separated list (for
// example nginx's workers), whose CPU times and RSS are summed.
func parsePids(s string) ([]int, error) {
	if s == "" || s == "0" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--pid %q: want a process id or a comma-separated list", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// readProcs sums readProc over pids.
func readProcs(pids []int) (procSample, error) {
	var sum procSample
	for _, pid := range pids {
		s, err := readProc(pid)
		if err != nil {
			return sum, err
		}
		sum.cpuTicks += s.cpuTicks
		sum.rssKiB += s.rssKiB
	}
	return sum, nil
}

// readRSSs sums readRSS over pids.
func readRSSs(pids []int) (int64, error) {
	var sum int64
	for _, pid := range pids {
		v, err := readRSS(pid)
		if err != nil {
			return sum, err
		}
		sum += v
	}
	return sum, nil
}

// readProc reads /proc/<pid>/stat (utime, stime) and /proc/<pid>/status (VmRSS).
func readProc(pid int) (procSample, error) {
	var s procSample
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line, so 12 and 13 after ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 14 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	s.cpuTicks = ut + st
	s.rssKiB, err = readRSS(pid)
	return s, err
}

func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(v)
			if len(f) < 1 {
				break
			}
			return strconv.ParseInt(string(f[0]), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// rssWatch samples the processes' summed RSS periodically and keeps the peak.
type rssWatch struct {
	peak atomic.Int64
	stop chan struct{}
	wg   sync.WaitGroup
}

func watchRSS(pids []int, every time.Duration) *rssWatch {
	w := &rssWatch{stop: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v, err := readRSSs(pids); err == nil && v > w.peak.Load() {
				w.peak.Store(v)
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// done stops sampling and returns the peak RSS in KiB.
func (w *rssWatch) done() int64 {
	close(w.stop)
	w.wg.Wait()
	return w.peak.Load()
}

// ProcStats is the watched process's cost over the measured phase (with
// several processes, their sums).
type ProcStats struct {
	Pid          int     `json:"pid"`            // the first of Pids
	Pids         []int   `json:"pids,omitempty"` // when more than one was watched
	ClkTck       int     `json:"clk_tck"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	CPUPerReqUS  float64 `json:"cpu_per_request_us"`
	CPUPerChunk  float64 `json:"cpu_per_chunk_us,omitempty"`
	CPUUtilPct   float64 `json:"cpu_util_pct"` // of one core, over the measured wall time
	RSSBeforeKiB int64   `json:"rss_before_kib"`
	RSSPeakKiB   int64   `json:"rss_peak_kib"`
	RSSAfterKiB  int64   `json:"rss_after_kib"`
}

func procStats(pids []int, clk int, before, after procSample, peak int64, reqs int, chunks int64, wall time.Duration) *ProcStats {
	cpu := float64(after.cpuTicks-before.cpuTicks) / float64(clk)
	p := &ProcStats{Pid: pids[0], ClkTck: clk, CPUSeconds: cpu,
		RSSBeforeKiB: before.rssKiB, RSSPeakKiB: max(peak, after.rssKiB, before.rssKiB), RSSAfterKiB: after.rssKiB}
	if len(pids) > 1 {
		p.Pids = pids
	}
	if reqs > 0 {
		p.CPUPerReqUS = round1(cpu * 1e6 / float64(reqs))
	}
	if chunks > 0 {
		p.CPUPerChunk = round1(cpu * 1e6 / float64(chunks))
	}
	if wall > 0 {
		p.CPUUtilPct = round1(100 * cpu / wall.Seconds())
	}
	return p
}
