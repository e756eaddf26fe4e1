//go:build !race

package allowlist

import "testing"

// The race detector inflates allocation counts: this runs in the
// second pass (.ci/norace-tests.sh).

// Allows is on the request path of every restricted caller.
func TestList_AllowsDoesNotAllocate(t *testing.T) {
	l := Compile([]string{"llama3:*", "openai/*"})
	if n := testing.AllocsPerRun(100, func() { l.Allows("qwen3-8b") }); n != 0 {
		t.Fatalf("Allows allocates %v times per call, want 0", n)
	}
}
