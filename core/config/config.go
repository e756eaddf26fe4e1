// Package config is the gateway's typed configuration: a YAML file decoded
// strictly (unknown keys are errors), defaults applied, then validated as a
// whole so one load reports every problem. A loaded Config is immutable.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the whole gateway configuration.
type Config struct {
	// Listen is the address the API server binds.
	Listen string `yaml:"listen"`
	// TLS, when its files are set, serves the API listener over HTTPS.
	TLS TLS `yaml:"tls"`
	// Status shapes the anonymous GET /status.
	Status Status `yaml:"status"`
	// DataDir holds every file the gateway writes (the SQLite store, the
	// embedded audit, the audit spool, the generated admin key): relative
	// to the working directory, not to the config file (default "data").
	DataDir string `yaml:"data_dir"`
	// Plugins is the path of plugins.yaml, relative to the config file.
	Plugins string `yaml:"plugins"`
	// Backends are the inference servers behind the gateway.
	Backends []Backend `yaml:"backends"`
	Nodes    []Node    `yaml:"nodes"` // GPU hosts whose sidecars report the backends' GPUs
	Limits   Limits    `yaml:"limits"`
	Timeouts Timeouts  `yaml:"timeouts"`
	// Discovery controls how often backends are probed for models and health.
	Discovery Discovery `yaml:"discovery"`
	Log       Log       `yaml:"log"`
	Errors    Errors    `yaml:"errors"`
	Metrics   Metrics   `yaml:"metrics"`
	Images    Images    `yaml:"images"`
	Store     Store     `yaml:"store"`
	Redis     Redis     `yaml:"redis"`
	Accounts  Accounts  `yaml:"accounts"`
	Quota     Quota     `yaml:"quota"`
	Audit     Audit     `yaml:"audit"`
	// Telemetry keeps the history of GPU and backend readings.
	Telemetry Telemetry `yaml:"telemetry"`
	Scheduler Scheduler `yaml:"scheduler"`
	Retries   Retries   `yaml:"retries"`
	Breaker   Breaker   `yaml:"breaker"`
	Responses Responses `yaml:"responses"`
	// CORS answers browsers on other origins (cors.go); off by default.
	CORS CORS `yaml:"cors"`
	// Models are per-model settings (models.go), keyed by model name or a
	// name prefix ending in "*": thinking_default.
	Models map[string]ModelSettings `yaml:"models"`
	// Console is the web console (console.go): on by default at /console/.
	Console Console `yaml:"console"`

	// dir is the directory relative paths resolve against.
	dir string
}

// Backend is one inference endpoint.
type Backend struct {
	Name string `yaml:"name"`
	// Engine names the adapter plugin format: "vllm" or "ollama".
	Engine string `yaml:"engine"`
	URL    string `yaml:"url"`
	// MaxConcurrent caps requests in flight to this backend.
	MaxConcurrent int `yaml:"max_concurrent"`
	// Models, when set, restricts the backend to these models (discovery
	// still fills in context lengths); empty means whatever it reports.
	Models []string `yaml:"models"`
	// IdleConnTimeout closes pooled connections idle this long; keep it
	// under the backend's own keep-alive timeout (uvicorn, which vLLM
	// uses, closes after 5 s) so a request never lands on a closed one.
	IdleConnTimeout Duration `yaml:"idle_conn_timeout"`
	// Node names the GPU host the backend runs on (an entry of nodes, or
	// a node registered through the admin API), GPUs its GPU indices
	// there (empty: all of the node's). Empty: an admin's placement in the
	// store is kept.
	Node string `yaml:"node"`
	GPUs []int  `yaml:"gpus"`
	// MaxNumCtx (Ollama backends only) bounds the num_ctx the gateway
	// sends: each request carries its model's trained context window
	// (/api/show), at most this, and Ollama allocates a KV cache that
	// large. 0: backend.DefaultMaxNumCtx (32768).
	MaxNumCtx int `yaml:"max_num_ctx"`
}

// Limits bound what clients may send.
type Limits struct {
	// MaxBodyBytes is the largest request body accepted (413 beyond).
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// MaxStreamEventBytes bounds one backend stream event.
	MaxStreamEventBytes int `yaml:"max_stream_event_bytes"`
	// MaxHeaderBytes bounds the request line plus headers (414/431 beyond).
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// MaxConnections bounds concurrent client connections.
	MaxConnections int `yaml:"max_connections"`
	// MaxBufferedBodyBytes bounds the request bodies held in memory by all
	// requests together; a request that would exceed it waits briefly,
	// then gets 503.
	MaxBufferedBodyBytes int64 `yaml:"max_buffered_body_bytes"`
	// MaxJSONDepth and MaxJSONValues bound a JSON request body's nesting
	// and its number of values (400 beyond), checked natively before any
	// plugin sees the body.
	MaxJSONDepth  int `yaml:"max_json_depth"`
	MaxJSONValues int `yaml:"max_json_values"`
	// TokenizeMaxChars bounds the text a tokenize route counts (413
	// beyond): the generic tokenizer counts about 2 MB of text a second.
	TokenizeMaxChars int `yaml:"tokenize_max_chars"`
	// Admin bounds the account and admin API (/api/admin/…, /api/me…).
	Admin AdminLimits `yaml:"admin"`
}

