package pluginhost

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

const (
	opSlots     = 64 // ops are < 64 in ABI v2 (fused ops are 32-34); others count in slot 0
	statusSlots = 8
	// partSlots bounds the components of a bundle counted one by one (and
	// its translator × adapter pairs for fused calls); calls naming a
	// component past it count in the plugin's totals only.
	partSlots = 64
)

// latencyBuckets are the call latency histogram's upper bounds.
var latencyBuckets = [...]time.Duration{
	2 * time.Microsecond, 5 * time.Microsecond, 10 * time.Microsecond, 25 * time.Microsecond,
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 100 * time.Millisecond, time.Second,
}

type histogram struct {
	counts [len(latencyBuckets) + 1]atomic.Uint64 // last: +Inf
	sumNs  atomic.Int64
}

func (h *histogram) observe(ns int64) {
	i := 0
	for i < len(latencyBuckets) && time.Duration(ns) > latencyBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(ns)
}

// pluginMetrics are a plugin's counters across its versions: atomics only,
// so recording a call does not allocate.
type pluginMetrics struct {
	calls          [opSlots]atomic.Uint64
	errors         [statusSlots]atomic.Uint64 // error statuses reported by the plugin
	traps          atomic.Uint64
	timeouts       atomic.Uint64
	protocol       atomic.Uint64
	tooLarge       atomic.Uint64
	poolFailures   atomic.Uint64
	latency        histogram
	instantiations atomic.Uint64
	slowPath       atomic.Uint64
	discarded      atomic.Uint64
	logDropped     atomic.Uint64
	stuck          atomic.Uint64
	reloadsOK      atomic.Uint64
	reloadsFailed  atomic.Uint64
}

// partCounter counts the calls of one component of a bundle, by op; for
// fused ops, of one translator+adapter pair. It is keyed by name on the
// Plugin, so the counts of a component carry over reloads, whatever its
// index in the new version.
type partCounter struct {
	name  string // "openai", or "openai+vllm" for fused calls
	calls [opSlots]atomic.Uint64
}

// partCounter returns the counter named name, creating it on first use
// (at load, never on the call path).
func (p *Plugin) partCounter(name string) *partCounter {
	p.partsMu.Lock()
	defer p.partsMu.Unlock()
	for _, c := range p.parts {
		if c.name == name {
			return c
		}
	}
	c := &partCounter{name: name}
	p.parts = append(p.parts, c)
	return c
}

func (p *Plugin) partCounters() []*partCounter {
	p.partsMu.Lock()
	defer p.partsMu.Unlock()
	return append([]*partCounter(nil), p.parts...)
}

// partMetrics resolves a bundle version's per-component counters: by
// component index, and for fused calls by translator × adapter index.
// Modules of one component count in the plugin's totals only.
func (v *Version) partMetrics() {
	m := &v.manifest
	if m.Kind != sdk.KindBundle {
		return
	}
	n := min(len(m.Components), partSlots)
	v.parts = make([]*partCounter, n)
	v.fused = make([]*partCounter, n*n)
	for i := range n {
		v.parts[i] = v.plugin.partCounter(m.Components[i].Name)
	}
	for t := range n {
		for a := range n {
			if m.Components[t].Kind == sdk.KindTranslator && m.Components[a].Kind == sdk.KindAdapter {
				v.fused[t*n+a] = v.plugin.partCounter(m.Components[t].Name + "+" + m.Components[a].Name)
			}
		}
	}
}

// recordPart counts a call of a bundle's component (atomics only).
func (v *Version) recordPart(op abi.Op, in *CallInput) {
	n := len(v.parts)
	if n == 0 || int(op) >= opSlots {
		return
	}
	var c *partCounter
	switch {
	case op >= abi.OpFusedRequest && op <= abi.OpFusedStream:
		if t, a := int(in.Translator), int(in.Adapter); t < n && a < n {
			c = v.fused[t*n+a]
		}
	case op >= abi.OpFusedRequest:
		// not an op of a component
	case op >= abi.OpRequestEncode:
		if int(in.Adapter) < n {
			c = v.parts[in.Adapter]
		}
	case op > 0:
		if int(in.Translator) < n {
			c = v.parts[in.Translator]
		}
	}
	if c != nil {
		c.calls[op].Add(1)
	}
}

type hostMetrics struct {
	reloadsOK     atomic.Uint64
	reloadsFailed atomic.Uint64
}

