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
	// Kind is the kind the plugin must have (translator, adapter or
	// bundle); "" accepts its manifest's.
	Kind sdk.Kind
	// Config is handed to mr_init (JSON), as plugins.yaml's config would be.
	Config []byte
	// GoldenDir holds golden vectors (see the package doc) and recorded
	// upstream streams (*.sse, *.ndjson) for the split check. For a
	// bundle, each component's are in the subdirectory named after it
	// (GoldenDir/openai, GoldenDir/vllm), unless Parts says otherwise.
	GoldenDir string
	// Streams are more recorded upstream streams for the split check. In a
	// bundle they go to every adapter whose framing they have (by file
	// extension: .sse, .ndjson or .jsonl; else Framing).
	Streams []string
	// Framing overrides the adapter manifest's framing for Streams.
	Framing sdk.Framing
	// Parts are per-component options of a bundle, by component name.
	Parts map[string]PartOptions
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

// PartOptions are the options of one component of a bundle.
type PartOptions struct {
	// GoldenDir holds the component's golden vectors and recorded streams
	// (default: Options.GoldenDir/<component name>, when it exists).
	GoldenDir string
	// Streams are more recorded upstream streams for an adapter's split
	// check (and the fused check).
	Streams []string
	// Framing overrides the adapter manifest's framing for Streams.
	Framing sdk.Framing
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
	Manifest sdk.Manifest // the module's (a bundle's lists its components)
	// Checks in the order they ran. In a bundle the per-component checks
	// are named "<component>/<check>" ("openai/golden", "vllm/split"), and
	// the fused check follows them.
	Checks []CheckResult
	// Figures of the budget and memory checks; for a bundle, the largest
	// of its components' (each is in Components).
	P50, P99, Max    time.Duration
	MemoryBytes      uint32 // linear memory after the budget calls
	MemoryStartBytes uint32
	// Components are the per-component figures, in component order (one
	// entry for a module of one component).
	Components []ComponentReport
}

// ComponentReport is one component's budget and memory figures.
type ComponentReport struct {
	Index            uint16
	Name             string
	Kind             sdk.Kind
	P50, P99, Max    time.Duration
	MemoryBytes      uint32
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
		fmt.Fprintf(&b, "%s  %-18s %s\n", status, c.Name, detail)
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
	for i := range s.parts {
		s.part = &s.parts[i]
		s.run("golden", s.checkGolden)
		s.run("split", s.checkSplit)
		s.run("fuzz", s.checkFuzz)
		s.run("determinism", s.checkDeterminism)
		s.run("budget", s.checkBudget)
		s.run("memory", s.checkMemory)
	}
	s.part = nil
	if s.bundle {
		s.run("fused", s.checkFused)
	}
	s.figures()
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
// functional checks and a trusted one (one instance) for the budgets. The
// per-component checks run once per component, part naming it.
type session struct {
	ctx     context.Context
	opts    *Options
	rep     *Report
	tmp     string
	host    *pluginhost.Host
	strict  *pluginhost.Plugin
	trusted *pluginhost.Plugin
	kind    sdk.Kind // the module's
	bundle  bool
	parts   []part
	part    *part // the component under check; nil for module-wide checks
}

// part is one component under test and what its checks found.
type part struct {
	idx     uint16
	m       sdk.Manifest
	prefix  string // "" in a module of one component, "<name>/" in a bundle
	golden  string // golden dir
	streams []string
	framing sdk.Framing // override of the manifest's
	vectors []vector
	mem     []uint32 // memory samples of the budget check
	fig     ComponentReport
}

// addr addresses in to the component under check: translator ops name it
// as the translator, adapter ops as the adapter, other ops as both.
func (s *session) addr(op abi.Op, in pluginhost.CallInput) pluginhost.CallInput {
	return addrTo(s.part.idx, op, in)
}

func addrTo(idx uint16, op abi.Op, in pluginhost.CallInput) pluginhost.CallInput {
	switch {
	case op >= abi.OpRequestDecode && op < abi.OpRequestEncode:
		in.Translator = idx
	case op >= abi.OpRequestEncode && op < abi.OpFusedRequest:
		in.Adapter = idx
	default:
		in.Translator, in.Adapter = idx, idx
	}
	return in
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
	if s.part != nil {
		name = s.part.prefix + name
	}
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
		s.bundle = s.kind == sdk.KindBundle
		detail := fmt.Sprintf("%s %q %s, %d imports, ABI %d.%d", ins.Manifest.Kind, ins.Manifest.Name,
			ins.Manifest.Version, len(ins.Imports), ins.Manifest.ABI>>16, ins.Manifest.ABI&0xffff)
		if s.bundle {
			var names []string
			for i, c := range ins.Manifest.Components {
				names = append(names, fmt.Sprintf("%d %s (%s)", i, c.Name, c.Kind))
			}
			detail += "; components: " + strings.Join(names, ", ")
		}
		return detail, nil
	})
}

