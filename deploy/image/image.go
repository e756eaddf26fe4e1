// Package image builds the gateway's container image without a container
// engine: the same layout as deploy/Dockerfile (static binary, the bundle
// plugin with its compile cache warmed, uid 65532, HEALTHCHECK through
// `mindrouter health`), written as a tarball `docker load` and
// `podman load` accept. The machine that builds it needs only Go.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"

	"github.com/mindrouter/mindrouter/core/pluginhost"
)

// Paths inside the image (deploy/Dockerfile uses the same).
const (
	BinaryPath  = "/usr/local/bin/mindrouter"
	ConfigPath  = "/etc/mindrouter/mindrouter.yaml"
	PluginsDir  = "/opt/mindrouter"
	DataDir     = "/var/lib/mindrouter"
	UID         = 65532
	APIPort     = "8080/tcp"
	MetricsPort = "9090/tcp"
)

// Options names the files that go into the image.
type Options struct {
	Binary      string // a static (CGO_ENABLED=0) linux mindrouter binary
	Config      string // the container config (deploy/container/mindrouter.yaml)
	PluginsYAML string // plugins.yaml; each plugin's file (relative to it) goes to the same place under PluginsDir
	CACerts     string // a CA bundle for HTTPS image fetches ("" for none)
	Version     string // the image label and the gateway's stamp
	Created     time.Time
}

// Build assembles the image.
func Build(ctx context.Context, o Options) (v1.Image, error) {
	var base, app, cache layerFiles
	base.dir("/etc", 0, 0o755)
	base.file("/etc/passwd", 0, 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
	base.file("/etc/group", 0, 0o644, []byte("root:x:0:\nnonroot:x:65532:\n"))
	base.dir("/tmp", 0, 0o1777)
	base.dir("/home/nonroot", UID, 0o700)
	base.dir(DataDir, UID, 0o750)
	if o.CACerts != "" {
		b, err := os.ReadFile(o.CACerts)
		if err != nil {
			return nil, fmt.Errorf("image: CA bundle: %w", err)
		}
		base.file("/etc/ssl/certs/ca-certificates.crt", 0, 0o644, b)
	}
	if err := app.copy(BinaryPath, o.Binary, 0o755); err != nil {
		return nil, err
	}
	if err := app.copy(ConfigPath, o.Config, 0o644); err != nil {
		return nil, err
	}
	if err := app.copy(PluginsDir+"/plugins.yaml", o.PluginsYAML, 0o644); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "mindrouter-image-cache-")
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	defer os.RemoveAll(tmp)
	rels, err := pluginFiles(o.PluginsYAML)
	if err != nil {
		return nil, err
	}
	for _, rel := range rels {
		w := filepath.Join(filepath.Dir(o.PluginsYAML), rel)
		if err := app.copy(path.Join(PluginsDir, filepath.ToSlash(rel)), w, 0o644); err != nil {
			return nil, fmt.Errorf("%w (make plugins builds it)", err)
		}
		wasm, err := os.ReadFile(w)
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		// Both modes, as the host may load a plugin either way.
		if err := pluginhost.Precompile(ctx, tmp, wasm, pluginhost.ModeTrusted, pluginhost.ModeStrict); err != nil {
			return nil, fmt.Errorf("image: precompile %s: %w", w, err)
		}
	}
	cache.dir(PluginsDir+"/.cache", UID, 0o755)
	if err := cache.tree(PluginsDir+"/.cache/wazero", tmp, UID); err != nil {
		return nil, err
	}

	img := empty.Image
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range []*layerFiles{&base, &app, &cache} {
		layer, err := l.layer()
		if err != nil {
			return nil, err
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer}); err != nil {
			return nil, fmt.Errorf("image: append layer: %w", err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		Entrypoint:   []string{BinaryPath, "serve"},
		Cmd:          []string{"--config", ConfigPath},
		User:         fmt.Sprintf("%d:%d", UID, UID),
		WorkingDir:   DataDir,
		Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		ExposedPorts: map[string]struct{}{APIPort: {}, MetricsPort: {}},
		Volumes:      map[string]struct{}{DataDir: {}},
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "mindrouter",
			"org.opencontainers.image.version": o.Version,
			"org.opencontainers.image.source":  "https://github.com/mindrouter/mindrouter",
		},
		Healthcheck: &v1.HealthConfig{
			Test:        []string{"CMD", BinaryPath, "health", "--config", ConfigPath},
			Interval:    10 * time.Second,
			Timeout:     4 * time.Second,
			StartPeriod: 20 * time.Second,
			Retries:     3,
		},
	}
	return mutate.ConfigFile(img, cf)
}

// pluginFiles lists the files plugins.yaml loads (native: plugins are in
// the binary), relative to it; they must stay inside its folder, where
// the image puts them beside it.
func pluginFiles(yamlPath string) ([]string, error) {
	b, err := os.ReadFile(yamlPath)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	var doc struct {
		Plugins []struct {
			Path string `json:"path"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("image: %s: %w", yamlPath, err)
	}
	var rels []string
	for _, p := range doc.Plugins {
		if strings.HasPrefix(p.Path, "native:") {
			continue
		}
		rel := filepath.Clean(p.Path)
		if filepath.IsAbs(rel) || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("image: plugin path %q leaves plugins.yaml's folder", p.Path)
		}
		rels = append(rels, rel)
	}
	if len(rels) == 0 {
		return nil, fmt.Errorf("image: %s loads no plugin file", yamlPath)
	}
	return rels, nil
}

// Write saves img as a tarball tagged ref (docker load -i FILE).
func Write(file, ref string, img v1.Image) error {
	tag, err := parseTag(ref)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		return fmt.Errorf("image: write %s: %w", file, err)
	}
	return nil
}

// layerFiles collects one layer's entries; the tar is written in path
// order with fixed times, so the same inputs give the same digest.
type layerFiles struct{ entries []entry }

type entry struct {
	hdr  tar.Header
	body []byte
}

func (l *layerFiles) dir(p string, uid int, mode int64) {
	l.entries = append(l.entries, entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: p[1:] + "/", Mode: mode, Uid: uid, Gid: uid}})
}

func (l *layerFiles) file(p string, uid int, mode int64, b []byte) {
	l.entries = append(l.entries, entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: p[1:], Mode: mode, Uid: uid, Gid: uid, Size: int64(len(b))}, body: b})
}

func (l *layerFiles) copy(dst, src string, mode int64) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	for d := path.Dir(dst); d != "/"; d = path.Dir(d) {
		l.dir(d, 0, 0o755)
	}
	l.file(dst, 0, mode, b)
	return nil
}

func (l *layerFiles) tree(dst, src string, uid int) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := path.Join(dst, filepath.ToSlash(rel))
		if d.IsDir() {
			l.dir(target, uid, 0o755)
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		l.file(target, uid, 0o644, b)
		return nil
	})
}

func (l *layerFiles) layer() (v1.Layer, error) {
	seen := map[string]bool{}
	var es []entry
	for _, e := range l.entries {
		if !seen[e.hdr.Name] {
			seen[e.hdr.Name] = true
			es = append(es, e)
		}
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].hdr.Name < es[j].hdr.Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := e.hdr
		h.ModTime = time.Unix(0, 0)
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return nil, fmt.Errorf("image: tar: %w", err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("image: tar: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: tar: %w", err)
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
