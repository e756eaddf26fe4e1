package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
)

// Node is a GPU host whose sidecar reports its GPUs (sidecar/). Nodes in
// the config are written into the store at every start, as backends are;
// a backend names its node with Backend.Node.
//
// The sidecar's key is never written in the config: SidecarKeyEnv names
// an environment variable holding it, or SidecarKeyFile a file (relative
// to the config file) holding it; Load reads it into SidecarKey.
type Node struct {
	Name           string `yaml:"name"`
	SidecarURL     string `yaml:"sidecar_url"`
	SidecarKeyEnv  string `yaml:"sidecar_key_env"`
	SidecarKeyFile string `yaml:"sidecar_key_file"`
	// SidecarKey is the key read at load.
	SidecarKey Secret `yaml:"-"`
}

// Secret is a credential read at load. Every way of printing it — fmt,
// slog, JSON, YAML, text — shows "[redacted]"; string(s) is the value.
type Secret string

const redacted = "[redacted]"

// String, GoString, LogValue and MarshalText redact.
func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// String describes the node without its key.
func (n Node) String() string { return "node " + n.Name + " (" + n.SidecarURL + ")" }

// LogValue logs the node without its key.
func (n Node) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", n.Name), slog.String("sidecar_url", n.SidecarURL),
		slog.Bool("sidecar_key_set", n.SidecarKey != ""))
}

// validateNodes checks the nodes section and the backends' references to
// it; a backend may also name a node registered through the admin API,
// which only the store knows (checked at start).
func (c *Config) validateNodes(add func(string, ...any)) {
	names := map[string]bool{}
	for i, n := range c.Nodes {
		key := fmt.Sprintf("nodes[%d]", i)
		if n.Name == "" {
			add("%s.name: required", key)
		} else if names[n.Name] {
			add("%s.name: duplicate %q", key, n.Name)
		}
		names[n.Name] = true
		if u, err := url.Parse(n.SidecarURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("%s.sidecar_url: %q is not an http(s) URL", key, n.SidecarURL)
		}
		switch {
		case n.SidecarKeyEnv != "" && n.SidecarKeyFile != "":
			add("%s: give sidecar_key_env or sidecar_key_file, not both", key)
		case n.SidecarKeyEnv == "" && n.SidecarKeyFile == "":
			// The sidecar refuses every request without its key.
			add("%s: sidecar_key_env or sidecar_key_file required", key)
		}
	}
	for i, b := range c.Backends {
		for _, g := range b.GPUs {
			if g < 0 {
				add("backends[%d].gpus: %d is not a GPU index", i, g)
			}
		}
		if len(b.GPUs) > 0 && b.Node == "" {
			add("backends[%d].gpus: needs node", i)
		}
	}
}

// loadNodeKeys reads each node's sidecar key from its variable or file.
// Errors name the variable or the file, never a key.
func (c *Config) loadNodeKeys() error {
	var errs []error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		key := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.SidecarKeyEnv != "":
			n.SidecarKey = Secret(strings.TrimSpace(os.Getenv(n.SidecarKeyEnv)))
			if n.SidecarKey == "" {
				errs = append(errs, fmt.Errorf("%s.sidecar_key_env: $%s is unset or empty", key, n.SidecarKeyEnv))
			}
		case n.SidecarKeyFile != "":
			b, err := os.ReadFile(c.Path(n.SidecarKeyFile))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.sidecar_key_file: %w", key, err))
				continue
			}
			if n.SidecarKey = Secret(strings.TrimSpace(string(b))); n.SidecarKey == "" {
				errs = append(errs, fmt.Errorf("%s.sidecar_key_file: %s is empty", key, n.SidecarKeyFile))
			}
		}
	}
	return errors.Join(errs...)
}
