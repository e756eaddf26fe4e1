package console_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/telemetry"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// api calls the gateway's HTTP API with key and decodes a JSON answer.
func api(t *testing.T, e *env, key, method, path, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// An administrator sees the requests waiting for a saturated backend on
// the queue page, with who waits and for how long.
func TestConsoleAdmin_Queue(t *testing.T) {
	// Every slot of gpu1 (8) held for 6 s: four more requests wait.
	e := startEnv(t, fakellm.Config{TTFT: 6 * time.Second}, "")
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = e.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: testModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("wait for it")}})
		}()
	}
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	if !waitText(t, tab, e.console("admin/queue"), `section[data-model="`+testModel+`"] tr.waiter`) {
		t.Fatalf("no waiter on the queue page:\n%s", pageDump(tab))
	}
	if s := text(t, tab, "#backend-slots"); !strings.Contains(s, "8 / 8") {
		t.Errorf("backend slots do not show gpu1 full: %q", s)
	}
	if s := text(t, tab, "#fair-share"); !strings.Contains(s, "admin") {
		t.Errorf("fair share lacks the admin group: %q", s)
	}
	screenshot(t, tab, "admin-queue")
}

// A CSV import through the users page: the dry run reports every line and
// creates nothing, the import creates the users.
func TestConsoleAdmin_CSVImport(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, "")
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	csv := "username,email,group,rpm_limit_override\\nada,ada@example.edu,students,7\\nbob,bob@example.edu,staff,\\n"
	run(t, tab,
		chromedp.Navigate(e.console("admin/users")),
		chromedp.WaitVisible(chromedp.ID("import-users")),
		// SendKeys cannot type a newline into a textarea reliably: set it.
		chromedp.Evaluate[chromedp.Void](`document.getElementById('import-csv').value = "`+csv+`"`),
		chromedp.Click(chromedp.ID("import-check")),
		chromedp.WaitVisible(chromedp.ID("import-result")),
	)
	if s := text(t, tab, "#import-result"); !strings.Contains(s, "Dry run: 2 of 2 lines would be created") {
		t.Fatalf("dry run: %q", s)
	}
	var list struct {
		Total int `json:"total"`
	}
	api(t, e, adminKey, "GET", "/api/admin/users?search=ada", "", &list)
	if list.Total != 0 {
		t.Fatalf("the dry run created ada")
	}
	screenshot(t, tab, "admin-users-import")
	run(t, tab, chromedp.Click(chromedp.ID("import-run")))
	waitJS(t, tab, `(document.getElementById('import-result') || {}).textContent.includes('users created')`)
	if s := text(t, tab, "#import-result"); !strings.Contains(s, "2 of 2 users created") {
		t.Fatalf("import: %q", s)
	}
	var users struct {
		Users []struct {
			Username string `json:"username"`
			Group    string `json:"group_name"`
			RPM      *int   `json:"rpm_limit_override"`
		} `json:"users"`
	}
	api(t, e, adminKey, "GET", "/api/admin/users?search=example.edu", "", &users)
	got := map[string]string{}
	for _, u := range users.Users {
		got[u.Username] = u.Group
		if u.Username == "ada" && (u.RPM == nil || *u.RPM != 7) {
			t.Errorf("ada's rpm override: %v", u.RPM)
		}
	}
	if got["ada"] != "students" || got["bob"] != "staff" {
		t.Fatalf("users after the import: %v", got)
	}
	if s := text(t, tab, "#users"); !strings.Contains(s, "ada") || !strings.Contains(s, "bob") {
		t.Errorf("the users list after the import: %q", s)
	}
	// The same file again: refused as a whole, nothing changes.
	run(t, tab,
		chromedp.Evaluate[chromedp.Void](`document.getElementById('import-csv').value = "`+csv+`"`),
		chromedp.Click(chromedp.ID("import-run")),
	)
	waitJS(t, tab, `!!document.getElementById('error')`)
	if s := text(t, tab, "#error"); !strings.Contains(s, "nothing was created") || !strings.Contains(s, "already exists") {
		t.Errorf("re-import: %q", s)
	}
}

