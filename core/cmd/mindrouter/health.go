package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
)

// healthCmd asks the gateway on this host whether it is live (/healthz) or
// ready (/readyz): a container HEALTHCHECK in an image that has no shell or
// curl. The address comes from the same config the gateway reads, so
// the check follows listen and TLS.
func healthCmd(args []string) error {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "gateway config file (YAML); empty: embedded defaults")
	ready := fs.Bool("ready", false, "ask /readyz (backends and store in place) instead of /healthz")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := config.Default()
	if *cfgPath != "" {
		var err error
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
	}
	u, err := healthURL(cfg.Listen, cfg.TLS.On(), *ready)
	if err != nil {
		return err
	}
	// The certificate names the public host, not loopback: verifying it
	// here would fail on every correct deployment.
	c := &http.Client{Timeout: *timeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback liveness probe
	}}
	resp, err := c.Get(u)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", u, resp.Status)
	}
	return nil
}

// healthURL turns a listen address into a URL on this host: a wildcard
// bind (":8080", "0.0.0.0:8080", "[::]:8080") is asked on loopback.
func healthURL(listen string, tlsOn, ready bool) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("health: listen %q: %w", listen, err)
	}
	if port == "" || port == "0" {
		return "", errors.New("health: listen has no fixed port")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme, path := "http", "/healthz"
	if tlsOn {
		scheme = "https"
	}
	if ready {
		path = "/readyz"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + path, nil
}
