package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mindrouter/mindrouter/core/config"
)

type composeFile struct {
	Services map[string]struct {
		Image string `json:"image"`
		Build *struct {
			Context    string `json:"context"`
			Dockerfile string `json:"dockerfile"`
			Target     string `json:"target"`
		} `json:"build"`
		Environment map[string]string `json:"environment"`
		Volumes     []string          `json:"volumes"`
		Healthcheck *struct {
			Test []string `json:"test"`
		} `json:"healthcheck"`
	} `json:"services"`
}

// TestComposeConfig has Debian's docker-compose parse and resolve the
// compose file (its schema, interpolation, merges), then checks what it
// cannot: every file mounted and every Dockerfile and target exists, and
// the gateways' config passes the gateway's own validation.
func TestComposeConfig(t *testing.T) {
	cmd := exec.Command("docker-compose", "-f", "compose/compose.yaml", "config")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("docker-compose config (make test-deps installs Debian's docker-compose): %v\n%s", err, stderr)
	}
	var cf composeFile
	if err := yaml.Unmarshal(out, &cf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"gateway1", "gateway2", "lb", "mariadb", "redis", "clickhouse", "prometheus", "grafana", "fakellm", "sidecar"} {
		if _, ok := cf.Services[s]; !ok {
			t.Errorf("no service %s", s)
		}
	}
	for name, s := range cf.Services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !filepath.IsAbs(src) {
				continue // a named volume
			}
			if _, err := os.Stat(src); err != nil {
				t.Errorf("%s mounts %s, which does not exist", name, src)
			}
		}
		if b := s.Build; b != nil {
			df := filepath.Join(b.Context, b.Dockerfile)
			text, err := os.ReadFile(df)
			if err != nil {
				t.Errorf("%s builds %s: %v", name, df, err)
				continue
			}
			if b.Target != "" && !regexp.MustCompile(`(?im)^FROM\s+\S+\s+AS\s+`+regexp.QuoteMeta(b.Target)+`\s*$`).Match(text) {
				t.Errorf("%s builds target %s, which %s lacks", name, b.Target, df)
			}
		}
	}
	g := cf.Services["gateway1"]
	if g.Healthcheck != nil {
		t.Errorf("gateway1 overrides the image's HEALTHCHECK: %v", g.Healthcheck.Test)
	}
	for k, v := range g.Environment {
		t.Setenv(k, v)
	}
	b, err := os.ReadFile("compose/mindrouter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(b, "/etc/mindrouter")
	if err != nil {
		t.Fatalf("the gateway refuses compose/mindrouter.yaml: %v", err)
	}
	if cfg.Store.Driver != "mysql" || cfg.Redis.Addr == "" || len(cfg.Audit.ClickHouse.Addr) == 0 || cfg.Metrics.Listen == "" {
		t.Errorf("replicas must share store, Redis and ClickHouse, metrics on their own port: %+v", cfg)
	}
}

// TestDockerfileSources checks what the Dockerfiles copy and build exists.
func TestDockerfileSources(t *testing.T) {
	text, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"deploy/container/mindrouter.yaml", "plugins/bundle/wasm", "core/cmd/mindrouter",
		"core/pluginhost/internal/precompile", "bench/fakellm/cmd/fakellm", "plugins.yaml", "go.mod", "sdk/go.mod", "plugins/gemini/go.mod"} {
		if !strings.Contains(string(text), p) {
			t.Errorf("Dockerfile no longer names %s: update this list", p)
		}
		if _, err := os.Stat(filepath.Join("..", p)); err != nil {
			t.Errorf("Dockerfile uses %s: %v", p, err)
		}
	}
	if !regexp.MustCompile(`(?m)^USER 65532`).Match(text) || !strings.Contains(string(text), `HEALTHCHECK`) {
		t.Error("the image must run as non-root and have a HEALTHCHECK")
	}
	b, err := os.ReadFile("container/mindrouter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse(b, "/etc/mindrouter"); err != nil {
		t.Fatalf("the image's config: %v", err)
	}
}
