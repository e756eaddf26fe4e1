package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Per-model probes (ABI 2.4, sdk.Probe.PerModel): Ollama's POST /api/show
// tells a model's capabilities (vision, tools) and context window, which
// its model list does not. One request per model is too many to send
// every round, so each backend keeps what it learned and re-asks only
// when the model changed or the answer got old.
const (
	// modelProbeEvery is how many rounds a model's answer is kept.
	modelProbeEvery = 30
	// modelProbeRetry is how many rounds a failed probe waits.
	modelProbeRetry = 3
	// modelProbesPerRound bounds a backend's per-model probes in one
	// round: one with hundreds of models is covered over several rounds.
	modelProbesPerRound = 16
)

// modelCache is one backend's per-model probe results. Only that
// backend's probe goroutine uses it (one at a time: Round waits).
type modelCache struct {
	round   int
	entries map[string]*modelEntry
}

// modelEntry is what a model's per-model probes found, and when.
type modelEntry struct {
	round  int    // when last probed
	size   int64  // the model list's size and family then: a change
	family string // (a new pull under the same name) re-probes
	ok     bool   // the last probe succeeded; learned is its answer
	// learned holds Capabilities (sorted, shared read-only with every
	// published Status), ContextLength and Family.
	learned canon.DiscoveredModel
}

// modelCaches maps each Discoverer's backends to their caches.
type modelCaches struct {
	mu sync.Mutex
	m  map[*Backend]*modelCache
}

func (c *modelCaches) get(b *Backend) *modelCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[*Backend]*modelCache{}
	}
	mc := c.m[b]
	if mc == nil {
		mc = &modelCache{entries: map[string]*modelEntry{}}
		c.m[b] = mc
	}
	return mc
}

// due reports whether model m needs its per-model probes this round.
func (mc *modelCache) due(name string, m *canon.DiscoveredModel) bool {
	e := mc.entries[name]
	if e == nil || e.size != m.SizeBytes || e.family != m.Family {
		return true
	}
	wait := modelProbeEvery
	if !e.ok {
		wait = modelProbeRetry
	}
	return mc.round-e.round >= wait
}

// probeModels runs the adapter's per-model probes for the models of st
// that are due (unprobed ones first, at most modelProbesPerRound) and
// merges every known answer into st.Models. A failure is logged and
// leaves the backend's health alone.
func (d *Discoverer) probeModels(ctx context.Context, b *Backend, v *pluginhost.Version, idx uint16, probes []sdk.Probe, st *Status) {
	mc := d.caches.get(b)
	mc.round++
	names := make([]string, 0, len(st.Models))
	for name := range st.Models {
		names = append(names, name)
	}
	slices.Sort(names)
	for name := range mc.entries { // forget models no longer listed
		if _, ok := st.Models[name]; !ok {
			delete(mc.entries, name)
		}
	}
	var due []string
	for _, first := range []bool{true, false} { // never probed, then stale
		for _, name := range names {
			m := st.Models[name]
			if (mc.entries[name] == nil) == first && len(due) < modelProbesPerRound && mc.due(name, &m) {
				due = append(due, name)
			}
		}
	}
	for _, name := range due {
		if ctx.Err() != nil {
			break
		}
		m := st.Models[name]
		e := &modelEntry{round: mc.round, size: m.SizeBytes, family: m.Family, ok: true}
		if old := mc.entries[name]; old != nil && old.ok {
			e.learned = old.learned // kept should this probe fail
		}
		var learned canon.DiscoveredModel
		fetchFailed := false
		for _, p := range probes {
			if err := d.probeModel(ctx, b, v, idx, p, name, &learned); err != nil {
				d.log.LogAttrs(ctx, slog.LevelDebug, "per-model probe failed",
					slog.String("backend", b.Name), slog.String("model", name), slog.String("probe", p.Name), slog.String("error", err.Error()))
				e.ok = false
				var fe *fetchError
				fetchFailed = errors.As(err, &fe)
				break
			}
		}
		if e.ok {
			slices.Sort(learned.Capabilities)
			e.learned = learned
		}
		mc.entries[name] = e
		if fetchFailed {
			break // the backend does not answer: leave the rest for later rounds
		}
	}
	for name, e := range mc.entries {
		if e.learned.Capabilities == nil && e.learned.ContextLength == 0 && e.learned.Family == "" {
			continue
		}
		m := st.Models[name]
		if e.learned.Capabilities != nil {
			m.Capabilities = e.learned.Capabilities
		}
		// The per-model answer is the model's own window (Ollama's
		// /api/show); the list's may be only the current load's (/api/ps
		// reports the num_ctx Ollama loaded it with, 4096 by default).
		if e.learned.ContextLength > 0 {
			m.ContextLength = e.learned.ContextLength
		}
		if m.Family == "" {
			m.Family = e.learned.Family
		}
		st.Models[name] = m
	}
}

// fetchError is a per-model probe's request that got no answer.
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// probeModel runs probe p for model name and folds the adapter's answer
// about it into learned.
func (d *Discoverer) probeModel(ctx context.Context, b *Backend, v *pluginhost.Version, idx uint16, p sdk.Probe, name string, learned *canon.DiscoveredModel) error {
	quoted, err := json.Marshal(name)
	if err != nil {
		return fmt.Errorf("quote model name: %w", err)
	}
	p.Body = strings.ReplaceAll(p.Body, "{{model}}", string(quoted))
	status, body, err := d.fetch(b, p)
	if errors.Is(err, errProbeStatus) {
		return err // an answer, if a bad one: the next model may do better
	}
	if err != nil {
		return &fetchError{err}
	}
	meta := abi.AppendMeta(abi.AppendMeta(abi.AppendMeta(nil, abi.MetaProbe, p.Name), abi.MetaStatus, strconv.Itoa(status)), abi.MetaModel, name)
	var res pluginhost.Result
	if err := v.Call(ctx, abi.OpProbeDecode, pluginhost.CallInput{Adapter: idx, Meta: meta, Payload: body}, &res); err != nil {
		return fmt.Errorf("adapter: %w", err)
	}
	var disc canon.Discovery
	if err := disc.DecodeJSON(res.Payload); err != nil {
		return fmt.Errorf("decode discovery: %w", err)
	}
	if disc.Healthy != nil && !*disc.Healthy {
		return fmt.Errorf("answered %d", status)
	}
	for i := range disc.Models {
		m := &disc.Models[i]
		if m.Name != "" && m.Name != name {
			continue
		}
		if m.Capabilities != nil {
			learned.Capabilities = slices.Clone(m.Capabilities)
		}
		if m.ContextLength > 0 {
			learned.ContextLength = m.ContextLength
		}
		if m.Family != "" {
			learned.Family = m.Family
		}
		break
	}
	return nil
}
