package server

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/mindrouter/mindrouter/core/sched"
)

// fillKnown runs at admission (noteStarted) and again at finish: the
// second run converts nothing and writes the decision's JSON again only
// after another admission (a retry on another backend).
func TestExchange_FillKnownOnce(t *testing.T) {
	s := panicServer()
	ex := newExchange()
	ex.begin(s, nil)
	ex.ip, ex.ua = netip.MustParseAddr("10.0.0.7"), append(ex.ua[:0], "curl/8.5"...)
	ex.sreq.Decision = &ex.decision
	ex.decision = sched.Decision{Candidates: []sched.Candidate{{Backend: "a", Score: 0.5}}, Chosen: "a", FairnessWait: 1500}
	ex.fillKnown()
	o := &ex.out
	if o.ClientIP != "10.0.0.7" || o.UserAgent != "curl/8.5" || !bytes.Contains(o.Decision, []byte(`"chosen":"a"`)) || o.FairnessDelay.Microseconds() != 1500 {
		t.Fatalf("outcome ip %q ua %q decision %s fairness %v", o.ClientIP, o.UserAgent, o.Decision, o.FairnessDelay)
	}
	first := string(o.Decision)
	if n := testing.AllocsPerRun(100, ex.fillKnown); n != 0 {
		t.Errorf("a second fillKnown allocates %v times", n)
	}
	if string(o.Decision) != first || o.ClientIP != "10.0.0.7" || o.UserAgent != "curl/8.5" {
		t.Errorf("second fillKnown changed the outcome: %s %q %q", o.Decision, o.ClientIP, o.UserAgent)
	}
	// Another admission (attempt.another clears decDone before Admit).
	ex.decDone = false
	ex.decision.Chosen = "b"
	ex.fillKnown()
	if !bytes.Contains(o.Decision, []byte(`"chosen":"b"`)) {
		t.Errorf("after another admission: decision %s", o.Decision)
	}
}
