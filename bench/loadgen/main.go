// Command loadgen is MindRouter's end-to-end load generator: a closed-loop
// HTTP client (fasthttp) for /v1/chat/completions-style endpoints, streamed
// or not, with a mode that holds many streams open to measure a gateway's
// memory per stream and chunk stalls.
//
//	loadgen --url http://127.0.0.1:8080/v1/chat/completions --key $KEY \
//	        --model qwen3-8b --concurrency 64 --duration 10s --warmup 2s
//	loadgen --url ... --model m --stream --hold-streams 1000 --pid $GW \
//	        --expect-interval 200ms
//	loadgen report DIR      # medians over rounds of results written with --out
//
// The human summary goes to stdout; --out FILE writes the JSON result. Only
// loopback targets are accepted unless --allow-remote is given.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Result is one loadgen run, as written by --out.
type Result struct {
	Mode        string         `json:"mode"` // load or hold
	Target      string         `json:"target,omitempty"`
	Scenario    string         `json:"scenario,omitempty"`
	Round       int            `json:"round,omitempty"`
	URL         string         `json:"url"`
	Stream      bool           `json:"stream"`
	Concurrency int            `json:"concurrency"`
	WarmupS     float64        `json:"warmup_s"`
	WallS       float64        `json:"wall_s"` // measured phase
	Count       int            `json:"count"`
	OK          int            `json:"ok"`
	Errors      map[string]int `json:"errors"` // by HTTP status or transport error
	RPS         float64        `json:"rps"`
	Latency     Dist           `json:"latency"` // successful requests, whole response
	TTFT        *Dist          `json:"ttft,omitempty"`
	Chunks      *CountDist     `json:"chunks,omitempty"`
	Proc        *ProcStats     `json:"proc,omitempty"`
	Hold        *HoldStats     `json:"hold,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
	Time        string         `json:"time"`
}

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "report" {
		err = report(os.Args[2:])
	} else {
		err = run(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	var (
		rawURL   = fs.String("url", "http://127.0.0.1:8080/v1/chat/completions", "endpoint to POST to")
		key      = fs.String("key", os.Getenv("LOADGEN_KEY"), "API key, sent as Authorization: Bearer (default $LOADGEN_KEY)")
		bodyFile = fs.String("body", "", "request body file (JSON); otherwise built from --model")
		model    = fs.String("model", "qwen3-8b", "model of the built request body")
		prompt   = fs.String("prompt", "Write a short poem about load balancers.", "user message of the built body")
		maxTok   = fs.Int("max-tokens", 0, "max_tokens of the built body (0: omitted)")
		stream   = fs.Bool("stream", false, "stream the response (built body gets \"stream\":true)")
		conc     = fs.Int("concurrency", 1, "closed-loop workers (connections)")
		duration = fs.Duration("duration", 10*time.Second, "measured phase length")
		warmup   = fs.Duration("warmup", time.Second, "unrecorded warm-up before the measured phase")
		requests = fs.Int("requests", 0, "stop after this many measured requests (0: no cap)")
		timeout  = fs.Duration("timeout", 60*time.Second, "per-request timeout (for streams: read timeout)")
		hold     = fs.Int("hold-streams", 0, "open this many concurrent streams once and hold them to their end")
		ramp     = fs.Duration("ramp", 2*time.Second, "with --hold-streams: spread stream starts over this time")
		interval = fs.Duration("expect-interval", 200*time.Millisecond, "with --hold-streams: expected gap between chunks")
		factor   = fs.Float64("stall-factor", 5, "a gap over stall-factor × expect-interval is a stall")
		pidArg   = fs.String("pid", "", "process to measure (CPU time, RSS) over the measured phase; a comma-separated list is summed (nginx's workers)")
		clk      = fs.Int("clk-tck", 100, "clock ticks per second of /proc/<pid>/stat (getconf CLK_TCK)")
		out      = fs.String("out", "", "write the JSON result here (\"-\": stdout)")
		tgt      = fs.String("target", "", "label: target name, kept in the JSON (for report)")
		scenario = fs.String("scenario", "", "label: scenario name, kept in the JSON (for report)")
		round    = fs.Int("round", 0, "label: round number, kept in the JSON (for report)")
		remote   = fs.Bool("allow-remote", false, "allow a non-loopback --url")
		headers  headerFlags
	)
	fs.Var(&headers, "header", `extra request header "Name: value" (repeatable)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkLoopback(*rawURL, *remote); err != nil {
		return err
	}
	if *conc < 1 || *duration <= 0 || *warmup < 0 || *hold < 0 || *clk < 1 {
		return errors.New("--concurrency >= 1, --duration > 0, --warmup >= 0, --hold-streams >= 0, --clk-tck >= 1")
	}
	pids, err := parsePids(*pidArg)
	if err != nil {
		return err
	}
	body, isStream, err := buildBody(*bodyFile, *model, *prompt, *maxTok, *stream)
	if err != nil {
		return err
	}
	t, err := newTarget(*rawURL, *key, body, isStream, *timeout)
	if err != nil {
		return err
	}
	t.headers = headers
	var r *Result
	if *hold > 0 {
		r, err = runHold(t, holdOpts{streams: *hold, ramp: *ramp, expectInterval: *interval,
			stallFactor: *factor, pids: pids, clk: *clk})
	} else {
		r, err = runLoad(t, loadOpts{concurrency: *conc, warmup: *warmup, duration: *duration,
			requests: *requests, pids: pids, clk: *clk})
	}
	if err != nil {
		return err
	}
	r.Target, r.Scenario, r.Round = *tgt, *scenario, *round
	r.Time = time.Now().UTC().Format(time.RFC3339)
	if *out != "-" {
		summary(os.Stdout, r)
	}
	return writeJSON(*out, r)
}

