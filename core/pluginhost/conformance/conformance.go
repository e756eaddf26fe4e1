package conformance

import (
	"context"
	"errors"
	"fmt"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
)

// Options tune a conformance run. The zero value is usable.
type Options struct {
	// Kind is the kind the plugin must have; "" accepts its manifest's.
	Kind sdk.Kind
	// Config is handed to mr_init (JSON), as plugins.yaml's config would be.
	Config []byte
	// GoldenDir holds golden vectors (see the package doc) and recorded
	// upstream streams (*.sse, *.ndjson) for the split check.
	GoldenDir string
	// Streams are more recorded upstream streams for the split check.
	Streams []string
	// Framing overrides the adapter manifest's framing for Streams.
	Framing sdk.Framing
	// MaxSplitPrefix bounds the split check: every boundary in the first
	// MaxSplitPrefix bytes (default 2048), then RandomSplits random ones
	// (default 200) and 20 random multi-way splits.
	MaxSplitPrefix int
	RandomSplits   int
	// FuzzIterations is the number of random and mutated calls (default 300).
	FuzzIterations int
	// Budget is the p99 bound of one call in trusted mode (default 2 ms),
	// measured over BudgetCalls calls (default 2000), which also drive the
	// memory check.
	Budget      time.Duration
	BudgetCalls int
	// MemoryMB is the instance memory limit (default
	// pluginhost.DefaultMemoryMB); the payload limit is MemoryMB /
	// pluginhost.MemoryPerPayloadMB. After BudgetCalls calls linear memory
	// must stay under the pool's recycle threshold (pool.recycle_mb, at most
	// 75% of MemoryMB) and show no growth trend.
	MemoryMB int
	// CallTimeout bounds each call of the functional checks, which run in
	// strict mode (default 1 s): a plugin that loops fails, it does not hang.
	CallTimeout time.Duration
	// CacheDir is the wazero compilation cache (default: a temp dir).
	CacheDir string
	// Seed makes the random checks reproducible (default 1).
	Seed   int64
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.MaxSplitPrefix == 0 {
		o.MaxSplitPrefix = 2048
	}
	if o.RandomSplits == 0 {
		o.RandomSplits = 200
	}
	if o.FuzzIterations == 0 {
		o.FuzzIterations = 300
	}
	if o.Budget == 0 {
		o.Budget = 2 * time.Millisecond
	}
	if o.BudgetCalls == 0 {
		o.BudgetCalls = 2000
	}
	o.BudgetCalls = max(o.BudgetCalls, 4)
	if o.MemoryMB == 0 {
		o.MemoryMB = pluginhost.DefaultMemoryMB
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = time.Second
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name    string
	OK      bool
	Skipped bool
	Detail  string // what was measured or what failed
	Err     error
	Took    time.Duration
}

// Report is the outcome of a conformance run.
type Report struct {
	Path     string
	SHA256   string
	Manifest sdk.Manifest
	Checks   []CheckResult
	// Figures of the budget and memory checks.
	P50, P99, Max    time.Duration
	MemoryBytes      uint32 // linear memory after the budget calls
	MemoryStartBytes uint32
}

// OK reports whether every check passed or was skipped.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK && !c.Skipped {
			return false
		}
	}
	return len(r.Checks) > 0
}

// String is a human summary, one line per check.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s %s %s (sha256 %.12s)\n", r.Path, r.Manifest.Kind, r.Manifest.Name, r.Manifest.Version, r.SHA256)
	for _, c := range r.Checks {
		status := "PASS"
		switch {
		case c.Skipped:
			status = "SKIP"
		case !c.OK:
			status = "FAIL"
		}
		detail := c.Detail
		if c.Err != nil && !strings.Contains(detail, c.Err.Error()) {
			detail = strings.TrimSpace(detail + "\n      " + strings.ReplaceAll(c.Err.Error(), "\n", "\n      "))
		}
		fmt.Fprintf(&b, "%s  %-12s %s\n", status, c.Name, detail)
	}
	return b.String()
}

