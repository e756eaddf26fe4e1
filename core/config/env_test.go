package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseExpandsEnvironmentInValues(t *testing.T) {
	t.Setenv("MR_TEST_DSN", "mr:p#ss:w@rd@tcp(db:3306)/mindrouter")
	t.Setenv("MR_TEST_TTL", "90s")
	c, err := Parse([]byte(`
store: {driver: mysql, dsn: "${MR_TEST_DSN}"}
accounts:
  key_cache_ttl: ${MR_TEST_TTL}
redis: {addr: "${MR_TEST_UNSET:-}"}
log: {level: "${MR_TEST_LEVEL:-warn}"}
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Store.DSN; got != "mr:p#ss:w@rd@tcp(db:3306)/mindrouter" {
		t.Errorf("dsn = %q", got)
	}
	if c.Accounts.KeyCacheTTL.D().String() != "1m30s" {
		t.Errorf("key_cache_ttl = %v", c.Accounts.KeyCacheTTL.D())
	}
	if c.Redis.Addr != "" || c.Log.Level != "warn" {
		t.Errorf("defaults: redis %q level %q", c.Redis.Addr, c.Log.Level)
	}
}

func TestParseRefusesUnsetEnvironment(t *testing.T) {
	_, err := Parse([]byte("store: {driver: mysql, dsn: \"${MR_TEST_NOT_SET_ANYWHERE}\"}\n"), ".")
	if err == nil || !strings.Contains(err.Error(), "MR_TEST_NOT_SET_ANYWHERE is not set") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseKeepsLiteralDollarBraceAndKeys(t *testing.T) {
	t.Setenv("MR_TEST_X", "expanded")
	b, err := expandEnv([]byte("a: \"$${MR_TEST_X}\"\n# ${MR_TEST_NOT_SET_ANYWHERE} in a comment\nb: ${MR_TEST_X}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "${MR_TEST_X}") || !strings.Contains(s, "b: expanded") {
		t.Fatalf("got %s", s)
	}
}

func TestRedisSentinelConfig(t *testing.T) {
	c, err := Parse([]byte("redis:\n  sentinel: {master: mymaster, addrs: [\"s1:26379\", \"s2:26379\"]}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	if !c.RedisOn() || !c.FleetOn() {
		t.Error("sentinel does not count as Redis")
	}
	for in, want := range map[string]string{
		"redis: {addr: \"r:6379\", sentinel: {master: m, addrs: [\"s:26379\"]}}": "exclusive",
		"redis: {sentinel: {addrs: [\"s:26379\"]}}":                              "sentinel.master: required",
		"redis: {sentinel: {master: m}}":                                         "sentinel.addrs: required",
		"redis: {sentinel: {master: m, addrs: [nope]}}":                          "is not host:port",
	} {
		if _, err := Parse([]byte(in+"\n"), "."); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestAuditContentPolicy(t *testing.T) {
	for in, want := range map[string]ContentPolicy{
		"": ContentFull, "audit: {content: true}": ContentFull, "audit: {content: false}": ContentMetadata,
		"audit: {content: full}": ContentFull, "audit: {content: metadata}": ContentMetadata, "audit: {content: redacted}": ContentRedacted,
	} {
		c, err := Parse([]byte(in+"\n"), ".")
		if err != nil || c.Audit.Content != want {
			t.Errorf("%q: %q %v, want %q", in, c.Audit.Content, err, want)
		}
	}
	for in, want := range map[string]string{
		"audit: {content: everything}":               "not one of full, metadata, redacted",
		"audit: {content: redacted, redact: ['a(']}": "audit.redact[0]",
		"audit: {content: full, redact: ['secret']}": "needs audit.content: redacted",
		"audit: {content_retention: 5m}":             "at least 1h",
		"audit: {retention: -1h}":                    "must not be negative",
		"audit: {commit_delay: 200ms}":               "audit.commit_delay: between 0",
		"audit: {commit_delay: -1ms}":                "audit.commit_delay: between 0",
		"audit: {sync_every: 2s}":                    "audit.sync_every: between 0",
	} {
		if _, err := Parse([]byte(in+"\n"), "."); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if c, err := Parse([]byte("audit: {commit_delay: 10ms, sync_every: 100ms}\n"), "."); err != nil ||
		c.Audit.CommitDelay.D() != 10*time.Millisecond || c.Audit.SyncEvery.D() != 100*time.Millisecond {
		t.Errorf("commit_delay, sync_every: %v %v %v", c.Audit.CommitDelay, c.Audit.SyncEvery, err)
	}
	c, _ := Parse([]byte("audit: {content: redacted}\n"), ".")
	res, err := c.AuditRedact()
	if err != nil || len(res) != len(DefaultRedact) {
		t.Fatalf("default patterns: %d %v", len(res), err)
	}
	text := "mail ada@example.edu, key mr2_abcdefghijklmnop1234, card 4111 1111 1111 1111, from 10.1.2.3; the cat sat"
	for _, re := range res {
		text = re.ReplaceAllString(text, "[REDACTED]")
	}
	if strings.Contains(text, "ada@") || strings.Contains(text, "mr2_abc") || strings.Contains(text, "4111") || strings.Contains(text, "10.1.2.3") || !strings.Contains(text, "the cat sat") {
		t.Errorf("redacted: %s", text)
	}
}
