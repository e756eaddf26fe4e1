package deploy

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mindrouter/mindrouter/deploy/image"
)

// TestImage builds the image as `make image` does, reads the tarball back
// and checks what a container engine would run: entrypoint, user, ports,
// healthcheck, file owners, and that the binary inside runs --version.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mindrouter")
	const version = "v0.0.0-imagetest"
	build := exec.Command("go", "build", "-trimpath", "-ldflags",
		"-X github.com/mindrouter/mindrouter/core/version.Version="+version, "-o", bin, "./core/cmd/mindrouter")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The plugins make builds (deploy-check depends on it), as plugins.yaml names them.
	img, err := image.Build(context.Background(), image.Options{Binary: bin, Config: "container/mindrouter.yaml",
		PluginsYAML: "../plugins.yaml", Version: version, Created: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "image.tar")
	if err := image.Write(file, "mindrouter:test", img); err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if strings.Join(c.Entrypoint, " ") != "/usr/local/bin/mindrouter serve" || strings.Join(c.Cmd, " ") != "--config /etc/mindrouter/mindrouter.yaml" {
		t.Errorf("entrypoint %v cmd %v", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("user = %q", c.User)
	}
	for _, p := range []string{"8080/tcp", "9090/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("port %s not exposed: %v", p, c.ExposedPorts)
		}
	}
	if c.Healthcheck == nil || strings.Join(c.Healthcheck.Test, " ") != "CMD /usr/local/bin/mindrouter health --config /etc/mindrouter/mindrouter.yaml" {
		t.Errorf("healthcheck: %+v", c.Healthcheck)
	}
	if c.Labels["org.opencontainers.image.version"] != version {
		t.Errorf("labels: %v", c.Labels)
	}

	files := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(back))
	var binary []byte
	cacheFiles := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = h
		if h.Name == "usr/local/bin/mindrouter" {
			if binary, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasPrefix(h.Name, "opt/mindrouter/.cache/wazero/") && h.Typeflag == tar.TypeReg {
			cacheFiles++
			if h.Uid != 65532 {
				t.Errorf("%s owned by %d: the gateway could not add to its cache", h.Name, h.Uid)
			}
		}
	}
	for p, uid := range map[string]int{"/usr/local/bin/mindrouter": 0, "/etc/mindrouter/mindrouter.yaml": 0,
		"/opt/mindrouter/plugins.yaml": 0, "/opt/mindrouter/plugins/bundle.wasm": 0, "/opt/mindrouter/plugins/gemini.wasm": 0,
		"/var/lib/mindrouter": 65532,
		"/etc/passwd":         0, "/tmp": 0} {
		h := files[p]
		if h == nil {
			t.Errorf("%s is not in the image", p)
			continue
		}
		if h.Uid != uid {
			t.Errorf("%s owned by %d, want %d", p, h.Uid, uid)
		}
	}
	if cacheFiles == 0 {
		t.Error("the plugin compile cache is empty: the first start would compile")
	}
	exe := filepath.Join(dir, "extracted")
	if err := os.WriteFile(exe, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), version) {
		t.Fatalf("the image's binary --version: %v\n%s", err, out)
	}
}
