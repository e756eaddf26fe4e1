package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// memSessions is a SessionStore in memory, with expiry, for unit tests.
type memSessions struct {
	mu   sync.Mutex
	m    map[string]memEntry
	now  func() time.Time
	puts int
}

type memEntry struct {
	data []byte
	exp  time.Time
}

func (m *memSessions) Put(_ context.Context, id, data []byte, exp time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[string(id)] = memEntry{append([]byte(nil), data...), exp}
	m.puts++
	return nil
}

func (m *memSessions) Get(_ context.Context, id []byte) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[string(id)]
	if !ok || !m.now().Before(e.exp) {
		return nil, errNoSession
	}
	return e.data, nil
}

func (m *memSessions) Delete(_ context.Context, id []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, string(id))
	return nil
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)} }
func newMem(c *clock) *memSessions       { return &memSessions{m: map[string]memEntry{}, now: c.now} }
func newSessions(c *clock, idle, max time.Duration) (*sessions, *memSessions) {
	m := newMem(c)
	return &sessions{st: m, exp: Expiry{Idle: idle, Max: max}, now: c.now}, m
}

func TestSessions_IdleExpiry(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	ss, _ := newSessions(c, 30*time.Minute, 8*time.Hour)
	tok, err := ss.create(ctx, &Session{UserID: 7, Via: viaOIDC})
	if err != nil {
		t.Fatal(err)
	}
	c.advance(29 * time.Minute)
	if _, err := ss.get(ctx, tok); err != nil {
		t.Fatalf("within the idle time: %v", err)
	}
	// The request moved LastSeen: another 29 minutes are fine, then 31 are not.
	c.advance(29 * time.Minute)
	if _, err := ss.get(ctx, tok); err != nil {
		t.Fatalf("used again within the idle time: %v", err)
	}
	c.advance(31 * time.Minute)
	if _, err := ss.get(ctx, tok); !errors.Is(err, errNoSession) {
		t.Fatalf("after 31 idle minutes: %v, want errNoSession", err)
	}
}

func TestSessions_AbsoluteExpiry(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	ss, _ := newSessions(c, 30*time.Minute, 2*time.Hour)
	tok, err := ss.create(ctx, &Session{UserID: 7, Via: viaKey, KeyID: 3})
	if err != nil {
		t.Fatal(err)
	}
	for range 7 { // busy all along: every 20 minutes for 2h20
		c.advance(20 * time.Minute)
		_, err = ss.get(ctx, tok)
		if c.t.Sub(newClock().t) < 2*time.Hour && err != nil {
			t.Fatalf("at %s: %v", c.t.Sub(newClock().t), err)
		}
	}
	if !errors.Is(err, errNoSession) {
		t.Fatalf("a session used all along still works after session_max: %v", err)
	}
}

// The stored record's own expiry follows the policy, so Redis and the
// store drop it without the console's help.
func TestSessions_RecordExpiry(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	ss, m := newSessions(c, 30*time.Minute, time.Hour)
	tok, _ := ss.create(ctx, &Session{UserID: 1, Via: viaOIDC})
	e := m.m[string(hashToken(tok))]
	if want := c.t.Add(30 * time.Minute); !e.exp.Equal(want) {
		t.Fatalf("record expires %s, want %s (idle)", e.exp, want)
	}
	c.advance(45 * time.Minute)
	ss.exp.Idle = 45 * time.Minute // idle now reaches past the absolute end
	tok2, _ := ss.create(ctx, &Session{UserID: 1, Via: viaOIDC})
	c.advance(20 * time.Minute)
	if _, err := ss.get(ctx, tok2); err != nil {
		t.Fatal(err)
	}
	e = m.m[string(hashToken(tok2))]
	if want := c.t.Add(-20 * time.Minute).Add(time.Hour); !e.exp.Equal(want) {
		t.Fatalf("record expires %s, want %s (absolute)", e.exp, want)
	}
}

// LastSeen is written at most once a minute (a tenth of the idle time for
// short ones), not at every request.
func TestSessions_TouchRate(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	ss, m := newSessions(c, time.Hour, 8*time.Hour)
	tok, _ := ss.create(ctx, &Session{UserID: 1, Via: viaOIDC})
	before := m.puts
	for range 10 {
		c.advance(5 * time.Second)
		if _, err := ss.get(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if m.puts != before+0 {
		t.Fatalf("%d writes in 50 s of requests, want 0", m.puts-before)
	}
	c.advance(15 * time.Second)
	_, _ = ss.get(ctx, tok)
	if m.puts != before+1 {
		t.Fatalf("%d writes after a minute, want 1", m.puts-before)
	}
}

func TestSessions_UnknownAndEnded(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	ss, _ := newSessions(c, time.Hour, 8*time.Hour)
	if _, err := ss.get(ctx, ""); !errors.Is(err, errNoSession) {
		t.Fatalf("empty token: %v", err)
	}
	if _, err := ss.get(ctx, "forged"); !errors.Is(err, errNoSession) {
		t.Fatalf("forged token: %v", err)
	}
	tok, _ := ss.create(ctx, &Session{UserID: 1, Via: viaOIDC})
	s, err := ss.get(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.end(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.get(ctx, tok); !errors.Is(err, errNoSession) {
		t.Fatalf("after end: %v", err)
	}
}

// A sign-in state is good once, and not after pendingTTL.
func TestSessions_Pending(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	ss, _ := newSessions(c, time.Hour, 8*time.Hour)
	if err := ss.putPending(ctx, "s1", &pending{Nonce: "n", Verifier: "v", Created: c.t}); err != nil {
		t.Fatal(err)
	}
	p, err := ss.takePending(ctx, "s1")
	if err != nil || p.Nonce != "n" || p.Verifier != "v" {
		t.Fatalf("take: %+v %v", p, err)
	}
	if _, err := ss.takePending(ctx, "s1"); err == nil {
		t.Fatal("a state was taken twice")
	}
	_ = ss.putPending(ctx, "s2", &pending{Nonce: "n", Created: c.t})
	c.advance(pendingTTL + time.Second)
	if _, err := ss.takePending(ctx, "s2"); err == nil {
		t.Fatal("an expired state was accepted")
	}
}

func TestCSRF(t *testing.T) {
	c := &Console{}
	form := func(v url.Values, hdr string) *http.Request {
		r := httptest.NewRequest("POST", "/console/keys", strings.NewReader(v.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if hdr != "" {
			r.Header.Set("X-CSRF-Token", hdr)
		}
		return r
	}
	cases := []struct {
		name string
		r    *http.Request
		want string
		ok   bool
	}{
		{"matching field", form(url.Values{"csrf": {"tok"}}, ""), "tok", true},
		{"matching header", form(url.Values{}, "tok"), "tok", true},
		{"missing", form(url.Values{"name": {"x"}}, ""), "tok", false},
		{"wrong", form(url.Values{"csrf": {"tok2"}}, ""), "tok", false},
		{"prefix of the token", form(url.Values{"csrf": {"to"}}, ""), "tok", false},
		{"no session token", form(url.Values{"csrf": {""}}, ""), "", false},
		{"in the query only", httptest.NewRequest("POST", "/console/keys?csrf=tok", nil), "tok", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.csrfOK(tc.r, tc.want); got != tc.ok {
				t.Fatalf("csrfOK = %v, want %v", got, tc.ok)
			}
		})
	}
}