// AdminLimits bound the account and admin API, whose requests are small
// JSON objects (the largest, a key import, is under 1 KB), per user and
// on each replica: a user's keys share one rate and one count in flight.
type AdminLimits struct {
	// MaxBodyBytes is the largest body an admin or self-service request
	// may send (413 beyond); a chunked upload holds what it has sent of
	// limits.max_buffered_body_bytes while it arrives, at most this much.
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// RequestsPerMinute is each user's sustained rate (a burst of as many
	// is allowed); beyond it, 429 with Retry-After. 0: unlimited.
	RequestsPerMinute int `yaml:"requests_per_minute"`
	// MaxConcurrent bounds each user's requests in flight (429 beyond).
	// 0: unlimited.
	MaxConcurrent int `yaml:"max_concurrent"`
}

// Timeouts bound each phase of a request.
type Timeouts struct {
	// Request bounds a whole non-streamed request to a backend.
	Request Duration `yaml:"request"`
	// StreamIdle bounds the gap between two reads of a backend stream
	// (to within a sixteenth of it, at most a second: the read deadline
	// is moved once it has aged by that much, not at every read).
	StreamIdle Duration `yaml:"stream_idle"`
	// QueueWait bounds the wait for a free backend slot (503 beyond).
	QueueWait Duration `yaml:"queue_wait"`
	// Connect bounds dialing a backend.
	Connect Duration `yaml:"connect"`
	// HeaderRead bounds receiving a request's headers (408 beyond).
	HeaderRead Duration `yaml:"header_read"`
	// BodyRead bounds receiving a request's body (408 beyond).
	BodyRead Duration `yaml:"body_read"`
	// ClientWrite bounds one write to a client: a client that reads
	// nothing of its answer for this long loses its connection, which
	// frees its backend slot, its quota hold and the answer's memory
	// (to within a sixteenth of it, at most a second, as StreamIdle).
	ClientWrite Duration `yaml:"client_write"`
}

// Discovery controls backend probing.
type Discovery struct {
	Interval Duration `yaml:"interval"`
	Timeout  Duration `yaml:"timeout"`
}

// Log controls logging.
type Log struct {
	Level string `yaml:"level"` // debug, info, warn, error
}

// Errors controls what clients see of failures.
type Errors struct {
	// BackendMessages is "passthrough" (a backend's own structured error
	// message reaches the client, bounded in length) or "generic" (clients
	// get a generic message; the backend's text stays in the log).
	BackendMessages string `yaml:"backend_messages"`
}

// Status shapes GET /status, which answers without a key (load
// balancers' and the reference's probes use it).
type Status struct {
	// Models lists the served model names there; off (the default), it
	// gives their count only, so an anonymous caller learns no names
	// (/v1/models lists them to a key holder).
	Models bool `yaml:"models"`
}

// Metrics controls the Prometheus endpoint.
type Metrics struct {
	// Listen, when set, serves /metrics on this address only (not on the
	// API listener).
	Listen string `yaml:"listen"`
	// Key, when set, is required as "Authorization: Bearer <key>" on
	// /metrics (and on /debug/pprof/).
	Key string `yaml:"key"`
	// Pprof serves Go's profiles (/debug/pprof/) on the metrics listener,
	// behind Key. Off by default; only with Listen and Key, never on the
	// API listener. What it costs: nothing until a profile is taken.
	Pprof bool `yaml:"pprof"`
	// TLS, when its files are set, serves the metrics listener over HTTPS;
	// ClientCAFile there requires client certificates signed by that CA.
	TLS TLS `yaml:"tls"`
}

// TLS is a listener's certificate. The files are read again when they
// change (a renewed certificate is served to new connections without a
// restart; open connections keep theirs). Relative paths resolve against
// the config file's directory, like the other files the gateway reads.
type TLS struct {
	CertFile string `yaml:"cert_file"` // PEM certificate chain, leaf first
	KeyFile  string `yaml:"key_file"`  // PEM private key
	// ClientCAFile, when set, requires and verifies client certificates
	// against these PEM CAs (mutual TLS; meant for the metrics listener).
	ClientCAFile string `yaml:"client_ca_file"`
}

// On reports whether the listener serves TLS.
func (t TLS) On() bool { return t.CertFile != "" || t.KeyFile != "" }

// Images controls how the gateway fetches images clients give by URL,
// for every engine (backends get them inline: Ollama takes no URLs, and
// a vLLM must not fetch client-chosen URLs from inside the cluster):
// through an SSRF guard (core/fetchguard) that refuses private, loopback,
// link-local and metadata addresses after DNS resolution and on every
// redirect.
type Images struct {
	// Fetch enables fetching; off, such a request is the client's 400.
	Fetch bool `yaml:"fetch"`
	// MaxBytes bounds one image; Timeout one fetch, redirects included.
	MaxBytes int64    `yaml:"max_bytes"`
	Timeout  Duration `yaml:"timeout"`
	// MaxPerRequest bounds the URLs one request may make the gateway fetch.
	MaxPerRequest int `yaml:"max_per_request"`
	// MaxRequestBytes bounds one request's fetched images together (413
	// beyond, the rest not fetched), and so does what the adapter
	// plugin's payload limit holds of them (base64: 4/3 of their bytes).
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// MaxBufferedBytes bounds the fetched image bytes all requests hold
	// at once (503 with Retry-After beyond).
	MaxBufferedBytes int64 `yaml:"max_buffered_bytes"`
	// Allow lists address prefixes the guard lets through although they
	// are private (an internal image store): CIDRs such as 10.1.2.0/24.
	Allow []string `yaml:"allow"`
}

