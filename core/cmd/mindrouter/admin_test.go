package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/accounts"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// cli is a config file for a temporary SQLite store, and the CLI run on it.
type cli struct {
	t      *testing.T
	config string
	db     string
}

func newCLI(t *testing.T, extra string) *cli {
	t.Helper()
	dir := t.TempDir()
	c := &cli{t: t, config: filepath.Join(dir, "mindrouter.yaml"), db: filepath.Join(dir, "data", "mr.db")}
	yaml := fmt.Sprintf("data_dir: %q\nstore:\n  driver: sqlite\n  dsn: data/mr.db\n", dir) + extra
	if err := os.WriteFile(c.config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs `mindrouter admin --config … args…` and returns its output.
func (c *cli) run(args ...string) (string, error) {
	var out bytes.Buffer
	err := runAdmin(context.Background(), append([]string{"--config", c.config}, args...), &out)
	return out.String(), err
}

func (c *cli) ok(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("admin %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (c *cli) json(args ...string) map[string]any {
	c.t.Helper()
	var m map[string]any
	out := c.ok(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		c.t.Fatalf("admin %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return m
}

func (c *cli) fails(want string, args ...string) {
	c.t.Helper()
	out, err := c.run(args...)
	if err == nil || !strings.Contains(err.Error(), want) {
		c.t.Errorf("admin %s: err %v (output %q), want an error containing %q", strings.Join(args, " "), err, out, want)
	}
}

func (c *cli) store() store.Store {
	c.t.Helper()
	st, err := sqlstore.Open(context.Background(), "sqlite", c.db)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { st.Close() })
	return st
}

var keyRE = regexp.MustCompile(`mr2_[A-Za-z0-9_-]{43}`)

func TestAdminCmd_Bootstrap(t *testing.T) {
	c := newCLI(t, "")
	// A fresh store is migrated and seeded on first use.
	if out := c.ok("groups", "list"); !strings.Contains(out, "researchers") || !strings.Contains(out, "NAME") {
		t.Fatalf("groups list:\n%s", out)
	}
	out := c.ok("users", "create", "--username", "ada", "--group", "researchers", "--email", "ada@example.edu", "--rpm", "7")
	if !regexp.MustCompile(`username:\s+ada`).MatchString(out) || !regexp.MustCompile(`rpm_limit_override:\s+7`).MatchString(out) {
		t.Fatalf("users create:\n%s", out)
	}
	out = c.ok("keys", "create", "ada", "--name", "laptop")
	key := keyRE.FindString(out)
	if key == "" || !strings.Contains(out, "shown once") {
		t.Fatalf("keys create printed no key:\n%s", out)
	}
	st := c.store()
	sum := accounts.HashKey([]byte(key))
	cr, err := st.CredentialByHash(context.Background(), sum[:])
	if err != nil || cr.User.Username != "ada" || cr.Key.Scopes != "inference" || cr.Key.ExpiresAt == nil {
		t.Fatalf("the printed key is not ada's stored key: %+v %v", cr.Key, err)
	}

	list := c.json("keys", "list", "--user", "ada")
	raw, _ := json.Marshal(list)
	if bytes.Contains(raw, []byte(key[4:])) || num(list["total"]) != 1 {
		t.Fatalf("keys list: %s", raw)
	}
	if out := c.ok("keys", "list"); !strings.Contains(out, key[:12]) || strings.Contains(out, key) {
		t.Errorf("keys list table:\n%s", out)
	}
	kid := fmt.Sprint(num(list["api_keys"].([]any)[0].(map[string]any)["id"]))
	if r := c.json("keys", "revoke", kid); r["status"] != "revoked" {
		t.Errorf("keys revoke: %v", r)
	}

	u := c.json("users", "update", "ada", "--active=false", "--full-name", "Ada L")
	if u["user"].(map[string]any)["is_active"] != false || u["user"].(map[string]any)["full_name"] != "Ada L" {
		t.Errorf("users update: %v", u)
	}
	if out := c.ok("users", "update", "ada", "--rpm", "default"); !regexp.MustCompile(`rpm_limit_override:\s+-`).MatchString(out) {
		t.Errorf("--rpm default did not clear the override:\n%s", out)
	}
	if out := c.ok("users", "list", "--group", "researchers"); !strings.Contains(out, "ada") || !strings.Contains(out, "(1 in all)") {
		t.Errorf("users list:\n%s", out)
	}

	if q := c.json("quota", "show", "ada"); num(q["tokens_used"]) != 0 || q["token_budget"] == nil {
		t.Errorf("quota show: %v", q)
	}
	if r := c.json("quota", "reset", "ada"); r["status"] != "reset" {
		t.Errorf("quota reset: %v", r)
	}

	b := c.json("backends", "register", "--name", "b1", "--url", "http://10.1.1.1:8000", "--engine", "vllm", "--models", "m1,m2", "--max-concurrent", "8")
	if b["status"] != "enabled" || num(b["max_concurrent"]) != 8 {
		t.Fatalf("backends register: %v", b)
	}
	if _, ok := b["applied"]; ok {
		t.Errorf("the CLI has no live registry, yet: %v", b)
	}
	if r := c.json("backends", "drain", "b1"); r["status"] != "draining" {
		t.Errorf("backends drain: %v", r)
	}
	if out := c.ok("backends", "list"); !strings.Contains(out, "draining") || !strings.Contains(out, "http://10.1.1.1:8000") {
		t.Errorf("backends list:\n%s", out)
	}

	g := c.json("groups", "create", "--name", "lab", "--rpm", "3", "--auditor", "--weight", "1.5")
	if num(g["rpm_limit"]) != 3 || g["is_auditor"] != true || g["scheduler_weight"] != 1.5 {
		t.Errorf("groups create: %v", g)
	}
	if out := c.ok("groups", "update", "lab", "--max-keys", "2"); !regexp.MustCompile(`max_api_keys:\s+2`).MatchString(out) {
		t.Errorf("groups update:\n%s", out)
	}
	c.ok("groups", "delete", "lab")
	c.ok("users", "delete", "ada")

	evs, err := st.AdminEvents(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user.delete", "group.delete", "group.update", "group.create", "backend.drain", "backend.register", "quota.reset",
		"user.update", "user.update", "key.revoke", "key.create", "user.create"}
	var got []string
	for _, e := range evs {
		got = append(got, e.Action)
		if e.ActorKey != "cli" || e.ActorID != 0 || e.RemoteAddr != "local" {
			t.Errorf("event %+v: want actor cli", e)
		}
		if strings.Contains(e.Detail, key[4:]) {
			t.Errorf("the key is in event %s", e.Action)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("audit actions\n got %v\nwant %v", got, want)
	}
}

func TestAdminCmd_Errors(t *testing.T) {
	c := newCLI(t, "")
	c.ok("users", "create", "--username", "bo", "--group", "students")
	c.fails("field group_id: required", "users", "create", "--username", "x")
	c.fails(`no user "nobody"`, "users", "update", "nobody", "--rpm", "1")
	c.fails(`no group "nogroup"`, "groups", "delete", "nogroup")
	c.fails("does not allow the admin scope", "keys", "create", "bo", "--scopes", "admin")
	c.fails(`--rpm: "many" is not an integer`, "users", "update", "bo", "--rpm", "many")
	c.fails("'bo' already exists", "users", "create", "--username", "bo", "--group", "students")
	c.fails("(HTTP 409)", "groups", "delete", "students")
	c.fails(`unknown command "users frob"`, "users", "frob")
	c.fails("need a noun and a verb", "users")
	c.fails("takes 1 argument(s)", "users", "delete")
	c.fails("flag provided but not defined", "groups", "list", "--bogus")
	c.fails("key_id must be a positive integer", "keys", "revoke", "abc")
	if _, err := c.run("users", "frob"); err == nil || !strings.Contains(err.Error(), "usage: mindrouter admin") {
		t.Errorf("a usage error shows the usage: %v", err)
	}
}

func TestMigrateCmd(t *testing.T) {
	c := newCLI(t, "")
	var dry bytes.Buffer
	if err := runMigrate(context.Background(), []string{"--config", c.config, "--dry-run"}, &dry); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^sqlite store at schema version 0; [1-9]\d* migration\(s\) to apply`).MatchString(dry.String()) ||
		!strings.Contains(dry.String(), "-- 0001_") || !strings.Contains(dry.String(), "CREATE TABLE") {
		t.Fatalf("dry run printed %q", dry.String())
	}
	if v, err := c.store().Version(context.Background()); err != nil || v != 0 {
		t.Fatalf("the dry run applied something: version %d %v", v, err)
	}
	for range 2 { // idempotent
		var out bytes.Buffer
		if err := runMigrate(context.Background(), []string{"--config", c.config}, &out); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^sqlite store at schema version [1-9]\d*\n$`).MatchString(out.String()) {
			t.Fatalf("migrate printed %q", out.String())
		}
	}
	st := c.store()
	if v, err := st.Version(context.Background()); err != nil || v < 1 {
		t.Fatalf("version %d %v", v, err)
	}
	dry.Reset()
	if err := runMigrate(context.Background(), []string{"--config", c.config, "--dry-run"}, &dry); err != nil || !strings.Contains(dry.String(), "0 migration(s) to apply") {
		t.Errorf("dry run on a current store: %v %q", err, dry.String())
	}
	if err := runMigrate(context.Background(), []string{"--config", c.config, "extra"}, &bytes.Buffer{}); err == nil {
		t.Error("an extra argument was accepted")
	}
}

// With Redis configured the CLI uses the fleet's quota counters and
// publishes key revocations so running gateways drop them at once.
func TestAdminCmd_Redis(t *testing.T) {
	r := testsvc.StartRedis(t)
	c := newCLI(t, fmt.Sprintf("redis:\n  addr: %s\n  db: %d\n", r.Addr, r.DB))
	c.ok("users", "create", "--username", "cy", "--group", "students")
	out := c.ok("keys", "create", "cy")
	key := keyRE.FindString(out)
	if key == "" {
		t.Fatalf("no key printed:\n%s", out)
	}

	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, DB: r.DB})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // only to detect a hang
	defer cancel()
	sub := rdb.Subscribe(ctx, accounts.Channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription confirmation
		t.Fatal(err)
	}
	list := c.json("keys", "list", "--user", "cy")
	kid := fmt.Sprint(num(list["api_keys"].([]any)[0].(map[string]any)["id"]))
	c.ok("keys", "revoke", kid)
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("no invalidation published: %v", err)
	}
	sum := accounts.HashKey([]byte(key))
	if !strings.Contains(msg.Payload, fmt.Sprintf("%x", sum[:])) {
		t.Errorf("published %q, want the key's hash", msg.Payload)
	}

	if q := c.json("quota", "show", "cy"); num(q["tokens_used"]) != 0 {
		t.Errorf("quota show: %v", q)
	}
	if res := c.json("quota", "reset", "cy"); res["status"] != "reset" {
		t.Errorf("quota reset: %v", res)
	}
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// The commands for nodes, backend updates and deletes, key deletes and the
// admin audit log; the sidecar key comes from a file and is never shown.
func TestAdminCmd_NodesBackendsAuditLog(t *testing.T) {
	c := newCLI(t, "")
	keyFile := filepath.Join(t.TempDir(), "sidecar.key")
	const secret = "sk-sidecar-cli-secret"
	if err := os.WriteFile(keyFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := c.json("nodes", "create", "--name", "gpu1", "--sidecar-url", "http://gpu1:8007", "--sidecar-key-file", keyFile)
	if n["name"] != "gpu1" || n["sidecar_key_set"] != true || n["status"] != "enabled" {
		t.Fatalf("nodes create: %v", n)
	}
	ns, err := c.store().Nodes(context.Background())
	if err != nil || len(ns) != 1 || ns[0].SidecarKey != secret {
		t.Fatalf("stored nodes %+v, %v: want the file's key, trimmed", ns, err)
	}
	if up := c.json("nodes", "update", "gpu1", "--status", "disabled"); up["status"] != "disabled" {
		t.Errorf("nodes update: %v", up)
	}
	c.fails("must be enabled or disabled", "nodes", "update", "gpu1", "--status", "off")
	c.fails("--sidecar-key-file", "nodes", "create", "--name", "gpu2", "--sidecar-key-file", filepath.Join(t.TempDir(), "missing"))
	out := c.ok("nodes", "list")
	if !strings.Contains(out, "gpu1") || !strings.Contains(out, "disabled") || strings.Contains(out, secret) {
		t.Errorf("nodes list:\n%s", out)
	}

	c.json("backends", "register", "--name", "b1", "--url", "http://10.1.1.1:8000", "--engine", "vllm")
	b := c.json("backends", "update", "b1", "--node", "gpu1", "--gpus", "0,1", "--priority", "3", "--url", "http://10.1.1.2:8000")
	if num(b["node_id"]) != num(n["id"]) || num(b["priority"]) != 3 || b["url"] != "http://10.1.1.2:8000" || fmt.Sprint(b["gpu_indices"]) != "[0 1]" {
		t.Errorf("backends update: %v", b)
	}
	c.fails(`no node "gpu9"`, "backends", "update", "b1", "--node", "gpu9")
	c.fails(`--gpus: "x" is not a list of integers`, "backends", "update", "b1", "--gpus", "x")
	c.fails("Remove backends first", "nodes", "delete", "gpu1") // b1 sits on it
	if b := c.json("backends", "update", "b1", "--node", "none"); b["node_id"] != nil {
		t.Errorf("backends update --node none: %v", b)
	}
	if r := c.json("nodes", "delete", "gpu1"); r["status"] != "deleted" {
		t.Errorf("nodes delete: %v", r)
	}
	if r := c.json("backends", "delete", "b1"); r["status"] != "deleted" {
		t.Errorf("backends delete: %v", r)
	}
	c.fails(`no backend "b1"`, "backends", "delete", "b1")

	c.ok("users", "create", "--username", "kai", "--group", "staff")
	k := c.json("keys", "create", "kai")
	kid := fmt.Sprint(num(k["id"]))
	if r := c.json("keys", "delete", kid); r["status"] != "deleted" {
		t.Errorf("keys delete: %v", r)
	}
	c.fails("(HTTP 404)", "keys", "delete", kid)

	// The audit log, newest first: the key's delete, then its creation.
	log := c.json("audit-log", "--limit", "2")
	evs, _ := log["events"].([]any)
	if len(evs) != 2 || evs[0].(map[string]any)["action"] != "key.delete" || evs[1].(map[string]any)["action"] != "key.create" ||
		evs[0].(map[string]any)["actor_key"] != "cli" {
		t.Errorf("audit-log --limit 2: %v", log)
	}
	out = c.ok("audit-log", "--limit", "50")
	for _, action := range []string{"node.register", "node.update", "node.delete", "backend.update", "backend.delete", "user.create"} {
		if !strings.Contains(out, action) {
			t.Errorf("audit-log lacks %s:\n%s", action, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("audit-log shows the sidecar key:\n%s", out)
	}
	c.fails("takes 0 argument(s)", "audit-log", "extra")
}

// TestAdminCmd_ModelAccess: --models sets a group's allowlist and a
// user's override; "default" returns the user to the group's list.
func TestAdminCmd_ModelAccess(t *testing.T) {
	c := newCLI(t, "")
	g := c.json("groups", "create", "--name", "lab", "--models", "llama3*, openai/*")
	if fmt.Sprint(g["model_access"]) != "[llama3* openai/*]" {
		t.Fatalf("groups create --models: %v", g["model_access"])
	}
	u := c.json("users", "create", "--username", "kim", "--group", "lab", "--models", "qwen3*")
	if fmt.Sprint(u["model_access"]) != "[qwen3*]" {
		t.Fatalf("users create --models: %v", u["model_access"])
	}
	all := c.json("users", "update", "kim", "--models", "")
	if user, _ := all["user"].(map[string]any); user == nil || fmt.Sprint(user["model_access"]) != "[]" {
		t.Fatalf("users update --models '': %v", all)
	}
	back := c.json("users", "update", "kim", "--models", "default")
	if user, _ := back["user"].(map[string]any); user == nil || user["model_access"] != nil {
		t.Fatalf("users update --models default: %v", back)
	}
	c.fails("model_access: pattern 0: must not contain spaces", "groups", "update", "lab", "--models", "a\tb")
}

// users import reads a CSV file and imports it through the API's route:
// the dry run creates nothing, a refused line refuses the whole file.
func TestAdminCmd_UsersImport(t *testing.T) {
	c := newCLI(t, "")
	csv := filepath.Join(t.TempDir(), "users.csv")
	if err := os.WriteFile(csv, []byte("username,email,group,rpm_limit_override\nzoe,zoe@example.edu,students,5\nyan,yan@example.edu,staff,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("users", "import", csv, "--dry-run"); strings.Count(out, " ok ") != 2 || !strings.Contains(out, "(2 in all)") {
		t.Fatalf("dry run:\n%s", out)
	}
	if out := c.ok("users", "list", "--search", "zoe"); strings.Contains(out, "zoe@") {
		t.Fatalf("a dry run created zoe:\n%s", out)
	}
	if out := c.ok("users", "import", csv); strings.Count(out, "created") != 2 {
		t.Fatalf("import:\n%s", out)
	}
	if out := c.ok("users", "list", "--search", "zoe"); !strings.Contains(out, "zoe@example.edu") {
		t.Fatalf("zoe not created:\n%s", out)
	}
	c.fails("2 of 2 lines refused, nothing was created: line 2: Username 'zoe' already exists", "users", "import", csv)
	c.fails("read the CSV file", "users", "import", filepath.Join(t.TempDir(), "missing.csv"))
}