// An allowlist set on the groups page hides a model from the group's
// users in every dialect's model list, and calling it is a 404.
func TestConsoleAdmin_GroupAllowlist(t *testing.T) {
	const other = "llama3-8b"
	e := startEnv(t, fakellm.Config{Models: []string{testModel, other}}, "")
	var u struct {
		ID int64 `json:"id"`
	}
	if st := api(t, e, adminKey, "POST", "/api/admin/users", `{"username":"stu","group":"students"}`, &u); st != 200 {
		t.Fatalf("create stu: %d", st)
	}
	var k struct {
		FullKey string `json:"full_key"`
	}
	if st := api(t, e, adminKey, "POST", "/api/admin/users/"+itoa(u.ID)+"/api-keys", `{"name":"k"}`, &k); st != 200 {
		t.Fatalf("key for stu: %d", st)
	}
	lists := func() map[string][]string {
		out := map[string][]string{}
		for _, path := range []string{"/v1/models", "/api/tags", "/anthropic/v1/models"} {
			var l struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
				Models []struct {
					Name string `json:"name"`
				} `json:"models"`
			}
			if st := api(t, e, k.FullKey, "GET", path, "", &l); st != 200 {
				t.Fatalf("%s: %d", path, st)
			}
			out[path] = []string{}
			for _, d := range l.Data {
				out[path] = append(out[path], d.ID)
			}
			for _, m := range l.Models {
				out[path] = append(out[path], strings.TrimSuffix(m.Name, ":latest"))
			}
		}
		return out
	}
	for path, ids := range lists() {
		if !slices.Contains(ids, testModel) {
			t.Fatalf("%s before the allowlist: %v", path, ids)
		}
	}
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	form := `#group-students`
	run(t, tab,
		chromedp.Navigate(e.console("admin/groups")),
		chromedp.WaitVisible(chromedp.CSS(form)),
		chromedp.SetValue(chromedp.CSS(form+" input[name=model_access]"), "llama3*"),
		chromedp.Click(chromedp.CSS(form+" button.save")),
	)
	waitJS(t, tab, `!!document.querySelector('p.flash')`)
	if v := get(t, tab, chromedp.Value(chromedp.CSS(form+" input[name=model_access]"))); v != "llama3*" {
		t.Fatalf("the groups page after saving shows model access %q", v)
	}
	screenshot(t, tab, "admin-groups")
	// Key caches are dropped on the change; allow a moment all the same.
	deadline := time.Now().Add(5 * time.Second)
	var got map[string][]string
	for {
		got = lists()
		hidden := true
		for _, ids := range got {
			hidden = hidden && !slices.Contains(ids, testModel) && slices.Contains(ids, other)
		}
		if hidden || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for path, ids := range got {
		if slices.Contains(ids, testModel) || !slices.Contains(ids, other) {
			t.Errorf("%s after the allowlist: %v, want %s and not %s", path, ids, other, testModel)
		}
	}
	body := `{"model":"` + testModel + `","messages":[{"role":"user","content":"hi"}]}`
	if st := api(t, e, k.FullKey, "POST", "/v1/chat/completions", body, nil); st != 404 {
		t.Errorf("chat with the hidden model: %d, want 404", st)
	}
	if st := api(t, e, adminKey, "POST", "/v1/chat/completions", body, nil); st != 200 {
		t.Errorf("the admin's chat with it: %d, want 200", st)
	}
}

