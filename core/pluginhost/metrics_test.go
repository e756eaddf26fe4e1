package pluginhost

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

func TestHost_WriteMetrics(t *testing.T) {
	h := newTestHost(t, plugin("good", "good", "translator", ModeTrusted), plugin("bad", "bad", "translator", ModeTrusted))
	var out Result
	ctx := context.Background()
	for range 3 {
		_ = h.Plugin("good").Call(ctx, abi.OpErrorEncode, errorInput, &out)
	}
	_ = h.Plugin("good").Call(ctx, abi.OpRequestDecode, CallInput{}, &out) // bad_input
	_ = h.Plugin("bad").Call(ctx, abi.OpRequestDecode, decode("trap"), &out)

	var b strings.Builder
	h.WriteMetrics(&b)
	text := b.String()
	for _, want := range []string{
		`mindrouter_plugin_calls_total{plugin="good",op="error_encode"} 3`,
		`mindrouter_plugin_calls_total{plugin="good",op="request_decode"} 1`,
		`mindrouter_plugin_errors_total{plugin="good",status="bad_input"} 1`,
		`mindrouter_plugin_traps_total{plugin="bad"} 1`,
		`mindrouter_plugin_traps_total{plugin="good"} 0`,
		`mindrouter_plugin_call_duration_seconds_count{plugin="good"} 4`,
		`mindrouter_plugin_call_duration_seconds_bucket{plugin="good",le="+Inf"} 4`,
		`mindrouter_plugin_info{plugin="good",version="A",seq="1",sha256="`,
		`mindrouter_plugin_instances{plugin="good",seq="1",state="live"}`,
		`mindrouter_plugin_host_reloads_total{result="ok"} 0`,
		`# TYPE mindrouter_plugin_call_duration_seconds histogram`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	sample := regexp.MustCompile(`^[a-z_]+(\{([a-z_0-9]+="([^"\\]|\\.)*",?)*\})? [0-9.e+-]+$`)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(line, "# ") && !sample.MatchString(line) {
			t.Errorf("malformed sample %q", line)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := quote("a\"b\\c\nd"); got != `"a\"b\\c\nd"` {
		t.Fatal(got)
	}
}