// Store is where users, groups, keys, quota counters, backends and nodes
// are kept: MySQL/MariaDB for a fleet, an embedded SQLite file for one
// gateway (the default).
type Store struct {
	Driver string `yaml:"driver"` // sqlite (default) or mysql
	// DSN is the SQLite file (relative to data_dir; ":memory:" for a
	// throw-away store) or a go-sql-driver/mysql DSN
	// ("user:pass@tcp(host:3306)/mindrouter").
	DSN string `yaml:"dsn"`
	// Migrate applies pending schema migrations at start (default true);
	// `mindrouter migrate` applies them otherwise.
	Migrate *bool `yaml:"migrate"`
}

// Redis holds the counters replicas share (quotas, revocations). Without
// an address the gateway keeps them in memory: right for one replica.
type Redis struct {
	Addr string `yaml:"addr"` // host:port; "" for none (or Sentinel)
	// Sentinel, instead of Addr, finds the primary through Redis Sentinel
	// and follows its failovers.
	Sentinel RedisSentinel `yaml:"sentinel"`
	Username string        `yaml:"username"`
	Password string        `yaml:"password"`
	DB       int           `yaml:"db"`
	Timeout  Duration      `yaml:"timeout"` // per command (default 200ms)
}

// RedisSentinel names a primary monitored by Redis Sentinel. Redis
// Cluster is not supported: the quota and fleet scripts update several
// keys of a user or backend in one call (see docs/operations.md).
type RedisSentinel struct {
	Master   string   `yaml:"master"` // the monitored primary's name ("mymaster")
	Addrs    []string `yaml:"addrs"`  // the sentinels, host:port
	Username string   `yaml:"username"`
	Password string   `yaml:"password"` // the sentinels' own (requirepass in sentinel.conf)
}

// RedisOn reports whether a Redis is configured (one server or Sentinel).
func (c *Config) RedisOn() bool { return c.Redis.Addr != "" || c.Redis.Sentinel.Master != "" }

// Accounts configures key verification.
type Accounts struct {
	// KeyCacheTTL is how long a verified key is trusted while revocations
	// arrive through Redis (default 60s); without Redis, 1s.
	KeyCacheTTL Duration `yaml:"key_cache_ttl"`
	// StaleIfError is how long a key verified before the store became
	// unreachable keeps working while revocations still arrive through
	// Redis (default 5m; a value under key_cache_ttl counts as
	// key_cache_ttl).
	StaleIfError Duration `yaml:"stale_if_error"`
	// StreamRecheck is how often a stream in flight checks again that its
	// key is still valid (not revoked or expired, its user active), and
	// ends in the client's dialect when not (default 1s; 0: never).
	StreamRecheck Duration `yaml:"stream_recheck"`
	// SeedGroups creates the usual groups on first start (default true).
	SeedGroups *bool `yaml:"seed_groups"`
}

// Quota configures budgets and rate limits.
type Quota struct {
	// RedisDown is what happens while Redis is unreachable: "local"
	// (default: each replica enforces every limit on its own), "open"
	// (admit without limits) or "closed" (answer 503).
	RedisDown string `yaml:"redis_down"`
	// Lease is how long quota taken from Redis in a batch may stay with
	// a replica before unused parts go back (default 1s).
	Lease Duration `yaml:"lease"`
	// PersistInterval is how often counters are written to the store
	// (default 10s; also at shutdown).
	PersistInterval Duration `yaml:"persist_interval"`
	// DefaultMaxTokens is the output reserved for a request that names no
	// max_tokens (default 4096); a smaller remaining budget caps it.
	DefaultMaxTokens int `yaml:"default_max_tokens"`
}

// Scheduler configures who goes next (fair sharing between users) and
// where (backend scoring); core/sched and core/score document both.
type Scheduler struct {
	// Policy: "fair" (default: weighted deficit round robin over users,
	// scored placement) or "least_loaded" (first come, first served).
	Policy string `yaml:"policy"`
	// Quantum is the credit, in estimated tokens, a waiting user earns per
	// round and unit of weight (0: the scheduler's default).
	Quantum float64 `yaml:"quantum"`
	// BurstCredit is what an idle user may spend at once, per unit of
	// weight (0: default; negative: none); BurstRefill how long idleness
	// takes to refill it.
	BurstCredit float64  `yaml:"burst_credit"`
	BurstRefill Duration `yaml:"burst_refill"`
	// StarvationAfter: a user left unserved this long goes first.
	StarvationAfter Duration `yaml:"starvation_after"`
	// Weights of the soft scores (loaded, gpu_util, queue_depth, latency,
	// throughput, priority, kv_cache, waiting); unnamed ones keep their
	// defaults.
	Weights map[string]float64 `yaml:"weights"`
	// Fleet shares backend slots and users' served shares between
	// replicas through Redis: "auto" (default: on when redis.addr is set)
	// or "off" (each replica schedules alone).
	Fleet string `yaml:"fleet"`
	// SlotLease is how long a backend slot held in Redis outlives a
	// replica that stopped renewing it (a dead replica's slots come back
	// after at most this; default 10s).
	SlotLease Duration `yaml:"slot_lease"`
}