// waitJS waits until the expression cond is true in tab (a form's answer
// replaced the page).
func waitJS(t *testing.T, tab context.Context, cond string) {
	t.Helper()
	for range 100 {
		ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(function(){ try { return !!(`+cond+`) } catch (e) { return false } })()`))
		if err == nil && ok {
			return
		}
		run(t, tab, chromedp.Sleep(100*time.Millisecond))
	}
	t.Fatalf("waited in vain for %s:\n%s", cond, pageDump(tab))
}

// The cluster page shows the backend's live state and a node's GPUs with
// their history drawn from the telemetry samples; drain works from it.
func TestConsoleAdmin_Cluster(t *testing.T) {
	const key = "sk-console-sidecar"
	t.Setenv("MR_CONSOLE_SIDECAR_KEY", key)
	util, temp := 42, 55
	power, limit := 310.0, 700.0
	used, total := uint64(20<<30), uint64(80<<30)
	sc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(wire.HeaderKey) != key {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(wire.GPUInfo{Hostname: "gpu-a", Timestamp: time.Now().UTC(), DriverVersion: "580.65", GPUCount: 1,
			GPUs: []wire.GPU{{Index: 0, Name: "NVIDIA H100", UtilizationGPU: &util, TemperatureGPU: &temp, PowerDrawWatts: &power,
				PowerLimitWatts: &limit, MemoryUsedBytes: &used, MemoryTotalBytes: &total, MemoryFreeBytes: &total}}})
	}))
	defer sc.Close()
	e := startEnv(t, fakellm.Config{}, `discovery: {interval: 200ms}
nodes:
  - {name: node-a, sidecar_url: "`+sc.URL+`", sidecar_key_env: MR_CONSOLE_SIDECAR_KEY}
`)
	// An hour of earlier samples, as the recorder would have stored them,
	// so that the history shows a line (the live ones follow).
	ts := telemetry.NewSQLStore(e.gw.Store.(interface{ DB() *sql.DB }).DB())
	var past []telemetry.GPUSample
	for i := 60; i > 0; i-- {
		u, p := float64(30+30*math.Sin(float64(i)/6)), 250+60*math.Cos(float64(i)/9)
		m, tot, tc := float64(used), float64(total), 50+float64(i%7)
		past = append(past, telemetry.GPUSample{At: time.Now().Add(-time.Duration(i) * time.Minute), Node: "node-a", GPU: 0, Name: "NVIDIA H100",
			UtilPct: &u, PowerW: &p, MemUsed: &m, MemTotal: &tot, TempC: &tc})
	}
	if err := ts.Write(context.Background(), past, nil); err != nil {
		t.Fatal(err)
	}
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	if !waitText(t, tab, e.console("admin/cluster?span=1h"), `section[data-node="node-a"] tr[data-gpu-history="0"] svg :is(polyline, circle)`) {
		t.Fatalf("no GPU history on the cluster page:\n%s", pageDump(tab))
	}
	if s := text(t, tab, `tr[data-backend="gpu1"]`); !strings.Contains(s, "healthy") || !strings.Contains(s, "0 / 8") || !strings.Contains(s, testModel) {
		t.Errorf("backend row: %q", s)
	}
	if s := text(t, tab, `section[data-node="node-a"] tr[data-gpu="0"]`); !strings.Contains(s, "42 %") || !strings.Contains(s, "310 W of 700") ||
		!strings.Contains(s, "20.0 / 80.0 GiB") || !strings.Contains(s, "55 °C") {
		t.Errorf("GPU row: %q", s)
	}
	screenshot(t, tab, "admin-cluster")
	run(t, tab, chromedp.Click(chromedp.CSS(`tr[data-backend="gpu1"] form[action$="/drain"] button`)))
	waitJS(t, tab, `!!document.querySelector('p.flash')`)
	if s := text(t, tab, `tr[data-backend="gpu1"]`); !strings.Contains(s, "draining") {
		t.Errorf("after drain: %q", s)
	}
}

// The audit pages: a request found by user and model, its stages and
// content; the admin log lists a change.
func TestConsoleAdmin_AuditAndLog(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, "")
	resp, err := e.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: testModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("find me in the audit")}})
	if err != nil {
		t.Fatal(err)
	}
	var u struct {
		ID int64 `json:"id"`
	}
	if st := api(t, e, adminKey, "POST", "/api/admin/users", `{"username":"logged","group":"staff"}`, &u); st != 200 {
		t.Fatalf("create a user: %d", st)
	}
	var k struct {
		FullKey string `json:"full_key"`
	}
	if st := api(t, e, adminKey, "POST", "/api/admin/users/"+itoa(u.ID)+"/api-keys", `{"name":"to-revoke"}`, &k); st != 200 {
		t.Fatalf("key for logged: %d", st)
	}
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	row := `tr[data-request="` + resp.ID + `"]`
	if !waitText(t, tab, e.console("admin/audit?model="+testModel), row) {
		t.Fatalf("request %s not on the audit page:\n%s", resp.ID, pageDump(tab))
	}
	screenshot(t, tab, "admin-audit")
	run(t, tab, chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.ID("stages")))
	if s := text(t, tab, "#request-facts"); !strings.Contains(s, testModel) || !strings.Contains(s, "200") {
		t.Errorf("request facts: %q", s)
	}
	if s := text(t, tab, "#request-body"); !strings.Contains(s, "find me in the audit") {
		t.Errorf("request content (the admin key holds the audit scope): %q", s)
	}
	run(t, tab, chromedp.Navigate(e.console("admin/admin-log")), chromedp.WaitVisible(chromedp.ID("admin-log")))
	if s := text(t, tab, "#admin-log"); !strings.Contains(s, "user.create") || !strings.Contains(s, "logged") {
		t.Errorf("admin log: %q", s)
	}
	// The keys page finds the user's key and revokes it.
	run(t, tab, chromedp.Navigate(e.console("admin/keys?search=to-revoke")), chromedp.WaitVisible(chromedp.ID("all-keys")),
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS(`#all-keys form[action$="/revoke"] button`)))
	waitJS(t, tab, `!!document.querySelector('p.flash')`)
	if st := api(t, e, k.FullKey, "GET", "/v1/models", "", nil); st != 401 {
		t.Errorf("the revoked key: %d, want 401", st)
	}
}

// The backends page registers a backend and a node, and sets a backend's
// priority and node.
func TestConsoleAdmin_Backends(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, "")
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	run(t, tab,
		chromedp.Navigate(e.console("admin/backends")),
		chromedp.WaitVisible(chromedp.ID("register-node")),
		chromedp.SendKeys(chromedp.CSS(`#register-node input[name=name]`), "gpu-b"),
		chromedp.SendKeys(chromedp.CSS(`#register-node input[name=sidecar_url]`), "http://127.0.0.1:1"),
		chromedp.Click(chromedp.CSS(`#register-node button`)),
	)
	waitJS(t, tab, `!!document.querySelector('tr[data-node="gpu-b"]')`)
	run(t, tab,
		chromedp.SendKeys(chromedp.CSS(`#register-backend input[name=name]`), "gpu9"),
		chromedp.SendKeys(chromedp.CSS(`#register-backend input[name=url]`), "http://127.0.0.1:2"),
		chromedp.SendKeys(chromedp.CSS(`#register-backend input[name=engine]`), "vllm"),
		chromedp.SendKeys(chromedp.CSS(`#register-backend input[name=max_concurrent]`), "3"),
		chromedp.Click(chromedp.CSS(`#register-backend button`)),
	)
	waitJS(t, tab, `!!document.querySelector('tr[data-backend="gpu9"]')`)
	row := `tr[data-backend="gpu1"] `
	run(t, tab,
		chromedp.SetValue(chromedp.CSS(row+`input[name=priority]`), "7"),
		chromedp.SetValue(chromedp.CSS(row+`select[name=node_id]`), get(t, tab, chromedp.Evaluate[string](`document.querySelector('tr[data-backend="gpu1"] select option:nth-child(2)').value`))),
		// The page shows the registration's flash: mark it, to wait for the next one.
		chromedp.Evaluate[chromedp.Void](`window.stale = true`),
		chromedp.Click(chromedp.CSS(row+`button.save`)),
	)
	waitJS(t, tab, `!window.stale && !!document.querySelector('p.flash')`)
	var bs []struct {
		Name          string  `json:"name"`
		Priority      int     `json:"priority"`
		MaxConcurrent int     `json:"max_concurrent"`
		NodeName      *string `json:"node_name"`
	}
	api(t, e, adminKey, "GET", "/api/admin/backends", "", &bs)
	got := map[string]string{}
	for _, b := range bs {
		n := ""
		if b.NodeName != nil {
			n = *b.NodeName
		}
		got[b.Name] = strconv.Itoa(b.Priority) + "/" + strconv.Itoa(b.MaxConcurrent) + "/" + n
	}
	if got["gpu1"] != "7/8/gpu-b" || got["gpu9"] != "0/3/" {
		t.Errorf("backends after the page's changes: %v", got)
	}
}
