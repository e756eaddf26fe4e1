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
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the whole gateway configuration.
type Config struct {
	// Listen is the address the API server binds.
	Listen string `yaml:"listen"`
	// Plugins is the path of plugins.yaml, relative to the config file.
	Plugins string `yaml:"plugins"`
	// Backends are the inference servers behind the gateway.
	Backends []Backend `yaml:"backends"`
	Limits   Limits    `yaml:"limits"`
	Timeouts Timeouts  `yaml:"timeouts"`
	// Discovery controls how often backends are probed for models and health.
	Discovery Discovery `yaml:"discovery"`
	Log       Log       `yaml:"log"`

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
}

// Limits bound what clients may send.
type Limits struct {
	// MaxBodyBytes is the largest request body accepted (413 beyond).
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// MaxStreamEventBytes bounds one backend stream event.
	MaxStreamEventBytes int `yaml:"max_stream_event_bytes"`
}

// Timeouts bound each phase of a request.
type Timeouts struct {
	// Request bounds a whole non-streamed request to a backend.
	Request Duration `yaml:"request"`
	// StreamIdle bounds the gap between two reads of a backend stream.
	StreamIdle Duration `yaml:"stream_idle"`
	// QueueWait bounds the wait for a free backend slot (503 beyond).
	QueueWait Duration `yaml:"queue_wait"`
	// Connect bounds dialing a backend.
	Connect Duration `yaml:"connect"`
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
			MaxBodyBytes:        16 << 20,
			MaxStreamEventBytes: 1 << 20,
		},
		Timeouts: Timeouts{
			Request:    Duration(10 * time.Minute),
			StreamIdle: Duration(5 * time.Minute),
			QueueWait:  Duration(30 * time.Second),
			Connect:    Duration(5 * time.Second),
		},
		Discovery: Discovery{Interval: Duration(10 * time.Second), Timeout: Duration(5 * time.Second)},
		Log:       Log{Level: "info"},
		dir:       ".",
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

// Parse decodes YAML over Default and validates it; dir anchors relative paths.
func Parse(b []byte, dir string) (*Config, error) {
	c := Default()
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
	}
	if err := c.Validate(); err != nil {
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
	names := map[string]bool{}
	for i, b := range c.Backends {
		key := fmt.Sprintf("backends[%d]", i)
		if b.Name == "" {
			add("%s.name: required", key)
		} else if names[b.Name] {
			add("%s.name: duplicate %q", key, b.Name)
		}
		names[b.Name] = true
		if b.Engine != "vllm" && b.Engine != "ollama" {
			add("%s.engine: %q is not one of vllm, ollama", key, b.Engine)
		}
		if u, err := url.Parse(b.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("%s.url: %q is not an http(s) URL", key, b.URL)
		}
		if b.MaxConcurrent < 1 {
			add("%s.max_concurrent: must be >= 1", key)
		}
	}
	if c.Limits.MaxBodyBytes < 1024 {
		add("limits.max_body_bytes: must be >= 1024")
	}
	if c.Limits.MaxStreamEventBytes < 1024 {
		add("limits.max_stream_event_bytes: must be >= 1024")
	}
	for _, d := range []struct {
		k string
		v Duration
	}{{"timeouts.request", c.Timeouts.Request}, {"timeouts.stream_idle", c.Timeouts.StreamIdle},
		{"timeouts.queue_wait", c.Timeouts.QueueWait}, {"timeouts.connect", c.Timeouts.Connect},
		{"discovery.interval", c.Discovery.Interval}, {"discovery.timeout", c.Discovery.Timeout}} {
		if d.v <= 0 {
			add("%s: must be positive", d.k)
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level: %q is not one of debug, info, warn, error", c.Log.Level)
	}
	return errors.Join(errs...)
}

// PluginsPath resolves Plugins against the config file's directory.
func (c *Config) PluginsPath() string {
	if filepath.IsAbs(c.Plugins) {
		return c.Plugins
	}
	return filepath.Join(c.dir, c.Plugins)
}