// Retries bound the attempts of a request whose backend failed before
// any byte reached the client.
type Retries struct {
	// MaxAttempts is the number of backends tried, the first included
	// (default 3; 1 never retries).
	MaxAttempts int `yaml:"max_attempts"`
	// AttemptTimeout bounds one attempt's wait for a stream's headers
	// (default 60s); timeouts.request bounds the whole request.
	AttemptTimeout Duration `yaml:"attempt_timeout"`
}

// Breaker is each backend's circuit breaker: Failures failed attempts
// within Window open it for Cooldown, then one probe request decides.
type Breaker struct {
	Failures int      `yaml:"failures"` // default 5
	Window   Duration `yaml:"window"`   // default 10s
	Cooldown Duration `yaml:"cooldown"` // default 60s
}

// Responses configures the state the OpenAI Responses and Conversations
// APIs keep for their users (in the store).
type Responses struct {
	// Enabled serves /v1/responses and /v1/conversations (default true).
	Enabled *bool `yaml:"enabled"`
	// Retention: stored responses and conversations untouched this long
	// are deleted (default 720h, 30 days).
	Retention Duration `yaml:"retention"`
	// MaxItemBytes bounds one stored item (a message with its images);
	// a larger input item is refused with 400 (default 4 MiB).
	MaxItemBytes int `yaml:"max_item_bytes"`
	// MaxStoredBytes and MaxStoredItems bound what each user keeps
	// stored (responses with store: true, conversations and their items,
	// the images stored with them): a write that would go over is
	// refused, 429 (413 when it alone is larger than the bound), before
	// anything is generated. 0: unlimited. Defaults 128 MiB and 10000.
	MaxStoredBytes int64 `yaml:"max_stored_bytes"`
	MaxStoredItems int64 `yaml:"max_stored_items"`
	// Groups override the bounds for the users of a group, by group name;
	// a bound a group does not name is the default above.
	Groups map[string]StoredLimits `yaml:"groups"`
}

// StoredLimits are a group's bounds on its users' stored Responses state
// (responses.groups); nil keeps responses.max_stored_bytes or _items, 0
// is unlimited.
type StoredLimits struct {
	MaxStoredBytes *int64 `yaml:"max_stored_bytes"`
	MaxStoredItems *int64 `yaml:"max_stored_items"`
}

// ResponsesOn reports whether the Responses and Conversations state is served.
func (c *Config) ResponsesOn() bool { return c.Responses.Enabled == nil || *c.Responses.Enabled }

// FleetOn reports whether the scheduler shares its state through Redis.
func (c *Config) FleetOn() bool { return c.Scheduler.Fleet != "off" && c.RedisOn() }

// Audit configures the record of every request.
type Audit struct {
	// Enabled records requests (default true).
	Enabled *bool `yaml:"enabled"`
	// Spool is the directory of the write-ahead spool (relative to
	// data_dir; default audit-spool).
	Spool string `yaml:"spool"`
	// ClickHouse receives the records; without addresses they go to the
	// embedded sink, an SQLite file (Embedded, relative to data_dir;
	// default audit.db).
	ClickHouse AuditClickHouse `yaml:"clickhouse"`
	Embedded   string          `yaml:"embedded"`
	// Content is what the record keeps of request and response bodies
	// (each cut at MaxContentBytes, default 65536): full (the default;
	// true), metadata (none; false), or redacted (full, with every match
	// of Redact replaced by [REDACTED]; content.go).
	Content ContentPolicy `yaml:"content"`
	// Redact are the regular expressions (RE2) content: redacted removes;
	// empty: DefaultRedact.
	Redact          []string `yaml:"redact"`
	MaxContentBytes int      `yaml:"max_content_bytes"`
	// Retention deletes a request's whole row this long after it (0, the
	// default: kept); ContentRetention empties its bodies and the images
	// they name sooner (default 720h, 30 days; 0: kept as long as the
	// row). The embedded sink is pruned hourly; ClickHouse gets TTLs.
	Retention        Duration `yaml:"retention"`
	ContentRetention Duration `yaml:"content_retention"`
	// TrustedProxies are the CIDR prefixes of proxies whose
	// X-Forwarded-For names the client; otherwise the peer address is.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// CommitDelay is how long the spool's group commit waits for more
	// events to share its write (default 2ms, at most 100ms): what a kill
	// of the gateway can lose is the events of the last CommitDelay.
	// SyncEvery is the longest between two flushes (fdatasync) of what it
	// wrote (default 10ms, at most 1s): what a power loss can lose.
	// Longer waits cost less CPU when events come sparsely (long
	// streams; docs/audit.md, "What is never lost").
	CommitDelay Duration `yaml:"commit_delay"`
	SyncEvery   Duration `yaml:"sync_every"`
}

