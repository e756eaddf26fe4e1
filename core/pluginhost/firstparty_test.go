package pluginhost

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// firstPartySet is the first-party plugins built by testutil.BuildPlugins.
type firstPartySet struct{ dir, cache string }

func (s firstPartySet) wasm(name string) string { return filepath.Join(s.dir, name+".wasm") }

var (
	fpOnce sync.Once
	fpSet  firstPartySet
	fpErr  error
)

// firstParty builds the first-party plugins once per test binary (removed
// by TestMain through testutil.Cleanup).
func firstParty(t testing.TB) firstPartySet {
	t.Helper()
	fpOnce.Do(func() {
		var ps testutil.PluginSet
		ps, fpErr = testutil.BuildPlugins()
		fpSet = firstPartySet{dir: ps.Dir, cache: ps.Cache}
	})
	if fpErr != nil {
		t.Fatal(fpErr)
	}
	return fpSet
}

// pad fills b up to n bytes with JSON whitespace before its closing suffix.
func pad(prefix, item, sep, suffix string, n int) []byte {
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(prefix)
	first := true
	for b.Len()+len(sep)+len(item)+len(suffix) <= n {
		if !first {
			b.WriteString(sep)
		}
		first = false
		b.WriteString(item)
	}
	b.WriteString(strings.Repeat(" ", n-b.Len()-len(suffix)))
	b.WriteString(suffix)
	return b.Bytes()
}

// fill builds prefix + n-len(prefix)-len(suffix) bytes of c + suffix.
func fill(prefix string, c byte, suffix string, n int) []byte {
	b := make([]byte, 0, n)
	b = append(b, prefix...)
	b = append(b, bytes.Repeat([]byte{c}, n-len(prefix)-len(suffix))...)
	return append(b, suffix...)
}

// firstPartyHost loads the first-party plugin name with the limits and
// pool settings of the repository's plugins.yaml (defaults where it has
// none), from the build firstParty made.
func firstPartyHost(t *testing.T, name string, logger *slog.Logger) *Plugin {
	t.Helper()
	set := firstParty(t)
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := LoadConfig(filepath.Join(root, "plugins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pc *PluginConfig
	for i := range repo.Plugins {
		if repo.Plugins[i].Name == name {
			pc = &repo.Plugins[i]
		}
	}
	if pc == nil {
		// plugins.yaml loads the first-party bundle; its components as
		// separate modules get the bundle's settings.
		for i := range repo.Plugins {
			if repo.Plugins[i].Kind == sdk.KindBundle {
				pc = &repo.Plugins[i]
			}
		}
		for _, fp := range testutil.Plugins {
			if pc != nil && fp.Name == name {
				pc.Name, pc.Kind = name, sdk.Kind(fp.Kind)
			}
		}
	}
	if pc == nil || pc.Name != name {
		t.Fatalf("plugins.yaml has no plugin %q nor a first-party bundle", name)
	}
	pc.Path, pc.SHA256, pc.Mode = set.wasm(name), "", ModeTrusted
	pc.Pool.Min = 1
	cfg := &Config{ABI: repo.ABI, CacheDir: set.cache, Plugins: []PluginConfig{*pc}}
	h, err := New(context.Background(), cfg, "", logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h.Plugin(name)
}

// TestFirstParty_MaxBody: chat bodies just under the gateway's 16 MiB body
// limit (and its 1<<20 JSON values limit) decode with the shipped
// plugins.yaml; under the former 64 MiB memory_mb both trapped (out of
// memory) and the canonical form of the many-messages body was over the
// former 16 MiB max_payload_mb.
func TestFirstParty_MaxBody(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 15 MB bodies (seconds of guest time each)")
	}
	p := firstPartyHost(t, "openai", testLogger(t))
	for _, tt := range []struct {
		name string
		body []byte
	}{
		// 200k short messages: 600k JSON values.
		{"200k-messages", pad(`{"model":"m","messages":[`, `{"role":"user","content":"a short message of about forty-five bytes"}`, ",", `]}`, 15_000_000)},
		{"one-string", fill(`{"model":"m","messages":[{"role":"user","content":"`, 'a', `"}]}`, 15_000_000)},
		{"one-image", fill(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,`, 'A', `"}}]}]}`, 15_000_000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out Result
			start := time.Now()
			if err := p.Call(context.Background(), abi.OpRequestDecode, CallInput{Payload: tt.body}, &out); err != nil {
				t.Fatalf("%d B body: %.300v", len(tt.body), err)
			}
			t.Logf("%d B body -> %d B canonical in %v", len(tt.body), len(out.Payload), time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestFirstParty_StatusErrorBounded: a plugin error that echoes client
// input (a 4 MB role name) reaches the caller cut to maxStatusMsg bytes on
// a UTF-8 boundary.
func TestFirstParty_StatusErrorBounded(t *testing.T) {
	p := firstPartyHost(t, "openai", testLogger(t))
	role := strings.Repeat("é", 2<<20) // 4 MiB
	body := []byte(`{"model":"m","messages":[{"role":"` + role + `","content":"x"}]}`)
	var out Result
	err := p.Call(context.Background(), abi.OpRequestDecode, CallInput{Payload: body}, &out)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != abi.StatusBadInput {
		t.Fatalf("err %.300v, want a bad_input StatusError", err)
	}
	for what, msg := range map[string]string{"StatusError.Msg": se.Msg, "Result.Err": string(out.Err), "Error()": err.Error()} {
		limit := maxStatusMsg
		if what == "Error()" {
			limit += 100 // plugin, op and status around the message
		}
		if len(msg) > limit || !utf8.ValidString(msg) || !strings.HasSuffix(msg, ellipsis) || !strings.Contains(msg, "éé") {
			t.Errorf("%s: %d B (limit %d), valid UTF-8 %v: %.80q…", what, len(msg), limit, utf8.ValidString(msg), msg)
		}
	}
}
