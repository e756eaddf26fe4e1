package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/core/redisconn"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

const adminUsage = `usage: mindrouter admin [--config FILE] [--json] <noun> <verb> [flags]

Works directly on the store named by the config (default: the SQLite file
data/mindrouter.db), so it bootstraps accounts before any key exists. Every
change is validated as the admin API validates it and recorded in the admin
audit log with actor "cli". --json prints the API's JSON instead of a table.

  users list     [--group NAME] [--search TEXT] [--skip N] [--limit N]
  users create   --username NAME --group NAME [--email E] [--full-name F]
                 [--token-budget N] [--rpm N] [--max-concurrent N] [--weight W]
                 [--models 'llama3*,openai/*']   (a model allowlist replacing the group's)
  users update   USER [--username] [--email] [--full-name] [--group] [--active=BOOL]
                 [--token-budget N|default] [--rpm N|default] [--max-concurrent N|default]
                 [--weight W|default] [--models PATTERNS|default]
                 (default: back to the group's value; --models '' allows every model)
  users delete   USER
  users import   FILE.csv [--dry-run]
                 columns username,email,group (required), full_name, is_active and the
                 *_override columns, model_access; nothing is created if a line is refused
                 (--dry-run shows every line's result; docs/admin-api.md, Bulk import)
  keys create    USER [--name NAME] [--scopes inference,admin,audit] [--expires TIME|never]
  keys import    USER --prefix mr2_XXXXXXXX --hash '$argon2id$…' [--name NAME] [--scopes …] [--expires …]
                 a key from another system (the reference's api_keys row), kept as Argon2id
                 prints the key once: it is stored only as a hash
  keys list      [--user USER] [--status active|revoked|expired] [--search TEXT]
  keys revoke    KEY_ID
  keys delete    KEY_ID
  groups list
  groups create  --name NAME [--description D] [--token-budget N] [--period-days N] [--rpm N]
                 [--max-concurrent N] [--weight W] [--admin] [--auditor]
                 [--key-expiry-days N] [--max-keys N]
                 [--models 'llama3*,openai/*']   (model allowlist; '' or default: every model)
  groups update  GROUP [the create flags]
  groups delete  GROUP
  quota show     USER
  quota reset    USER
  backends list
  backends register --name NAME --url URL --engine vllm|ollama|… [--max-concurrent N]
                 [--priority N] [--models a,b] [--upsert]
  backends update BACKEND [--name] [--url] [--engine] [--max-concurrent N] [--priority N]
                 [--models a,b] [--node NODE|none] [--gpus 0,1|none]
  backends delete BACKEND
  backends enable|disable|drain BACKEND
                 (refresh probes a backend: only a running gateway can, through
                 POST /api/admin/backends/{id}/refresh)
  nodes list
  nodes create   --name NAME [--sidecar-url URL] [--sidecar-key-file FILE]
  nodes update   NODE [--name] [--sidecar-url URL] [--sidecar-key-file FILE] [--status enabled|disabled]
  nodes delete   NODE
                 the sidecar key is read from a file, never from the command line
  audit-log      [--limit N] [--skip N]   the admin audit log, newest first

USER, GROUP, BACKEND and NODE are an id or a name; TIME is RFC 3339.

Quota counters: with redis.addr configured, quota show and reset read and
reset the fleet-wide counters in Redis (and the store); without Redis they
read and reset the store's usage row, which a running gateway without
Redis overwrites at its next persist (reset it through the admin API
instead). With Redis, key and user changes are also published so running
gateways drop cached keys at once; without it they re-read within 1 s.
Backend changes reach the store; a running gateway applies them when it
next loads backends from the store (the admin API applies them at once).`

// cliPrincipal is the CLI's identity in the admin audit log.
var cliPrincipal = auth.Principal{KeyID: "cli", User: "cli", Scopes: auth.ScopeInference | auth.ScopeAdmin | auth.ScopeAudit, Admin: true}

// adminCmd runs `mindrouter admin …`.
func adminCmd(args []string) error {
	return runAdmin(context.Background(), args, os.Stdout)
}