// Telemetry is the history of the sidecars' GPU readings and the
// backends' health, in flight and latency, sampled once per discovery
// round (core/telemetry): in ClickHouse when audit.clickhouse is set,
// else in the accounts store.
type Telemetry struct {
	// Enabled keeps the history (default true).
	Enabled *bool `yaml:"enabled"`
	// Retention is how long samples are kept (default 168h, 7 days; at
	// least 1h).
	Retention Duration `yaml:"retention"`
}

// TelemetryOn reports telemetry.enabled (default true).
func (c *Config) TelemetryOn() bool { return c.Telemetry.Enabled == nil || *c.Telemetry.Enabled }

// AuditClickHouse is a ClickHouse server (native protocol).
type AuditClickHouse struct {
	Addr     []string `yaml:"addr"` // host:9000
	Database string   `yaml:"database"`
	Username string   `yaml:"username"`
	Password string   `yaml:"password"`
}

// AuditOn reports audit.enabled (default true).
func (c *Config) AuditOn() bool { return c.Audit.Enabled == nil || *c.Audit.Enabled }

// AuditContent reports audit.content (default true).
func (c *Config) AuditContent() bool { return c.Audit.Content != ContentMetadata }

// Path resolves a path of the config against the config file's directory
// (files the gateway reads: plugins.yaml, key files, certificates).
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// DataPath resolves a file the gateway writes against data_dir (itself
// relative to the working directory).
func (c *Config) DataPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.DataDir, p)
}

// ResolveTLS is t with its files resolved against the config file's
// directory.
func (c *Config) ResolveTLS(t TLS) TLS {
	return TLS{CertFile: c.Path(t.CertFile), KeyFile: c.Path(t.KeyFile), ClientCAFile: c.Path(t.ClientCAFile)}
}

// LegacyStorePath is where a relative SQLite store.dsn lived before
// data_dir (against the config file's directory), when that differs from
// where it is now; "" otherwise. A start that finds a store there and none
// at the new place refuses to create a second, empty store.
func (c *Config) LegacyStorePath() string {
	d := c.Store.DSN
	if c.Store.Driver != "sqlite" || d == ":memory:" || filepath.IsAbs(d) || strings.HasPrefix(d, "file:") {
		return ""
	}
	old := filepath.Join(c.dir, d)
	if filepath.Clean(old) == filepath.Clean(c.StoreDSN()) {
		return ""
	}
	return old
}

// Duration is a time.Duration written as "30s", "5m".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: duration must be a string like \"30s\"", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Default returns the configuration used when no file is given: listen on
// loopback, plugins.yaml in the working directory, no backends.
func Default() *Config {
	return &Config{
		Listen:  "127.0.0.1:8080",
		Plugins: "plugins.yaml",
		Limits: Limits{
			MaxBodyBytes:         16 << 20,
			MaxStreamEventBytes:  1 << 20,
			MaxHeaderBytes:       8 << 10,
			MaxConnections:       10000,
			MaxBufferedBodyBytes: 512 << 20,
			MaxJSONDepth:         128,
			MaxJSONValues:        1 << 20,
			TokenizeMaxChars:     1 << 20,
			Admin:                AdminLimits{MaxBodyBytes: 1 << 20, RequestsPerMinute: 600, MaxConcurrent: 8},
		},
		Timeouts: Timeouts{
			Request:    Duration(10 * time.Minute),
			StreamIdle: Duration(5 * time.Minute),
			QueueWait:  Duration(150 * time.Second),
			Connect:    Duration(5 * time.Second),
			HeaderRead: Duration(10 * time.Second),
			BodyRead:   Duration(60 * time.Second),
			// Generous for a slow link, short against a client that
			// never reads (it holds a backend slot while it does not).
			ClientWrite: Duration(30 * time.Second),
		},
		Errors:    Errors{BackendMessages: "passthrough"},
		Discovery: Discovery{Interval: Duration(10 * time.Second), Timeout: Duration(5 * time.Second)},
		Log:       Log{Level: "info"},
		// 16 MiB of images is 21.3 MiB of base64, within the plugins'
		// default 32 MiB payload (8 images of max_bytes are not).
		Images: Images{Fetch: true, MaxBytes: 10 << 20, Timeout: Duration(10 * time.Second), MaxPerRequest: 8,
			MaxRequestBytes: 16 << 20, MaxBufferedBytes: 256 << 20},
		DataDir: "data",
		Store:   Store{Driver: "sqlite", DSN: "mindrouter.db"},
		Redis:   Redis{Timeout: Duration(200 * time.Millisecond)},
		Accounts: Accounts{KeyCacheTTL: Duration(60 * time.Second), StaleIfError: Duration(5 * time.Minute),
			StreamRecheck: Duration(time.Second)},
		Scheduler: Scheduler{Policy: "fair", Fleet: "auto", SlotLease: Duration(10 * time.Second)},
		Retries:   Retries{MaxAttempts: 3, AttemptTimeout: Duration(60 * time.Second)},
		Breaker:   Breaker{Failures: 5, Window: Duration(10 * time.Second), Cooldown: Duration(60 * time.Second)},
		Responses: Responses{Retention: Duration(720 * time.Hour), MaxItemBytes: 4 << 20,
			MaxStoredBytes: 128 << 20, MaxStoredItems: 10000},
		Audit: Audit{Spool: "audit-spool", Embedded: "audit.db", MaxContentBytes: 64 << 10, ContentRetention: Duration(720 * time.Hour),
			ClickHouse: AuditClickHouse{Database: "mindrouter"}},
		Telemetry: Telemetry{Retention: Duration(7 * 24 * time.Hour)},
		Quota: Quota{RedisDown: "local", Lease: Duration(time.Second), PersistInterval: Duration(10 * time.Second),
			DefaultMaxTokens: 4096},
		CORS:    defaultCORS(),
		Console: defaultConsole(),
		dir:     ".",
	}
}

