package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/core/telemetry"
)

// The cluster page: backends (health, breaker, slots, loaded models, with
// drain, enable, disable and refresh) and nodes (each GPU's last reading,
// and its history as server-drawn SVG lines from the telemetry history).
func init() {
	adminNav = append(adminNav, NavLink{Path: "admin/cluster", Label: "Cluster", Need: RoleAudit})
	adminPages = append(adminPages, func(c *Console) {
		c.page("GET /admin/cluster", RoleAudit, c.adminCluster)
		c.page("POST /admin/backends/{id}/{action}", RoleAdmin, c.adminBackendAction)
	})
}

// historySpans are the cluster page's history ranges.
var historySpans = []string{"1h", "6h", "24h", "7d"}

type clusterPage struct {
	Cluster    admin.ClusterView
	Nodes      []nodeRow
	Actions    []string
	IDs        map[string]int64 // backend name → store id (the action forms)
	GPUs       map[string][]gpuHistory
	Span       string
	Spans      []string
	HistoryErr string
}

// nodeRow and gpuRow are a node's last reading, formatted.
type nodeRow struct {
	admin.ClusterNode
	Rows []gpuRow
}

type gpuRow struct {
	Index                  int
	Name, Error            string
	Util, Mem, Temp, Power string
}

func fmtF(p *float64, format string) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf(format, *p)
}

func gpuRows(gs []admin.ClusterGPU) []gpuRow {
	out := make([]gpuRow, 0, len(gs))
	for _, g := range gs {
		r := gpuRow{Index: g.Index, Name: g.Name, Error: g.Error, Util: fmtF(g.UtilPct, "%.0f %%"), Temp: fmtF(g.TempC, "%.0f °C"),
			Power: fmtF(g.PowerW, "%.0f W"), Mem: "—"}
		if g.PowerW != nil && g.PowerLimitW != nil {
			r.Power += fmt.Sprintf(" of %.0f", *g.PowerLimitW)
		}
		if g.MemUsed != nil && g.MemTotal != nil {
			r.Mem = fmt.Sprintf("%.1f / %.1f GiB", *g.MemUsed/(1<<30), *g.MemTotal/(1<<30))
		}
		out = append(out, r)
	}
	return out
}

type gpuHistory struct {
	Index                    int
	Name                     string
	Util, Mem, Temp, Power   template.HTML
	UtilT, MemT, TempT, PowT string // the last figure, as text
	Samples                  int
}

func (c *Console) adminCluster(w http.ResponseWriter, r *http.Request, rq *Request) {
	v := clusterPage{IDs: map[string]int64{}, GPUs: map[string][]gpuHistory{}, Span: "6h", Spans: historySpans,
		Actions: []string{"refresh", "drain", "enable", "disable"}}
	if s := r.URL.Query().Get("span"); s != "" {
		for _, ok := range historySpans {
			if s == ok {
				v.Span = s
			}
		}
	}
	if err := rq.API(r.Context(), "GET", "/api/admin/cluster", nil, nil, &v.Cluster); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	for _, n := range v.Cluster.Nodes {
		v.Nodes = append(v.Nodes, nodeRow{ClusterNode: n, Rows: gpuRows(n.GPUs)})
	}
	var stored []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if err := rq.API(r.Context(), "GET", "/api/admin/backends", nil, nil, &stored); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	for _, b := range stored {
		v.IDs[b.Name] = b.ID
	}
	var hist struct {
		GPUs []struct {
			Node   string               `json:"node"`
			GPU    int                  `json:"gpu"`
			Name   string               `json:"name"`
			Points []telemetry.GPUPoint `json:"points"`
		} `json:"gpus"`
	}
	err := rq.API(r.Context(), "GET", "/api/admin/telemetry/gpus", url.Values{"since": {v.Span}}, nil, &hist)
	if err != nil {
		v.HistoryErr = "GPU history is unavailable: " + err.Error()
		if ae, ok := err.(*APIError); ok {
			v.HistoryErr = ae.Detail
		}
	}
	now := c.now()
	span, _ := parseSpan(v.Span)
	for _, s := range hist.GPUs {
		h := gpuHistory{Index: s.GPU, Name: s.Name, Samples: len(s.Points)}
		pick := func(f func(p telemetry.GPUPoint) *float64) []xy {
			var out []xy
			for _, p := range s.Points {
				x := 1 - float64(now.Sub(p.At))/float64(span)
				if v := f(p); v != nil {
					out = append(out, xy{x, *v, true})
				} else {
					out = append(out, xy{x, 0, false})
				}
			}
			return out
		}
		util := pick(func(p telemetry.GPUPoint) *float64 { return p.UtilPct })
		mem := pick(func(p telemetry.GPUPoint) *float64 {
			if p.MemUsed == nil || p.MemTotal == nil || *p.MemTotal <= 0 {
				return nil
			}
			v := *p.MemUsed * 100 / *p.MemTotal
			return &v
		})
		temp := pick(func(p telemetry.GPUPoint) *float64 { return p.TempC })
		power := pick(func(p telemetry.GPUPoint) *float64 { return p.PowerW })
		h.Util, h.UtilT = spark(util, 0, 100, "#2b6cb0"), last(util, "%.0f %%")
		h.Mem, h.MemT = spark(mem, 0, 100, "#805ad5"), last(mem, "%.0f %%")
		h.Temp, h.TempT = spark(temp, 0, maxOf(temp, 100), "#dd6b20"), last(temp, "%.0f °C")
		h.Power, h.PowT = spark(power, 0, maxOf(power, 1), "#38a169"), last(power, "%.0f W")
		v.GPUs[s.Node] = append(v.GPUs[s.Node], h)
	}
	c.render(w, r, rq, http.StatusOK, "admin_cluster.html", "Cluster", v)
}