// Check runs every check on the plugin at wasmPath. The error joins the
// failed checks' errors; the Report has the details and figures either way.
func Check(ctx context.Context, wasmPath string, opts Options) (Report, error) {
	opts.defaults()
	rep := Report{Path: wasmPath}
	s, err := open(ctx, wasmPath, &opts, &rep)
	if err != nil {
		return rep, err
	}
	defer s.close()
	s.run("golden", s.checkGolden)
	s.run("split", s.checkSplit)
	s.run("fuzz", s.checkFuzz)
	s.run("determinism", s.checkDeterminism)
	s.run("budget", s.checkBudget)
	s.run("memory", s.checkMemory)
	var errs []error
	for _, c := range rep.Checks {
		if !c.OK && !c.Skipped {
			errs = append(errs, fmt.Errorf("conformance %s: %w", c.Name, c.Err))
		}
	}
	return rep, errors.Join(errs...)
}

// Run runs Check from a test, one subtest per check.
func Run(t *testing.T, wasmPath string, opts Options) {
	t.Helper()
	rep, err := Check(context.Background(), wasmPath, opts)
	if len(rep.Checks) == 0 {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		t.Run(c.Name, func(t *testing.T) {
			switch {
			case c.Skipped:
				t.Log("not applicable: " + c.Detail)
			case !c.OK:
				t.Error(c.Err)
			default:
				t.Log(c.Detail)
			}
		})
	}
}

// session is a loaded plugin under test: a strict instance pool for the
// functional checks and a trusted one (one instance) for the budgets.
type session struct {
	ctx     context.Context
	opts    *Options
	rep     *Report
	tmp     string
	host    *pluginhost.Host
	strict  *pluginhost.Plugin
	trusted *pluginhost.Plugin
	kind    sdk.Kind
	vectors []vector
	mem     []uint32 // memory samples of the budget check
}

func open(ctx context.Context, wasmPath string, opts *Options, rep *Report) (*session, error) {
	s := &session{ctx: ctx, opts: opts, rep: rep}
	var err error
	if s.tmp, err = os.MkdirTemp("", "conformance-"); err != nil {
		return nil, err
	}
	if opts.CacheDir == "" {
		opts.CacheDir = filepath.Join(s.tmp, "cache")
	}
	if s.runABI(wasmPath) != nil {
		s.close()
		return nil, rep.Checks[len(rep.Checks)-1].Err
	}
	if err := s.run("load", func() (string, error) { return s.runLoad(wasmPath) }); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *session) close() {
	if s.host != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.host.Close(ctx)
		cancel()
	}
	os.RemoveAll(s.tmp)
}

// run records one check. A check returns a detail line and an error; a
// skipped check returns errSkip (wrapped with the reason).
func (s *session) run(name string, check func() (string, error)) error {
	start := time.Now()
	detail, err := check()
	c := CheckResult{Name: name, OK: err == nil, Detail: detail, Err: err, Took: time.Since(start)}
	if errors.Is(err, errSkip) {
		c.OK, c.Skipped, c.Err = true, true, nil
		c.Detail = strings.TrimPrefix(err.Error(), errSkip.Error()+": ")
	} else if err != nil && detail == "" {
		c.Detail = err.Error()
	}
	s.rep.Checks = append(s.rep.Checks, c)
	return c.Err
}

var errSkip = errors.New("skipped")

func skip(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errSkip, fmt.Sprintf(format, a...))
}

