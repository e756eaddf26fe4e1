package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoad_DeployExample(t *testing.T) {
	c, err := Load("../../deploy/mindrouter.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Backends) != 2 || c.Backends[1].Engine != "ollama" || c.Backends[1].MaxConcurrent != 4 {
		t.Fatalf("backends = %+v", c.Backends)
	}
	if c.Timeouts.QueueWait.D() != 150*time.Second {
		t.Fatalf("queue_wait = %v", c.Timeouts.QueueWait.D())
	}
	if !strings.HasSuffix(c.PluginsPath(), "plugins.yaml") {
		t.Fatalf("plugins path = %s", c.PluginsPath())
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		name, yaml, wantErr string
	}{
		{"empty file is defaults", "", ""},
		{"issue shape", `listen: 127.0.0.1:8080
plugins: plugins.yaml
backends:
  - {name: gpu1-vllm, engine: vllm, url: "http://127.0.0.1:9001", max_concurrent: 16}
  - {name: gpu2-ollama, engine: ollama, url: "http://127.0.0.1:9002", max_concurrent: 4}
`, ""},
		{"unknown top key", "listn: 1.2.3.4:80\n", "listn"},
		{"unknown backend key", "backends: [{name: a, engine: vllm, url: 'http://x', maxconc: 3}]\n", "maxconc"},
		{"bad engine", "backends: [{name: a, engine: 'T G I', url: 'http://x'}]\n", "backends[0].engine"},
		{"engine is checked against adapters later", "backends: [{name: a, engine: tgi, url: 'http://x'}]\n", ""},
		{"bad backend message mode", "errors: {backend_messages: verbatim}\n", "errors.backend_messages"},
		{"small header limit", "limits: {max_header_bytes: 10}\n", "limits.max_header_bytes"},
		{"buffered under body", "limits: {max_buffered_body_bytes: 2048}\n", "limits.max_buffered_body_bytes"},
		{"bad metrics listen", "metrics: {listen: nope}\n", "metrics.listen"},
		{"pprof without metrics listener", "metrics: {pprof: true, key: k}\n", "metrics.pprof: needs metrics.listen"},
		{"pprof without metrics key", "metrics: {pprof: true, listen: \"127.0.0.1:0\"}\n", "metrics.pprof: needs metrics.key"},
		{"bad url", "backends: [{name: a, engine: vllm, url: 'x'}]\n", "backends[0].url"},
		{"duplicate name", "backends: [{name: a, engine: vllm, url: 'http://x'}, {name: a, engine: vllm, url: 'http://y'}]\n", "duplicate"},
		{"negative concurrency", "backends: [{name: a, engine: vllm, url: 'http://x', max_concurrent: -1}]\n", "max_concurrent"},
		{"bad duration", "timeouts: {request: soon}\n", "invalid duration"},
		{"bad listen", "listen: nowhere\n", "listen"},
		{"bad level", "log: {level: loud}\n", "log.level"},
		{"small body", "limits: {max_body_bytes: 10}\n", "limits.max_body_bytes"},
		{"admin limits", "limits: {admin: {max_body_bytes: 65536, requests_per_minute: 60, max_concurrent: 2}}\n", ""},
		{"admin limits off", "limits: {admin: {requests_per_minute: 0, max_concurrent: 0}}\n", ""},
		{"small admin body", "limits: {admin: {max_body_bytes: 10}}\n", "limits.admin.max_body_bytes"},
		{"admin body over buffered", "limits: {max_buffered_body_bytes: 2097152, admin: {max_body_bytes: 4194304}}\n", "limits.admin.max_body_bytes"},
		{"negative admin rate", "limits: {admin: {requests_per_minute: -1}}\n", "limits.admin.requests_per_minute"},
		{"negative admin concurrency", "limits: {admin: {max_concurrent: -1}}\n", "limits.admin.max_concurrent"},
		{"unknown admin limit", "limits: {admin: {rpm: 5}}\n", "rpm"},
		{"stored state bounds", "responses: {max_stored_bytes: 0, max_stored_items: 5, groups: {students: {max_stored_bytes: 1048576}}}\n", ""},
		{"negative stored bytes", "responses: {max_stored_bytes: -1}\n", "responses.max_stored_bytes"},
		{"negative group stored items", "responses: {groups: {staff: {max_stored_items: -2}}}\n", "responses.groups.staff"},
		{"client write off", "timeouts: {client_write: 0s}\n", "timeouts.client_write"},
		{"images request budget under one image", "images: {max_bytes: 2097152, max_request_bytes: 1048576}\n", "images.max_request_bytes"},
		{"images gateway budget under a request's", "images: {max_request_bytes: 33554432, max_buffered_bytes: 16777216}\n", "images.max_buffered_bytes"},
		{"images budgets", "images: {max_request_bytes: 33554432, max_buffered_bytes: 1073741824}\n", ""},
		{"cors", "cors: {allowed_origins: ['https://chat.example.edu', 'http://localhost:3000'], allow_credentials: true}\n", ""},
		{"cors any origin", "cors: {allowed_origins: ['*'], max_age: 1h}\n", ""},
		{"cors credentials with any origin", "cors: {allowed_origins: ['*'], allow_credentials: true}\n", "cors.allow_credentials: not with"},
		{"cors origin with path", "cors: {allowed_origins: ['https://chat.example.edu/app']}\n", "cors.allowed_origins[0]"},
		{"cors origin without scheme", "cors: {allowed_origins: ['chat.example.edu']}\n", "cors.allowed_origins[0]"},
		{"cors lower-case method", "cors: {allowed_origins: ['*'], allowed_methods: [post]}\n", "cors.allowed_methods[0]"},
		{"cors bad header", "cors: {allowed_origins: ['*'], expose_headers: ['a b']}\n", "cors.expose_headers[0]"},
		{"cors long max age", "cors: {allowed_origins: ['*'], max_age: 48h}\n", "cors.max_age"},
		{"cors credentials while off", "cors: {allow_credentials: true}\n", "cors.allow_credentials: needs"},
		{"telemetry", "telemetry: {enabled: false, retention: 720h}\n", ""},
		{"telemetry retention under an hour", "telemetry: {retention: 10m}\n", "telemetry.retention: at least 1h"},
		{"unknown telemetry key", "telemetry: {interval: 5s}\n", "interval"},
		{"console off", "console: {enabled: false}\n", ""},
		{"console own listener and prefix", "console: {listen: '127.0.0.1:8081', prefix: /ui/}\n", ""},
		{"console prefix without slash", "console: {prefix: /console}\n", "console.prefix"},
		{"console prefix root", "console: {prefix: /}\n", "console.prefix"},
		{"console prefix over the API", "console: {prefix: /v1/console/}\n", "overlaps"},
		{"console listen on the API's address", "listen: 127.0.0.1:9000\nconsole: {listen: '127.0.0.1:9000'}\n", "console.listen"},
		{"console idle beyond max", "console: {session_idle: 48h, session_max: 24h}\n", "console.session_idle"},
		{"console zero max", "console: {session_max: 0s}\n", "console.session_max"},
		{"console oidc", "console: {oidc: {issuer: 'https://sso.uni.example/realms/uni', client_id: mindrouter, redirect_url: 'https://ai.uni.example/console/login/callback', groups_claim: groups, group_map: {cs: students}, email_domains: {uni.example: staff}, default_group: students}}\n", ""},
		{"console oidc without client id", "console: {oidc: {issuer: 'https://sso.uni.example', redirect_url: 'https://ai.uni.example/console/login/callback'}}\n", "console.oidc.client_id"},
		{"console oidc bad redirect", "console: {oidc: {issuer: 'https://sso.uni.example', client_id: x, redirect_url: 'https://ai.uni.example/callback'}}\n", "console.oidc.redirect_url"},
		{"console oidc group map without claim", "console: {oidc: {issuer: 'https://sso.uni.example', client_id: x, redirect_url: 'https://ai.uni.example/console/login/callback', group_map: {cs: students}}}\n", "groups_claim"},
		{"console oidc upper-case domain", "console: {oidc: {issuer: 'https://sso.uni.example', client_id: x, redirect_url: 'https://ai.uni.example/console/login/callback', email_domains: {Uni.Example: staff}}}\n", "console.oidc.email_domains"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), ".")
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

func TestParse_ReportsEveryProblem(t *testing.T) {
	_, err := Parse([]byte("listen: x\nlog: {level: loud}\n"), ".")
	if err == nil || !strings.Contains(err.Error(), "listen") || !strings.Contains(err.Error(), "log.level") {
		t.Fatalf("want both problems, got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("listen: 127.0.0.1:1\nbackends: [{name: a, engine: vllm, url: 'http://x'}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, ".")
		if err == nil && c.Validate() != nil {
			t.Fatal("Parse accepted an invalid config")
		}
	})
}

func TestParse_Accounts(t *testing.T) {
	c, err := Parse([]byte("accounts: {key_cache_ttl: 2m}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	if c.Accounts.StaleIfError.D() != 5*time.Minute || c.Accounts.StreamRecheck.D() != time.Second {
		t.Errorf("defaults: %+v", c.Accounts)
	}
	if _, err := Parse([]byte("accounts: {stream_recheck: 0s, stale_if_error: 30s}\n"), "."); err != nil {
		t.Errorf("stream_recheck 0 (never) and a short stale_if_error: %v", err)
	}
	for _, bad := range []string{"accounts: {stream_recheck: 10ms}\n", "accounts: {stream_recheck: -1s}\n", "accounts: {stale_if_error: -1s}\n"} {
		if _, err := Parse([]byte(bad), "."); err == nil || !strings.Contains(err.Error(), "accounts.") {
			t.Errorf("%q: %v, want an accounts error", bad, err)
		}
	}
}

// max_num_ctx bounds the num_ctx sent to an Ollama backend; on another
// engine, or negative, it is a mistake the config names.
func TestParse_MaxNumCtx(t *testing.T) {
	c, err := Parse([]byte("backends: [{name: o, engine: ollama, url: 'http://x', max_num_ctx: 65536}]\n"), ".")
	if err != nil || c.Backends[0].MaxNumCtx != 65536 {
		t.Fatalf("%v %+v", err, c)
	}
	for _, y := range []string{
		"backends: [{name: v, engine: vllm, url: 'http://x', max_num_ctx: 8192}]\n",
		"backends: [{name: o, engine: ollama, url: 'http://x', max_num_ctx: -1}]\n",
	} {
		if _, err := Parse([]byte(y), "."); err == nil || !strings.Contains(err.Error(), "backends[0].max_num_ctx") {
			t.Errorf("%s: %v, want a backends[0].max_num_ctx error", y, err)
		}
	}
}