func runAdmin(ctx context.Context, args []string, out io.Writer) error {
	gf := flag.NewFlagSet("admin", flag.ContinueOnError)
	gf.SetOutput(io.Discard)
	cfgPath := gf.String("config", "", "gateway config file (YAML); empty: embedded defaults")
	asJSON := gf.Bool("json", false, "print JSON")
	if err := gf.Parse(args); err != nil {
		return usageErr(err)
	}
	rest := gf.Args()
	name, rest, err := commandName(rest)
	if err != nil {
		return usageErr(err)
	}
	cmd := adminCommands[name]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(asJSON, "json", *asJSON, "print JSON")
	vals := cmd.flags.register(fs)
	// Positional arguments may come before, between or after the flags.
	var pos []string
	for rem := rest; ; rem = fs.Args()[1:] {
		if err := fs.Parse(rem); err != nil {
			return usageErr(err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
	}
	if len(pos) != cmd.args {
		return usageErr(fmt.Errorf("%s takes %d argument(s), got %d", name, cmd.args, len(pos)))
	}

	body := vals.set(fs)
	if bad, ok := body[""].(error); ok {
		return usageErr(bad)
	}
	a, err := openAdmin(ctx, *cfgPath)
	if err != nil {
		return err
	}
	defer a.close()
	req, err := cmd.build(ctx, a, pos, body)
	if err != nil {
		return err
	}
	req.RemoteAddr = "local"
	status, resp := a.h.Do(ctx, &cliPrincipal, req)
	if status != 200 {
		var d struct{ Detail string }
		_ = json.Unmarshal(resp, &d)
		return fmt.Errorf("%s: %s (HTTP %d)", name, d.Detail, status)
	}
	if *asJSON {
		var buf bytes.Buffer
		if err := json.Indent(&buf, resp, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := out.Write(buf.Bytes())
		return err
	}
	return cmd.show(out, resp)
}

// commandName finds the command that args start with: a noun and a verb,
// or a noun alone (audit-log); it returns the arguments after it.
func commandName(args []string) (string, []string, error) {
	if len(args) > 0 {
		if _, ok := adminCommands[args[0]]; ok {
			return args[0], args[1:], nil
		}
	}
	if len(args) < 2 {
		return "", nil, errors.New("need a noun and a verb")
	}
	name := args[0] + " " + args[1]
	if _, ok := adminCommands[name]; !ok {
		return "", nil, fmt.Errorf("unknown command %q", name)
	}
	return name, args[2:], nil
}

func usageErr(err error) error {
	return fmt.Errorf("admin: %w\n\n%s", err, adminUsage)
}

// adminEnv is the store and the components the CLI's Handler works with.
type adminEnv struct {
	st  store.Store
	rdb *redis.Client
	h   *admin.Handler
}

func (a *adminEnv) close() {
	if a.rdb != nil {
		_ = a.rdb.Close()
	}
	_ = a.st.Close()
}

func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Default(), nil
	}
	return config.Load(path)
}

func openStore(ctx context.Context, cfg *config.Config) (*sqlstore.Store, error) {
	st, err := sqlstore.Open(ctx, cfg.Store.Driver, cfg.StoreDSN())
	if err != nil {
		return nil, err
	}
	return st, nil
}

func openAdmin(ctx context.Context, cfgPath string) (*adminEnv, error) {
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a := &adminEnv{st: st}
	if cfg.MigrateOnStart() {
		if err := st.Migrate(ctx); err != nil {
			a.close()
			return nil, fmt.Errorf("migrate store: %w", err)
		}
	}
	if cfg.SeedGroups() {
		if err := st.SeedGroups(ctx); err != nil {
			a.close()
			return nil, fmt.Errorf("seed groups: %w", err)
		}
	}
	log := slog.New(logredact.Handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	opts := admin.Options{Store: st, Log: log}
	if cfg.RedisOn() {
		to := time.Duration(cfg.Redis.Timeout)
		a.rdb = redisconn.New(cfg.Redis, redisconn.Timeouts{Dial: 5 * to, Command: to})
		opts.Quotas = quota.New(quota.Options{Redis: a.rdb, Store: st, Log: log})
		opts.Keys = accounts.New(accounts.Options{Store: st, Redis: a.rdb, Log: log})
	}
	a.h = admin.New(opts)
	return a, nil
}

// migrateCmd runs `mindrouter migrate [--config FILE]`.
func printPending(ctx context.Context, st *sqlstore.Store, driver string, out io.Writer) error {
	v, err := st.Version(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	ps, err := st.Pending(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s store at schema version %d; %d migration(s) to apply (dry run: nothing applied)\n", driver, v, len(ps))
	for _, p := range ps {
		fmt.Fprintf(out, "-- %s\n", p.Name)
		for _, stmt := range p.Statements {
			fmt.Fprintf(out, "%s;\n", stmt)
		}
	}
	return nil
}

func migrateCmd(args []string) error {
	return runMigrate(context.Background(), args, os.Stdout)
}

func runMigrate(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgPath := fs.String("config", "", "gateway config file (YAML); empty: embedded defaults")
	dryRun := fs.Bool("dry-run", false, "print the migrations the store lacks, with their statements; apply nothing")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return errors.New("usage: mindrouter migrate [--config FILE] [--dry-run]")
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if *dryRun {
		return printPending(ctx, st, cfg.Store.Driver, out)
	}
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate %s store: %w", cfg.Store.Driver, err)
	}
	v, err := st.Version(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	_, err = fmt.Fprintf(out, "%s store at schema version %d\n", cfg.Store.Driver, v)
	return err
}

// Commands.

type adminCommand struct {
	args  int // positional arguments
	flags fieldSpecs
	build func(ctx context.Context, a *adminEnv, args []string, body map[string]any) (admin.Request, error)
	show  func(out io.Writer, body []byte) error
}

var adminCommands = map[string]adminCommand{
	"users list": {flags: fieldSpecs{{"group", "", "string"}, {"search", "", "string"}, {"skip", "", "string"}, {"limit", "", "string"}},
		build: func(ctx context.Context, a *adminEnv, _ []string, q map[string]any) (admin.Request, error) {
			v := url.Values{}
			for k, x := range q {
				v.Set(k, x.(string))
			}
			if g := v.Get("group"); g != "" {
				id, err := groupID(ctx, a.st, g)
				if err != nil {
					return admin.Request{}, err
				}
				v.Del("group")
				v.Set("group_id", itoa(id))
			}
			return admin.Request{Method: "GET", Path: "/api/admin/users", Query: v}, nil
		},
		show: showList("users", []string{"id", "username", "email", "group_name", "is_active"})},
	"users create": {flags: userFlags, build: post("/api/admin/users"), show: showObject},
	"users update": {args: 1, flags: userFlags,
		build: func(ctx context.Context, a *adminEnv, args []string, body map[string]any) (admin.Request, error) {
			id, err := userID(ctx, a.st, args[0])
			return jsonReq("PATCH", "/api/admin/users/"+itoa(id), body), err
		}, show: showPath("user")},
	"users delete": {args: 1, build: onUser("DELETE", "/api/admin/users/%d"), show: showObject},
	"users import": {args: 1, flags: fieldSpecs{{"dry-run", "dry_run", "bool"}},
		build: func(_ context.Context, _ *adminEnv, args []string, f map[string]any) (admin.Request, error) {
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return admin.Request{}, fmt.Errorf("read the CSV file: %w", err)
			}
			q := url.Values{}
			if f["dry_run"] == true {
				q.Set("dry_run", "1")
			}
			return admin.Request{Method: "POST", Path: "/api/admin/users/import", Query: q, Body: raw}, nil
		},
		show: showList("lines", []string{"line", "username", "group", "status", "user_id", "error"})},
	"keys create": {args: 1, flags: fieldSpecs{{"name", "name", "string"}, {"scopes", "scopes", "csv"}, {"expires", "expires_at", "time"}},
		build: func(ctx context.Context, a *adminEnv, args []string, body map[string]any) (admin.Request, error) {
			id, err := userID(ctx, a.st, args[0])
			if _, ok := body["name"]; !ok {
				body["name"] = "cli"
			}
			return jsonReq("POST", fmt.Sprintf("/api/admin/users/%d/api-keys", id), body), err
		}, show: showNewKey},
	"keys import": {args: 1, flags: fieldSpecs{{"name", "name", "string"}, {"prefix", "key_prefix", "string"}, {"hash", "key_hash", "string"},
		{"scopes", "scopes", "csv"}, {"expires", "expires_at", "time"}},
		build: func(ctx context.Context, a *adminEnv, args []string, body map[string]any) (admin.Request, error) {
			id, err := userID(ctx, a.st, args[0])
			if _, ok := body["name"]; !ok {
				body["name"] = "imported"
			}
			return jsonReq("POST", fmt.Sprintf("/api/admin/users/%d/api-keys/import", id), body), err
		}, show: showObject},
	"keys list": {flags: fieldSpecs{{"user", "", "string"}, {"status", "", "string"}, {"search", "", "string"}, {"skip", "", "string"}, {"limit", "", "string"}},
		build: func(ctx context.Context, a *adminEnv, _ []string, q map[string]any) (admin.Request, error) {
			v := url.Values{"limit": {"1000"}}
			for k, x := range q {
				v.Set(k, x.(string))
			}
			if u := v.Get("user"); u != "" {
				id, err := userID(ctx, a.st, u)
				if err != nil {
					return admin.Request{}, err
				}
				v.Del("user")
				v.Set("user_id", itoa(id))
			}
			return admin.Request{Method: "GET", Path: "/api/admin/api-keys", Query: v}, nil
		},
		show: showList("api_keys", []string{"id", "key_prefix", "name", "username", "status", "scopes", "expires_at", "last_used_at"})},
	"keys revoke": {args: 1, build: func(_ context.Context, _ *adminEnv, args []string, _ map[string]any) (admin.Request, error) {
		return admin.Request{Method: "POST", Path: "/api/admin/api-keys/" + args[0] + "/revoke"}, nil
	}, show: showObject},
	"keys delete": {args: 1, build: func(_ context.Context, _ *adminEnv, args []string, _ map[string]any) (admin.Request, error) {
		return admin.Request{Method: "DELETE", Path: "/api/admin/api-keys/" + args[0]}, nil
	}, show: showObject},
	"groups list": {build: get("/api/admin/groups"), show: showList("groups", []string{"id", "name", "token_budget", "budget_period_days", "rpm_limit",
		"max_concurrent", "scheduler_weight", "is_admin", "is_auditor", "api_key_expiry_days", "max_api_keys", "model_access", "user_count"})},
	"groups create": {flags: groupFlags, build: post("/api/admin/groups"), show: showObject},
	"groups update": {args: 1, flags: groupFlags,
		build: func(ctx context.Context, a *adminEnv, args []string, body map[string]any) (admin.Request, error) {
			id, err := groupID(ctx, a.st, args[0])
			return jsonReq("PATCH", "/api/admin/groups/"+itoa(id), body), err
		}, show: showPath("group")},
	"groups delete": {args: 1, build: func(ctx context.Context, a *adminEnv, args []string, _ map[string]any) (admin.Request, error) {
		id, err := groupID(ctx, a.st, args[0])
		return admin.Request{Method: "DELETE", Path: "/api/admin/groups/" + itoa(id)}, err
	}, show: showObject},
	"quota show":    {args: 1, build: onUser("GET", "/api/admin/quotas/%d"), show: showObject},
	"quota reset":   {args: 1, build: onUser("POST", "/api/admin/quotas/%d/reset"), show: showObject},
	"backends list": {build: get("/api/admin/backends"), show: showArray([]string{"id", "name", "engine", "url", "status", "max_concurrent", "priority", "from_config"})},
	"backends register": {flags: fieldSpecs{{"name", "name", "string"}, {"url", "url", "string"}, {"engine", "engine", "string"},
		{"max-concurrent", "max_concurrent", "int"}, {"priority", "priority", "int"}, {"models", "models", "csv"}, {"upsert", "upsert", "bool"}},
		build: post("/api/admin/backends/register"), show: showObject},
	"backends enable":  {args: 1, build: onBackend("enable"), show: showObject},
	"backends disable": {args: 1, build: onBackend("disable"), show: showObject},
	"backends drain":   {args: 1, build: onBackend("drain"), show: showObject},
	"backends update": {args: 1, flags: fieldSpecs{{"name", "name", "string"}, {"url", "url", "string"}, {"engine", "engine", "string"},
		{"max-concurrent", "max_concurrent", "int"}, {"priority", "priority", "int"}, {"models", "models", "csv"},
		{"node", "node_id", "string"}, {"gpus", "gpu_indices", "ints"}},
		build: func(ctx context.Context, a *adminEnv, args []string, body map[string]any) (admin.Request, error) {
			id, err := backendID(ctx, a.st, args[0])
			if err != nil {
				return admin.Request{}, err
			}
			if ref, ok := body["node_id"].(string); ok {
				if body["node_id"], err = nodeRef(ctx, a.st, ref); err != nil {
					return admin.Request{}, err
				}
			}
			return jsonReq("PATCH", "/api/admin/backends/"+itoa(id), body), nil
		}, show: showObject},
	"backends delete": {args: 1, build: func(ctx context.Context, a *adminEnv, args []string, _ map[string]any) (admin.Request, error) {
		id, err := backendID(ctx, a.st, args[0])
		return admin.Request{Method: "DELETE", Path: "/api/admin/backends/" + itoa(id)}, err
	}, show: showObject},
	"nodes list":   {build: get("/api/admin/nodes"), show: showArray([]string{"id", "name", "sidecar_url", "sidecar_key_set", "status", "from_config"})},
	"nodes create": {flags: nodeFlags, build: post("/api/admin/nodes"), show: showObject},
	"nodes update": {args: 1, flags: append(nodeFlags[:len(nodeFlags):len(nodeFlags)], fieldSpec{"status", "status", "string"}),
		build: func(ctx context.Context, a *adminEnv, args []string, body map[string]any) (admin.Request, error) {
			id, err := nodeID(ctx, a.st, args[0])
			return jsonReq("PATCH", "/api/admin/nodes/"+itoa(id), body), err
		}, show: showObject},
	"nodes delete": {args: 1, build: func(ctx context.Context, a *adminEnv, args []string, _ map[string]any) (admin.Request, error) {
		id, err := nodeID(ctx, a.st, args[0])
		return admin.Request{Method: "DELETE", Path: "/api/admin/nodes/" + itoa(id)}, err
	}, show: showObject},
	"audit-log": {flags: fieldSpecs{{"limit", "", "string"}, {"skip", "", "string"}},
		build: func(_ context.Context, _ *adminEnv, _ []string, q map[string]any) (admin.Request, error) {
			v := url.Values{}
			for k, x := range q {
				v.Set(k, x.(string))
			}
			return admin.Request{Method: "GET", Path: "/api/admin/audit/admin", Query: v}, nil
		},
		show: showList("events", []string{"id", "timestamp", "actor_key", "user_id", "action", "entity_type", "entity_id", "detail"})},
}

// nodeFlags: the sidecar key comes from a file (--sidecar-key-file), so it
// never shows in a process listing or a shell's history.
var nodeFlags = fieldSpecs{{"name", "name", "string"}, {"sidecar-url", "sidecar_url", "string"}, {"sidecar-key-file", "sidecar_key", "file"}}

var userFlags = fieldSpecs{
	{"username", "username", "string"}, {"email", "email", "string"}, {"full-name", "full_name", "string"},
	{"group", "group", "string"}, {"active", "is_active", "bool"},
	{"token-budget", "token_budget_override", "nullint"}, {"rpm", "rpm_limit_override", "nullint"},
	{"max-concurrent", "max_concurrent_override", "nullint"}, {"weight", "weight_override", "nullfloat"},
	{"models", "model_access", "patterns"},
}

var groupFlags = fieldSpecs{
	{"name", "name", "string"}, {"description", "description", "string"}, {"token-budget", "token_budget", "int"},
	{"period-days", "budget_period_days", "int"}, {"rpm", "rpm_limit", "int"}, {"max-concurrent", "max_concurrent", "int"},
	{"weight", "scheduler_weight", "float"}, {"admin", "is_admin", "bool"}, {"auditor", "is_auditor", "bool"},
	{"key-expiry-days", "api_key_expiry_days", "int"}, {"max-keys", "max_api_keys", "int"},
	{"models", "model_access", "patterns"},
}

func get(path string) func(context.Context, *adminEnv, []string, map[string]any) (admin.Request, error) {
	return func(context.Context, *adminEnv, []string, map[string]any) (admin.Request, error) {
		return admin.Request{Method: "GET", Path: path}, nil
	}
}

func post(path string) func(context.Context, *adminEnv, []string, map[string]any) (admin.Request, error) {
	return func(_ context.Context, _ *adminEnv, _ []string, body map[string]any) (admin.Request, error) {
		return jsonReq("POST", path, body), nil
	}
}

func onUser(method, pathf string) func(context.Context, *adminEnv, []string, map[string]any) (admin.Request, error) {
	return func(ctx context.Context, a *adminEnv, args []string, _ map[string]any) (admin.Request, error) {
		id, err := userID(ctx, a.st, args[0])
		return admin.Request{Method: method, Path: fmt.Sprintf(pathf, id)}, err
	}
}

func onBackend(verb string) func(context.Context, *adminEnv, []string, map[string]any) (admin.Request, error) {
	return func(ctx context.Context, a *adminEnv, args []string, _ map[string]any) (admin.Request, error) {
		id, err := backendID(ctx, a.st, args[0])
		return admin.Request{Method: "POST", Path: fmt.Sprintf("/api/admin/backends/%d/%s", id, verb)}, err
	}
}

func jsonReq(method, path string, body map[string]any) admin.Request {
	raw, _ := json.Marshal(body) // a map of strings, numbers, bools: cannot fail
	return admin.Request{Method: method, Path: path, Body: raw}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// References by id or name.

func userID(ctx context.Context, st store.Store, ref string) (int64, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		return id, nil
	}
	u, err := st.UserByName(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("no user %q", ref)
	}
	return u.ID, err
}

func groupID(ctx context.Context, st store.Store, ref string) (int64, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		return id, nil
	}
	g, err := st.GroupByName(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("no group %q", ref)
	}
	return g.ID, err
}

func nodeID(ctx context.Context, st store.Store, ref string) (int64, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		return id, nil
	}
	ns, err := st.Nodes(ctx)
	if err != nil {
		return 0, err
	}
	for _, n := range ns {
		if n.Name == ref {
			return n.ID, nil
		}
	}
	return 0, fmt.Errorf("no node %q", ref)
}

// nodeRef is a backend's node_id for --node: an id, a name, or "none"
// (JSON null: the backend on no node).
func nodeRef(ctx context.Context, st store.Store, ref string) (any, error) {
	if ref == "none" {
		return nil, nil
	}
	return nodeID(ctx, st, ref)
}

func backendID(ctx context.Context, st store.Store, ref string) (int64, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		return id, nil
	}
	bs, err := st.Backends(ctx)
	if err != nil {
		return 0, err
	}
	for _, b := range bs {
		if b.Name == ref {
			return b.ID, nil
		}
	}
	return 0, fmt.Errorf("no backend %q", ref)
}