func (m *pluginMetrics) record(op abi.Op, st abi.Status, err error, ns int64) {
	i := int(op)
	if i >= opSlots {
		i = 0
	}
	m.calls[i].Add(1)
	m.latency.observe(ns)
	if err == nil {
		return
	}
	var se *StatusError
	switch {
	case errors.As(err, &se):
		m.errors[min(int(st), statusSlots-1)].Add(1)
	case errors.Is(err, ErrTrap):
		m.traps.Add(1)
	case errors.Is(err, ErrTimeout):
		m.timeouts.Add(1)
	case errors.Is(err, ErrProtocol):
		m.protocol.Add(1)
	case errors.Is(err, ErrTooLarge):
		m.tooLarge.Add(1)
	}
}

// WriteMetrics writes every plugin's metrics in the Prometheus text format.
func (h *Host) WriteMetrics(w io.Writer) {
	var plugins []*Plugin
	if s := h.set.Load(); s != nil {
		plugins = s.list
	}
	versions := h.liveVersions()
	sort.Slice(versions, func(i, j int) bool { return versions[i].seq < versions[j].seq })
	writeMetrics(w, plugins, versions)
	fmt.Fprintf(w, "# HELP mindrouter_plugin_host_reloads_total Reloads of plugins.yaml by result.\n# TYPE mindrouter_plugin_host_reloads_total counter\n")
	fmt.Fprintf(w, "mindrouter_plugin_host_reloads_total{result=\"ok\"} %d\n", h.metrics.reloadsOK.Load())
	fmt.Fprintf(w, "mindrouter_plugin_host_reloads_total{result=\"failed\"} %d\n", h.metrics.reloadsFailed.Load())
}

func writeMetrics(w io.Writer, plugins []*Plugin, versions []*Version) {
	family := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	counter := func(name, help string, get func(*pluginMetrics) uint64) {
		family(name, "counter", help)
		for _, p := range plugins {
			fmt.Fprintf(w, "%s{plugin=%s} %d\n", name, quote(p.name), get(&p.metrics))
		}
	}
	family("mindrouter_plugin_calls_total", "counter", "Plugin calls by op.")
	for _, p := range plugins {
		for op := range p.metrics.calls {
			if n := p.metrics.calls[op].Load(); n > 0 {
				fmt.Fprintf(w, "mindrouter_plugin_calls_total{plugin=%s,op=%s} %d\n", quote(p.name), quote(abi.Op(op).String()), n)
			}
		}
	}
	family("mindrouter_plugin_errors_total", "counter", "Calls answered with an error status, by status.")
	for _, p := range plugins {
		for st := abi.StatusBadInput; st < statusSlots; st++ {
			if n := p.metrics.errors[st].Load(); n > 0 {
				fmt.Fprintf(w, "mindrouter_plugin_errors_total{plugin=%s,status=%s} %d\n", quote(p.name), quote(st.String()), n)
			}
		}
	}
	family("mindrouter_plugin_component_calls_total", "counter",
		"Calls of a bundle's components by op; a fused op counts for its \"translator+adapter\" pair.")
	for _, p := range plugins {
		for _, c := range p.partCounters() {
			for op := range c.calls {
				if n := c.calls[op].Load(); n > 0 {
					fmt.Fprintf(w, "mindrouter_plugin_component_calls_total{plugin=%s,component=%s,op=%s} %d\n",
						quote(p.name), quote(c.name), quote(abi.Op(op).String()), n)
				}
			}
		}
	}
	counter("mindrouter_plugin_traps_total", "Calls that trapped (instance discarded).", func(m *pluginMetrics) uint64 { return m.traps.Load() })
	counter("mindrouter_plugin_timeouts_total", "Calls interrupted at their deadline (strict mode).", func(m *pluginMetrics) uint64 { return m.timeouts.Load() })
	counter("mindrouter_plugin_protocol_errors_total", "Calls whose result broke the ABI.", func(m *pluginMetrics) uint64 { return m.protocol.Load() })
	counter("mindrouter_plugin_too_large_total", "Calls refused for oversized input.", func(m *pluginMetrics) uint64 { return m.tooLarge.Load() })
	counter("mindrouter_plugin_pool_failures_total", "Calls that got no instance (pool timeout, closed, instantiation failure).", func(m *pluginMetrics) uint64 { return m.poolFailures.Load() })
	counter("mindrouter_plugin_stuck_calls_total", "Calls the watchdog found past their hard limit.", func(m *pluginMetrics) uint64 { return m.stuck.Load() })
	counter("mindrouter_plugin_instantiations_total", "Instances created.", func(m *pluginMetrics) uint64 { return m.instantiations.Load() })
	counter("mindrouter_plugin_slow_path_total", "Instances created on the request path.", func(m *pluginMetrics) uint64 { return m.slowPath.Load() })
	counter("mindrouter_plugin_discarded_total", "Instances discarded (error, max_calls, memory).", func(m *pluginMetrics) uint64 { return m.discarded.Load() })
	counter("mindrouter_plugin_log_dropped_total", "Plugin log lines dropped by the rate limit.", func(m *pluginMetrics) uint64 { return m.logDropped.Load() })
	family("mindrouter_plugin_reloads_total", "counter", "Hot reloads of a plugin by result.")
	for _, p := range plugins {
		fmt.Fprintf(w, "mindrouter_plugin_reloads_total{plugin=%s,result=\"ok\"} %d\n", quote(p.name), p.metrics.reloadsOK.Load())
		fmt.Fprintf(w, "mindrouter_plugin_reloads_total{plugin=%s,result=\"failed\"} %d\n", quote(p.name), p.metrics.reloadsFailed.Load())
	}
	writeLatency(w, plugins)
	writeVersions(w, plugins, versions)
}

