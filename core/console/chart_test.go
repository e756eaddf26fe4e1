package console

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestUsageChart(t *testing.T) {
	today := time.Date(2026, 3, 30, 15, 0, 0, 0, time.UTC)
	day := func(back int) time.Time { return today.Truncate(24*time.Hour).AddDate(0, 0, -back) }
	rows := []DayUsage{
		{Day: day(0), Model: "a", Tokens: 300},
		{Day: day(0), Model: "b", Tokens: 100},
		{Day: day(3), Model: "a", Tokens: 50},
		{Day: day(40), Model: "a", Tokens: 1 << 40}, // outside the 30 days
		{Day: day(1), Model: `<script>alert(1)</script>`, Tokens: 5},
	}
	for i := range 9 { // more models than colours: the smallest become "other"
		rows = append(rows, DayUsage{Day: day(2), Model: fmt.Sprintf("m%d", i), Tokens: int64(1 + i)})
	}
	ch := usageChart(rows, 30, today)
	if ch.Total != 300+100+50+5+45 {
		t.Errorf("Total = %d", ch.Total)
	}
	if len(ch.Legend) != maxChartedModels+1 || ch.Legend[0].Model != "a" || ch.Legend[0].Tokens != 350 || ch.Legend[len(ch.Legend)-1].Model != "other" {
		t.Errorf("legend = %+v", ch.Legend)
	}
	svg := string(ch.SVG)
	if strings.Contains(svg, "<script") || !strings.Contains(svg, "&lt;script&gt;") {
		t.Errorf("a model name was not escaped:\n%s", svg)
	}
	if strings.Contains(svg, "style=") {
		t.Error("the chart uses inline style (the CSP forbids it)")
	}
	if n := strings.Count(svg, "<rect"); n != 2+1+1+9 {
		t.Errorf("%d bars, want 13", n)
	}
	// The tallest day (400 tokens) fills the scale of 400 (a round number).
	if !strings.Contains(svg, `y="8.0" width="20.1" height="47.0"`) {
		t.Errorf("today's stack does not reach the top of the plot:\n%s", svg)
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{{0, 4}, {3, 4}, {5, 20}, {11, 20}, {41, 100}, {350, 400}, {401, 500}, {999, 1000}, {1001, 2000}, {123456, 200000}} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
