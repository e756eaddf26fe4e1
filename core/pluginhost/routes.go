package pluginhost

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mindrouter/mindrouter/core/pathtmpl"
	"github.com/mindrouter/mindrouter/sdk"
)

// declaredRoute is one translator route with the plugin that declares it.
type declaredRoute struct {
	plugin string
	part   string // the translator component's name and format: one
	format string // translator shipped in two modules is not a conflict
	r      sdk.Route
	t      *pathtmpl.Template
}

// CheckRoutes refuses a plugin set in which two plugins' translator routes
// may answer the same request: the same method, paths (exact or templates,
// pathtmpl.Overlap) that one path matches, and the same selectors
// (sdk.Route.Select; a route selected by a header is not in conflict with
// one that is not). It also refuses a route whose template does not
// parse. The error names both plugins and both routes. A plugin repeating
// its own route is not refused (its first declaration serves), nor is one
// translator (the same component name and format) shipped in two modules,
// the first-party bundle and its separate openai module for instance: the
// first in plugins.yaml serves.
func CheckRoutes(plugins []*Plugin) error {
	named := make([]namedManifest, 0, len(plugins))
	for _, p := range plugins {
		named = append(named, namedManifest{p.Name(), p.Manifest()})
	}
	return checkRoutes(named)
}

// namedManifest is a plugin's manifest under its plugins.yaml name.
type namedManifest struct {
	name string
	m    sdk.Manifest
}

func checkRoutes(plugins []namedManifest) error {
	var all []declaredRoute
	for _, p := range plugins {
		for _, m := range p.m.Parts() {
			if m.Kind != sdk.KindTranslator {
				continue
			}
			for _, r := range m.Routes {
				t, err := pathtmpl.Parse(r.Path)
				if err != nil {
					return fmt.Errorf("pluginhost: plugin %q route %q: %w", p.name, r.Name, err)
				}
				if r.Method == "" {
					r.Method = "POST"
				}
				all = append(all, declaredRoute{plugin: p.name, part: m.Name, format: m.Format, r: r, t: t})
			}
		}
	}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			a, b := &all[i], &all[j]
			if a.plugin == b.plugin || a.part == b.part && a.format == b.format || a.r.Method != b.r.Method || !sameSelect(a.r.Select, b.r.Select) || !pathtmpl.Overlap(a.t, b.t) {
				continue
			}
			return fmt.Errorf("pluginhost: route conflict: plugin %q route %q (%s %s) and plugin %q route %q (%s %s) may serve the same request",
				a.plugin, a.r.Name, a.r.Method, a.r.Path, b.plugin, b.r.Name, b.r.Method, b.r.Path)
		}
	}
	return nil
}

func sameSelect(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.EqualFunc(a, b, strings.EqualFold)
}