func writeLatency(w io.Writer, plugins []*Plugin) {
	const name = "mindrouter_plugin_call_duration_seconds"
	fmt.Fprintf(w, "# HELP %s Plugin call latency, instance acquisition included.\n# TYPE %s histogram\n", name, name)
	for _, p := range plugins {
		h := &p.metrics.latency
		var cum uint64
		for i, b := range latencyBuckets {
			cum += h.counts[i].Load()
			fmt.Fprintf(w, "%s_bucket{plugin=%s,le=\"%s\"} %d\n", name, quote(p.name), strconv.FormatFloat(b.Seconds(), 'g', -1, 64), cum)
		}
		cum += h.counts[len(latencyBuckets)].Load()
		fmt.Fprintf(w, "%s_bucket{plugin=%s,le=\"+Inf\"} %d\n", name, quote(p.name), cum)
		fmt.Fprintf(w, "%s_sum{plugin=%s} %g\n", name, quote(p.name), time.Duration(h.sumNs.Load()).Seconds())
		fmt.Fprintf(w, "%s_count{plugin=%s} %d\n", name, quote(p.name), cum)
	}
}

func writeVersions(w io.Writer, plugins []*Plugin, versions []*Version) {
	fmt.Fprintf(w, "# HELP mindrouter_plugin_instances Instances of live plugin versions by state.\n# TYPE mindrouter_plugin_instances gauge\n")
	for _, v := range versions {
		st := v.Stats()
		l := fmt.Sprintf("plugin=%s,seq=\"%d\"", quote(v.plugin.name), v.seq)
		fmt.Fprintf(w, "mindrouter_plugin_instances{%s,state=\"live\"} %d\n", l, st.Live)
		fmt.Fprintf(w, "mindrouter_plugin_instances{%s,state=\"idle\"} %d\n", l, st.Idle)
	}
	fmt.Fprintf(w, "# HELP mindrouter_plugin_info Current version of each plugin (value 1 if healthy, 0 if the watchdog flagged it).\n# TYPE mindrouter_plugin_info gauge\n")
	for _, p := range plugins {
		v := p.current.Load()
		if v == nil {
			continue
		}
		healthy := 1
		if !v.Healthy() {
			healthy = 0
		}
		fmt.Fprintf(w, "mindrouter_plugin_info{plugin=%s,version=%s,seq=\"%d\",sha256=%s,mode=%s,kind=%s,abi=\"%d.%d\"} %d\n",
			quote(p.name), quote(v.manifest.Version), v.seq, quote(v.sha), quote(string(v.cfg.Mode)),
			quote(string(v.manifest.Kind)), abi.VersionMajor, abi.VersionMinor, healthy)
	}
	fmt.Fprintf(w, "# HELP mindrouter_plugin_component_info Components of each plugin's current version (a bundle's, by index; a module of one component has index 0).\n# TYPE mindrouter_plugin_component_info gauge\n")
	for _, p := range plugins {
		v := p.current.Load()
		if v == nil {
			continue
		}
		for i, c := range v.manifest.Parts() {
			fmt.Fprintf(w, "mindrouter_plugin_component_info{plugin=%s,index=\"%d\",component=%s,kind=%s,format=%s,version=%s} 1\n",
				quote(p.name), i, quote(c.Name), quote(string(c.Kind)), quote(c.Format), quote(c.Version))
		}
	}
}

// quote is a Prometheus label value.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