// checkManifest is stricter than the host: every descriptive field set,
// in each component of a bundle (errors name the component).
func checkManifest(m *sdk.Manifest, kind sdk.Kind) error {
	var errs []error
	if kind != "" && m.Kind != kind {
		errs = append(errs, fmt.Errorf("manifest: kind %q, want %q", m.Kind, kind))
	}
	if m.Kind != sdk.KindBundle {
		return errors.Join(append(errs, checkPart(m, "manifest: ")...)...)
	}
	if m.Version == "" {
		errs = append(errs, errors.New("manifest: empty version"))
	}
	if m.ABI == 0 {
		errs = append(errs, errors.New("manifest: abi not set"))
	}
	if len(m.Components) == 0 {
		errs = append(errs, errors.New("manifest: a bundle without components"))
	}
	seen := map[string]int{}
	for i := range m.Components {
		c := &m.Components[i]
		where := fmt.Sprintf("manifest: component %d %q: ", i, c.Name)
		if j, dup := seen[c.Name]; dup {
			errs = append(errs, fmt.Errorf("%sname already used by component %d", where, j))
		}
		seen[c.Name] = i
		if c.Kind != sdk.KindTranslator && c.Kind != sdk.KindAdapter {
			errs = append(errs, fmt.Errorf("%skind %q, want translator or adapter", where, c.Kind))
		}
		errs = append(errs, checkPart(c, where)...)
	}
	return errors.Join(errs...)
}

// checkPart checks one component's descriptive fields.
func checkPart(m *sdk.Manifest, where string) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(where+format, a...)) }
	if m.Name == "" {
		add("empty name")
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
	return errs
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
	if err := s.setupParts(); err != nil {
		return "", err
	}
	if s.bundle {
		return fmt.Sprintf("loaded in strict and trusted mode, self-test of %d components passed", len(s.parts)), nil
	}
	return "loaded in strict and trusted mode, self-test passed", nil
}

// setupParts lists the components under test with their golden vectors
// and recorded streams.
func (s *session) setupParts() error {
	m := s.rep.Manifest
	var errs []error
	for i, c := range m.Parts() {
		p := part{idx: uint16(i), m: c}
		if !s.bundle {
			p.golden, p.streams, p.framing = s.opts.GoldenDir, s.opts.Streams, s.opts.Framing
		} else {
			p.prefix = c.Name + "/"
			po, ok := s.opts.Parts[c.Name]
			switch {
			case ok:
				p.golden, p.streams, p.framing = po.GoldenDir, po.Streams, po.Framing
			case s.opts.GoldenDir != "":
				if fi, err := os.Stat(filepath.Join(s.opts.GoldenDir, c.Name)); err == nil && fi.IsDir() {
					p.golden = filepath.Join(s.opts.GoldenDir, c.Name)
				}
			}
			if c.Kind == sdk.KindAdapter {
				for _, f := range s.opts.Streams {
					if fr := fileFraming(f, s.opts.Framing); fr == c.Framing || fr == "" && c.Framing == "" {
						p.streams = append(p.streams, f)
					}
				}
			}
		}
		if p.golden != "" {
			var err error
			if p.vectors, err = loadVectors(p.golden); err != nil {
				if s.bundle {
					err = fmt.Errorf("component %q: %w", c.Name, err)
				}
				errs = append(errs, err)
			}
		}
		p.fig = ComponentReport{Index: p.idx, Name: c.Name, Kind: c.Kind}
		s.parts = append(s.parts, p)
	}
	return errors.Join(errs...)
}

// figures fills the report's budget and memory figures from the
// components'.
func (s *session) figures() {
	r := s.rep
	for i := range s.parts {
		f := s.parts[i].fig
		r.Components = append(r.Components, f)
		r.P50, r.P99, r.Max = max(r.P50, f.P50), max(r.P99, f.P99), max(r.Max, f.Max)
		r.MemoryBytes, r.MemoryStartBytes = max(r.MemoryBytes, f.MemoryBytes), max(r.MemoryStartBytes, f.MemoryStartBytes)
	}
}

// fatal reports the errors that are conformance failures wherever they
// happen: a plugin error status is data, these are not.
func fatal(err error) bool {
	return errors.Is(err, pluginhost.ErrTrap) || errors.Is(err, pluginhost.ErrTimeout) ||
		errors.Is(err, pluginhost.ErrProtocol) || errors.Is(err, pluginhost.ErrPoolTimeout)
}