// Flags: each becomes a JSON field (or, for lists, a query parameter named
// like the flag) only when given on the command line.

type fieldSpec struct {
	flag, field, kind string // kind: string, int, float, bool, csv, ints, time, file, nullint, nullfloat
}

type fieldSpecs []fieldSpec

type flagValues struct {
	specs fieldSpecs
	str   map[string]*string
	bools map[string]*bool
}

func (s fieldSpecs) register(fs *flag.FlagSet) *flagValues {
	v := &flagValues{specs: s, str: map[string]*string{}, bools: map[string]*bool{}}
	for _, f := range s {
		if f.kind == "bool" {
			v.bools[f.flag] = fs.Bool(f.flag, false, f.field)
		} else {
			v.str[f.flag] = fs.String(f.flag, "", f.field)
		}
	}
	return v
}

// set converts the flags given to the JSON body (or query) they stand for.
// A conversion error is returned as the value of the key "", checked by
// the caller below.
func (v *flagValues) set(fs *flag.FlagSet) map[string]any {
	body := map[string]any{}
	fs.Visit(func(f *flag.Flag) {
		for _, s := range v.specs {
			if s.flag != f.Name {
				continue
			}
			key := s.field
			if key == "" {
				key = s.flag
			}
			if s.kind == "bool" {
				body[key] = *v.bools[s.flag]
				continue
			}
			val, err := convert(s, *v.str[s.flag])
			if err != nil {
				body[""] = err
				return
			}
			body[key] = val
		}
	})
	return body
}