// xy is a point of a line: x in 0..1 over the span, ok false for a gap.
type xy struct {
	x, y float64
	ok   bool
}

const sparkW, sparkH = 180, 36

// spark draws ys as an SVG polyline scaled to lo..hi; gaps split it.
func spark(pts []xy, lo, hi float64, colour string) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" viewBox="0 0 %d %d" width="%d" height="%d"><rect width="%d" height="%d" fill="#f7fafc"/>`,
		sparkW, sparkH, sparkW, sparkH, sparkW, sparkH)
	var seg []string
	flush := func() {
		if len(seg) == 1 { // a lone reading: a dot, a line needs two
			xy := strings.Split(seg[0], ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2" fill="%s"/>`, xy[0], xy[1], colour)
		} else if len(seg) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, colour, strings.Join(seg, " "))
		}
		seg = seg[:0]
	}
	for _, p := range pts {
		if !p.ok || p.x < 0 {
			flush()
			continue
		}
		y := (p.y - lo) / (hi - lo)
		seg = append(seg, fmt.Sprintf("%.1f,%.1f", p.x*sparkW, sparkH-min(max(y, 0), 1)*(sparkH-2)-1))
	}
	flush()
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // numbers and a constant colour only
}

func last(pts []xy, format string) string {
	for i := len(pts) - 1; i >= 0; i-- {
		if pts[i].ok {
			return fmt.Sprintf(format, pts[i].y)
		}
	}
	return "—"
}

func maxOf(pts []xy, floor float64) float64 {
	m := floor
	for _, p := range pts {
		if p.ok && p.y > m {
			m = p.y
		}
	}
	return m
}

// parseSpan reads "6h", "7d".
func parseSpan(s string) (time.Duration, bool) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.Atoi(n)
		return time.Duration(d) * 24 * time.Hour, err == nil
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// adminBackendAction is a backend's enable, disable, drain or refresh
// button, through the admin API.
func (c *Console) adminBackendAction(w http.ResponseWriter, r *http.Request, rq *Request) {
	id, action := r.PathValue("id"), r.PathValue("action")
	switch action {
	case "enable", "disable", "drain", "refresh":
	default:
		c.fail(w, r, rq, http.StatusNotFound, "No such backend action.")
		return
	}
	var out struct {
		ApplyError string `json:"apply_error"`
		Error      string `json:"error"`
	}
	if err := rq.API(r.Context(), "POST", "/api/admin/backends/"+id+"/"+action, nil, nil, &out); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	done := "backend-" + action
	if e := out.ApplyError + out.Error; e != "" {
		c.log.Warn("console: backend action stored, not applied", "backend", id, "action", action, "err", e)
		done = "backend-unapplied"
	}
	http.Redirect(w, r, c.prefix+"admin/cluster?done="+done, http.StatusSeeOther)
}