// buildBody reads --body or builds a chat request; a body file that asks
// for "stream":true is read as a stream even without --stream.
func buildBody(file, model, prompt string, maxTok int, stream bool) ([]byte, bool, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, false, err
		}
		var probe struct {
			Stream bool `json:"stream"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, false, fmt.Errorf("--body %s: %w", file, err)
		}
		return b, stream || probe.Stream, nil
	}
	req := map[string]any{
		"model":    model,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
		"stream":   stream,
	}
	if maxTok > 0 {
		req["max_tokens"] = maxTok
	}
	b, err := json.Marshal(req)
	return b, stream, err
}

func checkLoopback(raw string, allow bool) error {
	if allow {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	ip := net.ParseIP(u.Hostname())
	if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--url %q is not loopback (use --allow-remote)", raw)
	}
	return nil
}

func writeJSON(path string, r *Result) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func summary(w io.Writer, r *Result) {
	label := r.URL
	if r.Target != "" {
		label = fmt.Sprintf("%s %s r%d (%s)", r.Target, r.Scenario, r.Round, r.URL)
	}
	fmt.Fprintf(w, "%s  mode=%s stream=%v c=%d\n", label, r.Mode, r.Stream, r.Concurrency)
	fmt.Fprintf(w, "  requests %d ok %d errors %s", r.Count, r.OK, fmtErrs(r.Errors))
	if r.Mode == "load" {
		fmt.Fprintf(w, "  %.1f req/s", r.RPS)
	}
	fmt.Fprintf(w, " over %.2fs\n", r.WallS)
	printDist(w, "latency", r.Latency)
	if r.TTFT != nil {
		printDist(w, "ttft", *r.TTFT)
	}
	if r.Chunks != nil && r.Chunks.N > 0 {
		fmt.Fprintf(w, "  chunks   per stream min %d p50 %.0f max %d, total %d\n", r.Chunks.Min, r.Chunks.P50, r.Chunks.Max, r.Chunks.Sum)
	}
	if h := r.Hold; h != nil {
		fmt.Fprintf(w, "  hold     %d streams (peak %d open), %d completed; stalls %d in %d streams (gap > %.0fms)\n",
			h.Streams, h.PeakActive, h.Completed, h.Stalls, h.StalledStreams, h.StallThresholdMS)
		printDist(w, "gap", h.Gap)
	}
	if p := r.Proc; p != nil {
		pl := strconv.Itoa(p.Pid)
		if len(p.Pids) > 1 {
			pl = fmt.Sprint(p.Pids)
		}
		fmt.Fprintf(w, "  pid %s   cpu %.3fs (%.1f%% of a core) = %.1fµs/request", pl, p.CPUSeconds, p.CPUUtilPct, p.CPUPerReqUS)
		if p.CPUPerChunk > 0 {
			fmt.Fprintf(w, ", %.2fµs/chunk", p.CPUPerChunk)
		}
		fmt.Fprintf(w, "; rss %d → peak %d KiB", p.RSSBeforeKiB, p.RSSPeakKiB)
		if r.Hold != nil && r.Hold.RSSPerStreamKiB != 0 {
			fmt.Fprintf(w, " (%.1f KiB/stream)", r.Hold.RSSPerStreamKiB)
		}
		fmt.Fprintln(w)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note     %s\n", n)
	}
}

func fmtErrs(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		if s != "" {
			s += ", "
		}
		s += k + ":" + strconv.Itoa(m[k])
	}
	return "{" + s + "}"
}

// headerFlags are --header values, "Name: value" each.
type headerFlags [][2]string

func (h *headerFlags) String() string { return fmt.Sprint(*h) }

func (h *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("--header %q: want \"Name: value\"", v)
	}
	*h = append(*h, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
	return nil
}