func convert(s fieldSpec, raw string) (any, error) {
	if (s.kind == "nullint" || s.kind == "nullfloat") && raw == "default" {
		return nil, nil
	}
	switch s.kind {
	case "int", "nullint":
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--%s: %q is not an integer", s.flag, raw)
		}
		return n, nil
	case "float", "nullfloat":
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("--%s: %q is not a number", s.flag, raw)
		}
		return f, nil
	case "patterns":
		// A model allowlist: "default" is null (a user back to the
		// group's list, a group to every model), "" an empty list.
		if raw == "default" {
			return nil, nil
		}
		out := []string{}
		for p := range strings.SplitSeq(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	case "csv":
		var out []string
		for p := range strings.SplitSeq(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	case "ints":
		if raw == "none" {
			return nil, nil
		}
		out := []int{}
		for p := range strings.SplitSeq(raw, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				return nil, fmt.Errorf("--%s: %q is not a list of integers", s.flag, raw)
			}
			out = append(out, n)
		}
		return out, nil
	case "file":
		// The content (a secret), never the path's bytes, is the value;
		// errors name the file only.
		b, err := os.ReadFile(raw)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", s.flag, err)
		}
		return strings.TrimSpace(string(b)), nil
	case "time":
		if raw == "never" {
			return nil, nil
		}
		return raw, nil
	}
	return raw, nil
}