// Load reads, decodes strictly and validates the file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	c, err := Parse(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML over Default and validates it; dir anchors relative
// paths. ${NAME} references in values are read from the environment first
// (env.go).
func Parse(b []byte, dir string) (*Config, error) {
	c := Default()
	b, err := expandEnv(b)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	c.dir = dir
	for i := range c.Backends {
		if c.Backends[i].MaxConcurrent == 0 {
			c.Backends[i].MaxConcurrent = 16
		}
		if c.Backends[i].IdleConnTimeout == 0 {
			c.Backends[i].IdleConnTimeout = Duration(4 * time.Second)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := c.loadNodeKeys(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate reports every problem, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		add("listen: %q is not host:port", c.Listen)
	}
	if c.Plugins == "" {
		add("plugins: must name plugins.yaml")
	}
	if c.DataDir == "" {
		add("data_dir: required (the directory of the files the gateway writes)")
	}
	c.validateTLS("tls", c.TLS, add)
	names := map[string]bool{}
	for i, b := range c.Backends {
		key := fmt.Sprintf("backends[%d]", i)
		if b.Name == "" {
			add("%s.name: required", key)
		} else if names[b.Name] {
			add("%s.name: duplicate %q", key, b.Name)
		}
		names[b.Name] = true
		// Which engines exist depends on the loaded adapter plugins; the
		// gateway checks that once plugins are loaded (and on reload).
		if !validEngine(b.Engine) {
			add("%s.engine: %q must be an adapter format name (lower-case letters, digits, - or _)", key, b.Engine)
		}
		if u, err := url.Parse(b.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("%s.url: %q is not an http(s) URL", key, b.URL)
		}
		if b.MaxConcurrent < 1 {
			add("%s.max_concurrent: must be >= 1", key)
		}
		if b.IdleConnTimeout < 0 {
			add("%s.idle_conn_timeout: must be positive", key)
		}
		switch {
		case b.MaxNumCtx < 0:
			add("%s.max_num_ctx: must be positive", key)
		case b.MaxNumCtx > 0 && b.Engine != "ollama":
			add("%s.max_num_ctx: is Ollama's num_ctx bound; engine %q takes its context window from the backend", key, b.Engine)
		}
	}
	c.validateNodes(add)
	c.validateCORS(add)
	c.validateModels(add)
	c.validateConsole(add)
	if c.Limits.MaxBodyBytes < 1024 {
		add("limits.max_body_bytes: must be >= 1024")
	}
	if c.Limits.MaxStreamEventBytes < 1024 {
		add("limits.max_stream_event_bytes: must be >= 1024")
	}
	if c.Limits.MaxHeaderBytes < 1024 || c.Limits.MaxHeaderBytes > 1<<20 {
		add("limits.max_header_bytes: must be between 1024 and 1048576")
	}
	if c.Limits.MaxConnections < 1 {
		add("limits.max_connections: must be >= 1")
	}
	if c.Limits.MaxBufferedBodyBytes < int64(c.Limits.MaxBodyBytes) {
		add("limits.max_buffered_body_bytes: must be >= limits.max_body_bytes")
	}
	if c.Limits.MaxJSONDepth < 8 || c.Limits.MaxJSONDepth > 10000 {
		add("limits.max_json_depth: must be between 8 and 10000")
	}
	if c.Limits.TokenizeMaxChars < 1024 {
		add("limits.tokenize_max_chars: must be >= 1024")
	}
	if c.Limits.MaxJSONValues < 1000 {
		add("limits.max_json_values: must be >= 1000")
	}
	if a := c.Limits.Admin; a.MaxBodyBytes < 1024 || int64(a.MaxBodyBytes) > c.Limits.MaxBufferedBodyBytes {
		add("limits.admin.max_body_bytes: must be >= 1024 and <= limits.max_buffered_body_bytes")
	}
	if c.Limits.Admin.RequestsPerMinute < 0 {
		add("limits.admin.requests_per_minute: must be >= 0 (0: unlimited)")
	}
	if c.Limits.Admin.MaxConcurrent < 0 {
		add("limits.admin.max_concurrent: must be >= 0 (0: unlimited)")
	}
	switch c.Errors.BackendMessages {
	case "passthrough", "generic":
	default:
		add("errors.backend_messages: %q is not one of passthrough, generic", c.Errors.BackendMessages)
	}
	if c.Metrics.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Metrics.Listen); err != nil {
			add("metrics.listen: %q is not host:port", c.Metrics.Listen)
		}
	} else if c.Metrics.Pprof {
		add("metrics.pprof: needs metrics.listen (profiles are never served on the API listener)")
	}
	if c.Metrics.TLS.On() && c.Metrics.Listen == "" {
		add("metrics.tls: needs metrics.listen (the API listener's certificate is tls)")
	}
	c.validateTLS("metrics.tls", c.Metrics.TLS, add)
	if c.Metrics.Pprof && c.Metrics.Key == "" {
		add("metrics.pprof: needs metrics.key (profiles show the process's internals)")
	}
	for _, d := range []struct {
		k string
		v Duration
	}{{"timeouts.request", c.Timeouts.Request}, {"timeouts.stream_idle", c.Timeouts.StreamIdle},
		{"timeouts.queue_wait", c.Timeouts.QueueWait}, {"timeouts.connect", c.Timeouts.Connect},
		{"timeouts.header_read", c.Timeouts.HeaderRead}, {"timeouts.body_read", c.Timeouts.BodyRead},
		{"timeouts.client_write", c.Timeouts.ClientWrite},
		{"discovery.interval", c.Discovery.Interval}, {"discovery.timeout", c.Discovery.Timeout}} {
		if d.v <= 0 {
			add("%s: must be positive", d.k)
		}
	}
	if c.Images.MaxBytes < 1024 || c.Images.MaxBytes > 64<<20 {
		add("images.max_bytes: must be between 1024 and 67108864")
	}
	if c.Images.Timeout <= 0 {
		add("images.timeout: must be positive")
	}
	if c.Images.MaxPerRequest < 1 || c.Images.MaxPerRequest > 64 {
		add("images.max_per_request: must be between 1 and 64")
	}
	if c.Images.MaxRequestBytes < c.Images.MaxBytes || c.Images.MaxRequestBytes > 768<<20 {
		add("images.max_request_bytes: must be at least images.max_bytes and at most 805306368 (its base64 within the largest plugin payload)")
	}
	if c.Images.MaxBufferedBytes < c.Images.MaxRequestBytes {
		add("images.max_buffered_bytes: must be at least images.max_request_bytes")
	}
	for i, a := range c.Images.Allow {
		if p, err := netip.ParsePrefix(a); err != nil || p.Bits() == 0 {
			add("images.allow[%d]: %q is not a CIDR prefix (a /0 would switch the guard off)", i, a)
		}
	}
	switch c.Store.Driver {
	case "sqlite", "mysql":
	default:
		add("store.driver: %q is not one of sqlite, mysql", c.Store.Driver)
	}
	if c.Store.DSN == "" {
		add("store.dsn: required")
	}
	if c.Redis.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Redis.Addr); err != nil {
			add("redis.addr: %q is not host:port", c.Redis.Addr)
		}
	}
	if st := c.Redis.Sentinel; st.Master != "" || len(st.Addrs) > 0 {
		if c.Redis.Addr != "" {
			add("redis: addr and sentinel are exclusive (Sentinel tells the primary's address)")
		}
		if st.Master == "" {
			add("redis.sentinel.master: required with sentinel.addrs")
		}
		if len(st.Addrs) == 0 {
			add("redis.sentinel.addrs: required with sentinel.master")
		}
		for i, a := range st.Addrs {
			if _, _, err := net.SplitHostPort(a); err != nil {
				add("redis.sentinel.addrs[%d]: %q is not host:port", i, a)
			}
		}
	}
	if c.Redis.Timeout <= 0 {
		add("redis.timeout: must be positive")
	}
	if c.Accounts.KeyCacheTTL < Duration(time.Second) {
		add("accounts.key_cache_ttl: must be at least 1s")
	}
	if c.Accounts.StaleIfError < 0 {
		add("accounts.stale_if_error: must not be negative")
	}
	if c.Accounts.StreamRecheck < 0 || (c.Accounts.StreamRecheck > 0 && c.Accounts.StreamRecheck < Duration(100*time.Millisecond)) {
		add("accounts.stream_recheck: must be 0 (never) or at least 100ms")
	}
	switch c.Quota.RedisDown {
	case "local", "open", "closed":
	default:
		add("quota.redis_down: %q is not one of local, open, closed", c.Quota.RedisDown)
	}
	if c.Quota.Lease < Duration(10*time.Millisecond) || c.Quota.Lease > Duration(time.Minute) {
		add("quota.lease: must be between 10ms and 1m")
	}
	if c.Quota.PersistInterval < Duration(time.Second) {
		add("quota.persist_interval: must be at least 1s")
	}
	if c.Quota.DefaultMaxTokens < 1 {
		add("quota.default_max_tokens: must be >= 1")
	}
	switch c.Scheduler.Policy {
	case "fair", "least_loaded":
	default:
		add("scheduler.policy: %q is not one of fair, least_loaded", c.Scheduler.Policy)
	}
	if c.Scheduler.Quantum < 0 || c.Scheduler.BurstRefill < 0 || c.Scheduler.StarvationAfter < 0 {
		add("scheduler: quantum, burst_refill and starvation_after must not be negative")
	}
	for k, v := range c.Scheduler.Weights {
		switch k {
		case "loaded", "gpu_util", "queue_depth", "latency", "throughput", "priority", "kv_cache", "waiting":
		default:
			add("scheduler.weights.%s: unknown score (loaded, gpu_util, queue_depth, latency, throughput, priority, kv_cache, waiting)", k)
		}
		if v < 0 {
			add("scheduler.weights.%s: must not be negative", k)
		}
	}
	switch c.Scheduler.Fleet {
	case "auto", "off":
	default:
		add("scheduler.fleet: %q is not one of auto, off", c.Scheduler.Fleet)
	}
	if c.Scheduler.SlotLease < Duration(time.Second) || c.Scheduler.SlotLease > Duration(10*time.Minute) {
		add("scheduler.slot_lease: must be between 1s and 10m")
	}
	if c.Retries.MaxAttempts < 1 || c.Retries.MaxAttempts > 10 {
		add("retries.max_attempts: must be between 1 and 10")
	}
	if c.Retries.AttemptTimeout < Duration(time.Second) {
		add("retries.attempt_timeout: must be at least 1s")
	}
	if c.Breaker.Failures < 1 {
		add("breaker.failures: must be >= 1")
	}
	if c.Breaker.Window < Duration(time.Second) || c.Breaker.Cooldown < Duration(time.Second) {
		add("breaker: window and cooldown must be at least 1s")
	}
	if c.Responses.Retention < Duration(time.Minute) {
		add("responses.retention: must be at least 1m")
	}
	if c.Responses.MaxItemBytes < 1024 || c.Responses.MaxItemBytes > 64<<20 {
		add("responses.max_item_bytes: must be between 1024 and 67108864")
	}
	if c.Responses.MaxStoredBytes < 0 || c.Responses.MaxStoredItems < 0 {
		add("responses.max_stored_bytes, max_stored_items: must be >= 0 (0: unlimited)")
	}
	for name, g := range c.Responses.Groups {
		if g.MaxStoredBytes != nil && *g.MaxStoredBytes < 0 || g.MaxStoredItems != nil && *g.MaxStoredItems < 0 {
			add("responses.groups.%s: max_stored_bytes and max_stored_items must be >= 0 (0: unlimited)", name)
		}
	}
	if len(c.Audit.Redact) > 0 && c.Audit.Content != ContentRedacted {
		add("audit.redact: needs audit.content: redacted")
	}
	if _, err := c.AuditRedact(); err != nil {
		add("%v", err)
	}
	if c.Audit.Retention < 0 || c.Audit.ContentRetention < 0 {
		add("audit.retention, audit.content_retention: must not be negative (0 keeps)")
	}
	if r := c.Audit.Retention.D(); r > 0 && r < time.Hour || c.Audit.ContentRetention.D() > 0 && c.Audit.ContentRetention.D() < time.Hour {
		add("audit.retention, audit.content_retention: at least 1h (or 0 to keep)")
	}
	if r := c.Telemetry.Retention.D(); r < time.Hour {
		add("telemetry.retention: at least 1h (telemetry.enabled: false keeps no history)")
	}
	if d := c.Audit.CommitDelay.D(); d < 0 || d > 100*time.Millisecond {
		add("audit.commit_delay: between 0 (the default, 2ms) and 100ms")
	}
	if d := c.Audit.SyncEvery.D(); d < 0 || d > time.Second {
		add("audit.sync_every: between 0 (the default, 10ms) and 1s")
	}
	if c.Audit.MaxContentBytes < 0 || c.Audit.MaxContentBytes > 16<<20 {
		add("audit.max_content_bytes: must be between 0 and 16777216")
	}
	if c.AuditOn() && c.Audit.Spool == "" {
		add("audit.spool: required while audit is on")
	}
	for i, a := range c.Audit.ClickHouse.Addr {
		if _, _, err := net.SplitHostPort(a); err != nil {
			add("audit.clickhouse.addr[%d]: %q is not host:port", i, a)
		}
	}
	for i, a := range c.Audit.TrustedProxies {
		if _, err := netip.ParsePrefix(a); err != nil {
			add("audit.trusted_proxies[%d]: %q is not a CIDR prefix", i, a)
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level: %q is not one of debug, info, warn, error", c.Log.Level)
	}
	return errors.Join(errs...)
}

func validEngine(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// StoreDSN is store.dsn with a relative SQLite path resolved against
// data_dir.
func (c *Config) StoreDSN() string {
	d := c.Store.DSN
	if c.Store.Driver != "sqlite" || d == ":memory:" || filepath.IsAbs(d) || strings.HasPrefix(d, "file:") {
		return d
	}
	return c.DataPath(d)
}

// MigrateOnStart reports store.migrate (default true).
func (c *Config) MigrateOnStart() bool { return c.Store.Migrate == nil || *c.Store.Migrate }

// SeedGroups reports accounts.seed_groups (default true).
func (c *Config) SeedGroups() bool { return c.Accounts.SeedGroups == nil || *c.Accounts.SeedGroups }

// PluginsPath resolves Plugins against the config file's directory.
func (c *Config) PluginsPath() string {
	if filepath.IsAbs(c.Plugins) {
		return c.Plugins
	}
	return filepath.Join(c.dir, c.Plugins)
}
