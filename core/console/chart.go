package console

import (
	"fmt"
	"html"
	"html/template"
	"sort"
	"strings"
	"time"
)

// palette colours the models of a chart, in order of their total.
var palette = []string{"#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795", "#b7791f", "#718096"}

// chart is a stacked bar chart of daily tokens by model, drawn as SVG on
// the server (no script, no inline style: presentation attributes only).
type chart struct {
	SVG    template.HTML
	Legend []legendEntry
	Total  int64
}

type legendEntry struct {
	Model  string
	Colour string
	Tokens int64
}

const (
	chartW, chartH   = 720, 220
	chartPadL        = 56
	chartPadB        = 24
	chartPadT        = 8
	maxChartedModels = 7 // len(palette)-1: the rest are summed as "other"
)

// usageChart draws days days ending today (UTC) from rows.
func usageChart(rows []DayUsage, days int, today time.Time) chart {
	start := today.UTC().Truncate(24*time.Hour).AddDate(0, 0, -(days - 1))
	inWindow := func(r DayUsage) int {
		d := int(r.Day.Sub(start) / (24 * time.Hour))
		if r.Day.Before(start) || d >= days {
			return -1
		}
		return d
	}
	totals := map[string]int64{}
	for _, r := range rows {
		if inWindow(r) >= 0 {
			totals[r.Model] += r.Tokens
		}
	}
	models := make([]string, 0, len(totals))
	for m := range totals {
		models = append(models, m)
	}
	sort.Slice(models, func(i, j int) bool {
		if totals[models[i]] != totals[models[j]] {
			return totals[models[i]] > totals[models[j]]
		}
		return models[i] < models[j]
	})
	colour := map[string]string{}
	var ch chart
	for i, m := range models {
		if i >= maxChartedModels {
			colour[m] = palette[len(palette)-1]
			continue
		}
		colour[m] = palette[i]
		ch.Legend = append(ch.Legend, legendEntry{Model: m, Colour: palette[i], Tokens: totals[m]})
	}
	if len(models) > maxChartedModels {
		var other int64
		for _, m := range models[maxChartedModels:] {
			other += totals[m]
		}
		ch.Legend = append(ch.Legend, legendEntry{Model: "other", Colour: palette[len(palette)-1], Tokens: other})
	}
	perDay := make([][]DayUsage, days)
	dayTotal := make([]int64, days)
	var peak int64
	for _, r := range rows {
		d := inWindow(r)
		if d < 0 {
			continue
		}
		perDay[d] = append(perDay[d], r)
		dayTotal[d] += r.Tokens
		ch.Total += r.Tokens
		peak = max(peak, dayTotal[d])
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="Tokens per day, last %d days" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, days)
	plotW, plotH := float64(chartW-chartPadL), float64(chartH-chartPadB-chartPadT)
	scale := niceCeil(peak)
	for i := 0; i <= 4; i++ { // grid lines and labels
		y := float64(chartPadT) + plotH - plotH*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e2e8f0"/>`, chartPadL, chartW, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end" fill="#4a5568">%s</text>`, chartPadL-4, y+3, humanInt(scale*int64(i)/4))
	}
	barW := plotW / float64(days)
	for d := 0; d < days; d++ {
		x := float64(chartPadL) + barW*float64(d)
		y := float64(chartPadT) + plotH
		sort.Slice(perDay[d], func(i, j int) bool { return totals[perDay[d][i].Model] > totals[perDay[d][j].Model] })
		for _, r := range perDay[d] {
			h := plotH * float64(r.Tokens) / float64(scale)
			y -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %d tokens</title></rect>`,
				x+1, y, max(barW-2, 1), h, colour[r.Model], start.AddDate(0, 0, d).Format("Jan 2"), html.EscapeString(r.Model), r.Tokens)
		}
		if (d%5 == 0 && d < days-3) || d == days-1 {
			anchor, lx := "middle", x+barW/2
			if d == days-1 {
				anchor, lx = "end", x+barW // inside the picture
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" text-anchor="%s" fill="#4a5568">%s</text>`,
				lx, chartH-8, anchor, start.AddDate(0, 0, d).Format("Jan 2"))
		}
	}
	b.WriteString(`</svg>`)
	ch.SVG = template.HTML(b.String()) // every text in it is escaped above
	return ch
}

// niceCeil rounds n up to 1, 2, 4 or 5 times a power of ten that four
// divides, so the four grid steps are whole, round numbers (at least 4).
func niceCeil(n int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 4, 5} {
			if v := p * m; v >= n && v%4 == 0 {
				return v
			}
		}
	}
}

// humanInt writes n with k, M or G.
func humanInt(n int64) string {
	switch {
	case n >= 1_000_000_000:
		return trimZero(fmt.Sprintf("%.1fG", float64(n)/1e9))
	case n >= 1_000_000:
		return trimZero(fmt.Sprintf("%.1fM", float64(n)/1e6))
	case n >= 10_000:
		return trimZero(fmt.Sprintf("%.1fk", float64(n)/1e3))
	}
	return fmt.Sprint(n)
}

func trimZero(s string) string { return strings.Replace(s, ".0", "", 1) }