// Output.

func showObject(out io.Writer, body []byte) error {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(tw, "%s:\t%s\n", k, cell(m[k]))
	}
	return tw.Flush()
}

// showPath shows the object under key (an update's "user" or "group").
func showPath(key string) func(io.Writer, []byte) error {
	return func(out io.Writer, body []byte) error {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return err
		}
		if inner, ok := m[key]; ok {
			return showObject(out, inner)
		}
		return showObject(out, body)
	}
}

func showNewKey(out io.Writer, body []byte) error {
	var k struct {
		ID        int64    `json:"id"`
		FullKey   string   `json:"full_key"`
		KeyPrefix string   `json:"key_prefix"`
		Name      string   `json:"name"`
		Scopes    []string `json:"scopes"`
		ExpiresAt *string  `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &k); err != nil {
		return err
	}
	exp := "never"
	if k.ExpiresAt != nil {
		exp = *k.ExpiresAt
	}
	_, err := fmt.Fprintf(out, "API key (shown once; only its hash is kept):\n\n    %s\n\nid %d, prefix %s, name %q, scopes %s, expires %s\n",
		k.FullKey, k.ID, k.KeyPrefix, k.Name, strings.Join(k.Scopes, ","), exp)
	return err
}

func showList(key string, cols []string) func(io.Writer, []byte) error {
	return func(out io.Writer, body []byte) error {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return err
		}
		if err := showArray(cols)(out, m[key]); err != nil {
			return err
		}
		if t, ok := m["total"]; ok {
			_, err := fmt.Fprintf(out, "(%s in all)\n", t)
			return err
		}
		return nil
	}
}

func showArray(cols []string) func(io.Writer, []byte) error {
	return func(out io.Writer, body []byte) error {
		var rows []map[string]any
		if err := json.Unmarshal(body, &rows); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		head := make([]string, len(cols))
		for i, c := range cols {
			head[i] = strings.ToUpper(c)
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, r := range rows {
			line := make([]string, len(cols))
			for i, c := range cols {
				line[i] = cell(r[c])
			}
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
		return tw.Flush()
	}
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = cell(p)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		raw, _ := json.Marshal(x)
		return string(raw)
	}
	return fmt.Sprint(v)
}
