package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// minRefAdded is the smallest reference added latency (µs) a ratio is taken over.
const minRefAdded = 20

// metric picks one figure out of a result.
type metric struct {
	name string
	get  func(*Result) float64
}

var (
	plainMetrics = []metric{
		{"p50", func(r *Result) float64 { return r.Latency.P50 }},
		{"p90", func(r *Result) float64 { return r.Latency.P90 }},
		{"p99", func(r *Result) float64 { return r.Latency.P99 }},
		{"p99.9", func(r *Result) float64 { return r.Latency.P999 }},
	}
	streamMetrics = []metric{
		{"ttft_p50", func(r *Result) float64 { return ttft(r).P50 }},
		{"ttft_p90", func(r *Result) float64 { return ttft(r).P90 }},
		{"ttft_p99", func(r *Result) float64 { return ttft(r).P99 }},
		{"total_p50", func(r *Result) float64 { return r.Latency.P50 }},
		{"total_p99", func(r *Result) float64 { return r.Latency.P99 }},
	}
	rpsMetric = metric{"rps", func(r *Result) float64 { return r.RPS }}
)

func ttft(r *Result) Dist {
	if r.TTFT == nil {
		return Dist{}
	}
	return *r.TTFT
}

// Row is one (scenario, target) line of the report: medians over rounds.
type Row struct {
	Scenario string             `json:"scenario"`
	Target   string             `json:"target"`
	Rounds   int                `json:"rounds"`
	Stream   bool               `json:"stream"`
	Conc     int                `json:"concurrency"`
	Requests int                `json:"requests"`
	Errors   map[string]int     `json:"errors"`
	Median   map[string]float64 `json:"median"`       // median over rounds of each figure
	Added    map[string]float64 `json:"added"`        // median over rounds of (target − baseline), same round
	AddedMin map[string]float64 `json:"added_min"`    // smallest per-round difference
	AddedMax map[string]float64 `json:"added_max"`    // largest per-round difference
	VsRef    map[string]float64 `json:"vs_reference"` // Added / reference target's Added
}

// report reads the *.json results in a directory (those with a round and
// a scenario) and prints, per scenario and target, medians over rounds and
// the added latency against the baseline target measured in the same round.
func report(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	base := fs.String("baseline", "direct", "target whose figures are subtracted (same round)")
	ref := fs.String("reference", "nginx", "target the added latency is compared with")
	jsonOut := fs.String("json", "", "also write the rows as JSON here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: loadgen report [--baseline T] [--reference T] [--json FILE] DIR")
	}
	res, err := loadResults(fs.Arg(0))
	if err != nil {
		return err
	}
	rows := buildRows(res, *base, *ref)
	printRows(os.Stdout, rows, *base, *ref)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}

func loadResults(dir string) ([]*Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			continue // not a loadgen result
		}
		if r.Mode == "load" && r.Scenario != "" && r.Target != "" && r.Round > 0 {
			out = append(out, &r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no round results in %s", dir)
	}
	return out, nil
}

type key struct{ scenario, target string }

