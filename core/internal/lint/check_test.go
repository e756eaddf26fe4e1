package lint

import (
	"strings"
	"testing"
)

// The rules on a made-up graph: each kind of violation is found, named by
// importer and imported with the chain that reaches it, and an
// allowlisted edge is not followed.
func TestCheck(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	g := graph{}
	add := func(from string, to ...string) { g[from] = &pkg{ImportPath: from, Imports: to} }
	add(m("core/server"), m("core/tokens"), "fmt")
	add(m("core/tokens"), m("bench/fake"))
	add(m("bench/fake"), m("plugins/vllm"))
	add(m("core/cmd/mindrouter"), m("plugins/firstparty"))                            // the command may link plugins
	add(m("core/gateway")+" ["+m("core/gateway.test")+"]", m("plugins/vllm"))         // and tests may use them
	add(m("plugins/vllm")+" ["+m("plugins/vllm.test")+"]", m("plugins/internal/kit")) // a plugin's test...
	add(m("plugins/internal/kit"), m("core/pluginhost"))                              // ...reaching core
	add(m("plugins/ollama"), m("plugins/internal/allowed"))
	add(m("plugins/internal/allowed"), m("core/pluginhost"))
	add(m("core/backend"), m("sidecar/wire"))
	add(m("sidecar/collect"), "github.com/NVIDIA/go-nvml/pkg/nvml")
	add(m("core/gpu")+"_test ["+m("core/gpu.test")+"]", m("sidecar/collect"))
	add(m("plugins/vllm"), "strings")
	add(m("sidecar/wire"))
	allow := map[[2]string]string{{"plugins/internal/allowed", "core/pluginhost"}: "test"}
	used := map[[2]string]bool{}
	var got []string
	for _, v := range check(g, rules, allow, used) {
		got = append(got, v.String())
	}
	want := []string{
		"bench/fake imports plugins/vllm: \"core does not import plugins\" is broken",
		"reached from core/tokens -> bench/fake -> plugins/vllm",
		"plugins/internal/kit imports core/pluginhost: \"plugins and sdk do not import core\"",
		"sidecar/collect imports github.com/NVIDIA/go-nvml/pkg/nvml: \"only the sidecar imports go-nvml\"",
		"reached from core/gpu (test) -> sidecar/collect -> github.com/NVIDIA/go-nvml/pkg/nvml",
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("missing %q in:\n%s", w, all)
		}
	}
	// core/tokens reaches bench/fake too, and plugins/vllm's test reaches
	// plugins/internal/kit, itself a package of the rule: each edge is
	// reported once per rule, with the shortest chain to it.
	if len(got) != 3 {
		t.Errorf("%d violations, want 3:\n%s", len(got), all)
	}
	if !used[[2]string{"plugins/internal/allowed", "core/pluginhost"}] {
		t.Error("the allowlisted edge was not met")
	}
}

func TestRel(t *testing.T) {
	for k, want := range map[string]struct {
		p    string
		test bool
	}{
		module + "/core/server":                                        {"core/server", false},
		module + "/core/server [" + module + "/core/server.test]":      {"core/server", true},
		module + "/core/server_test [" + module + "/core/server.test]": {"core/server", true},
		module + "/core/server.test":                                   {"core/server", true},
		module + "/sdk/abi":                                            {"sdk/abi", false},
		"github.com/valyala/fasthttp":                                  {"", false},
	} {
		if p, test := rel(k); p != want.p || test != want.test {
			t.Errorf("rel(%q) = %q %v, want %q %v", k, p, test, want.p, want.test)
		}
	}
}