// runABI inspects the file: exports and signatures, imports, ABI version,
// mr_init, manifest fields, kind, the host's self-test.
func (s *session) runABI(wasmPath string) error {
	return s.run("abi", func() (string, error) {
		wasm, err := os.ReadFile(wasmPath)
		if err != nil {
			return "", err
		}
		ins, err := pluginhost.Inspect(s.ctx, wasm, s.opts.CacheDir)
		s.rep.SHA256, s.rep.Manifest = ins.SHA256, ins.Manifest
		if err != nil {
			return "", err
		}
		if err := checkManifest(&ins.Manifest, s.opts.Kind); err != nil {
			return "", err
		}
		s.kind = ins.Manifest.Kind
		return fmt.Sprintf("%s %q %s, %d imports, ABI %d.%d", ins.Manifest.Kind, ins.Manifest.Name,
			ins.Manifest.Version, len(ins.Imports), ins.Manifest.ABI>>16, ins.Manifest.ABI&0xffff), nil
	})
}

// checkManifest is stricter than the host: every descriptive field set.
func checkManifest(m *sdk.Manifest, kind sdk.Kind) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf("manifest: "+format, a...)) }
	if kind != "" && m.Kind != kind {
		add("kind %q, want %q", m.Kind, kind)
	}
	if m.Version == "" {
		add("empty version")
	}
	if m.Format == "" {
		add("empty format")
	}
	if m.ABI == 0 {
		add("abi not set")
	}
	if m.StateVersion < 0 {
		add("negative state_version")
	}
	switch m.Framing {
	case "", sdk.FramingSSE, sdk.FramingNDJSON:
	default:
		add("unknown framing %q", m.Framing)
	}
	for _, r := range m.Routes {
		if r.Name == "" || !strings.HasPrefix(r.Path, "/") || (r.Method != "GET" && r.Method != "POST") {
			add("route %+v: need a name, GET or POST and a path starting with /", r)
		}
	}
	for _, p := range m.Probes {
		if p.Name == "" || !strings.HasPrefix(p.Path, "/") || (p.Method != "GET" && p.Method != "POST") {
			add("probe %+v: need a name, GET or POST and a path starting with /", p)
		}
	}
	return errors.Join(errs...)
}

// runLoad starts the plugin twice in one Host: strict (functional checks)
// and trusted with one instance (budgets).
func (s *session) runLoad(wasmPath string) (string, error) {
	abs, err := filepath.Abs(wasmPath)
	if err != nil {
		return "", err
	}
	entry := func(name string, mode pluginhost.Mode, pool pluginhost.PoolConfig) pluginhost.PluginConfig {
		return pluginhost.PluginConfig{Name: name, Kind: s.kind, Path: abs, Config: s.opts.Config, Mode: mode,
			Limits: pluginhost.Limits{MemoryMB: s.opts.MemoryMB, CallTimeoutMS: int(s.opts.CallTimeout / time.Millisecond),
				MaxPayloadMB: max(s.opts.MemoryMB/pluginhost.MemoryPerPayloadMB, 1)},
			Pool: pool}
	}
	cfg := &pluginhost.Config{ABI: abi.VersionMajor, CacheDir: s.opts.CacheDir, Plugins: []pluginhost.PluginConfig{
		entry("subject", pluginhost.ModeStrict, pluginhost.PoolConfig{Min: 1, Max: 2, WaitMS: 10000}),
		entry("subject-trusted", pluginhost.ModeTrusted, pluginhost.PoolConfig{Min: 1, Max: 1, WaitMS: 10000}),
	}}
	s.host, err = pluginhost.New(s.ctx, cfg, s.tmp, s.opts.Logger)
	if err != nil {
		return "", err
	}
	s.strict, s.trusted = s.host.Plugin("subject"), s.host.Plugin("subject-trusted")
	if s.opts.GoldenDir != "" {
		if s.vectors, err = loadVectors(s.opts.GoldenDir); err != nil {
			return "", err
		}
	}
	return "loaded in strict and trusted mode, self-test passed", nil
}

// fatal reports the errors that are conformance failures wherever they
// happen: a plugin error status is data, these are not.
func fatal(err error) bool {
	return errors.Is(err, pluginhost.ErrTrap) || errors.Is(err, pluginhost.ErrTimeout) ||
		errors.Is(err, pluginhost.ErrProtocol) || errors.Is(err, pluginhost.ErrPoolTimeout)
}