func buildRows(res []*Result, base, ref string) []*Row {
	byKey := map[key]map[int]*Result{}
	var order []key
	for _, r := range res {
		k := key{r.Scenario, r.Target}
		if byKey[k] == nil {
			byKey[k] = map[int]*Result{}
			order = append(order, k)
		}
		byKey[k][r.Round] = r
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].scenario != order[j].scenario {
			return order[i].scenario < order[j].scenario
		}
		return targetRank(order[i].target, base, ref) < targetRank(order[j].target, base, ref)
	})
	rows := make([]*Row, 0, len(order))
	index := map[key]*Row{}
	for _, k := range order {
		rounds := byKey[k]
		row := &Row{Scenario: k.scenario, Target: k.target, Rounds: len(rounds), Errors: map[string]int{},
			Median: map[string]float64{}, Added: map[string]float64{}, AddedMin: map[string]float64{},
			AddedMax: map[string]float64{}, VsRef: map[string]float64{}}
		var ms []metric
		for _, r := range rounds {
			row.Stream, row.Conc = r.Stream, r.Concurrency
			row.Requests += r.Count
			for e, n := range r.Errors {
				row.Errors[e] += n
			}
		}
		if row.Stream {
			ms = append(ms, streamMetrics...)
		} else {
			ms = append(ms, plainMetrics...)
		}
		ms = append(ms, rpsMetric)
		baseRounds := byKey[key{k.scenario, base}]
		for _, m := range ms {
			var vals, diffs []float64
			for n, r := range rounds {
				vals = append(vals, m.get(r))
				if b, ok := baseRounds[n]; ok && k.target != base && m.name != "rps" {
					diffs = append(diffs, m.get(r)-m.get(b))
				}
			}
			row.Median[m.name] = round1(median(vals))
			if len(diffs) > 0 {
				row.Added[m.name] = round1(median(diffs))
				row.AddedMin[m.name] = slices.Min(diffs)
				row.AddedMax[m.name] = slices.Max(diffs)
			}
		}
		index[k] = row
		rows = append(rows, row)
	}
	for _, row := range rows {
		r, ok := index[key{row.Scenario, ref}]
		if !ok || row.Target == ref || row.Target == base {
			continue
		}
		for m, v := range row.Added {
			// A ratio over a reference difference of a few µs is noise, not a figure.
			if rv := r.Added[m]; rv >= minRefAdded {
				row.VsRef[m] = math.Round(100*v/rv) / 100
			}
		}
	}
	return rows
}

func targetRank(t, base, ref string) int {
	switch t {
	case base:
		return 0
	case ref:
		return 1
	}
	return 2
}

func printRows(w io.Writer, rows []*Row, base, ref string) {
	last := ""
	for _, row := range rows {
		if row.Scenario != last {
			last = row.Scenario
			if row.Stream {
				fmt.Fprintf(w, "\n### %s (streamed, c=%d; medians of %d rounds; added = target − %s, same round)\n\n", row.Scenario, row.Conc, row.Rounds, base)
				fmt.Fprintln(w, "| target | req/s | TTFT p50 | TTFT p90 | TTFT p99 | total p50 | total p99 | added TTFT p50 | added TTFT p99 | × "+ref+" added p99 | errors |")
				fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
			} else {
				fmt.Fprintf(w, "\n### %s (c=%d; medians of %d rounds; added = target − %s, same round)\n\n", row.Scenario, row.Conc, row.Rounds, base)
				fmt.Fprintln(w, "| target | req/s | p50 | p90 | p99 | p99.9 | added p50 | added p90 | added p99 | × "+ref+" added p99 | errors |")
				fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
			}
		}
		m, a := row.Median, row.Added
		if row.Stream {
			fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Target, m["rps"],
				fmtUS(m["ttft_p50"]), fmtUS(m["ttft_p90"]), fmtUS(m["ttft_p99"]), fmtUS(m["total_p50"]), fmtUS(m["total_p99"]),
				added(a, "ttft_p50"), added(a, "ttft_p99"), ratio(row.VsRef, "ttft_p99"), errsOf(row))
		} else {
			fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Target, m["rps"],
				fmtUS(m["p50"]), fmtUS(m["p90"]), fmtUS(m["p99"]), fmtUS(m["p99.9"]),
				added(a, "p50"), added(a, "p90"), added(a, "p99"), ratio(row.VsRef, "p99"), errsOf(row))
		}
	}
}

func added(a map[string]float64, k string) string {
	v, ok := a[k]
	if !ok {
		return "–"
	}
	s := fmtUS(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}

func ratio(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v)
}

func errsOf(row *Row) string {
	n := 0
	for _, v := range row.Errors {
		n += v
	}
	if n == 0 {
		return fmt.Sprintf("0 / %d", row.Requests)
	}
	return fmt.Sprintf("%s / %d", fmtErrs(row.Errors), row.Requests)
}
