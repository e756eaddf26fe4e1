package console_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// The admin pages' create, edit and delete actions (issue 22's gaps), in
// one environment: the queue page refreshes itself; a group is created,
// refused deletion while it has a member, and deleted; a user is deleted;
// a node is edited, refused deletion while a backend is on it, and
// deleted after the backend.
func TestConsoleAdmin_Gaps(t *testing.T) {
	e := startEnv(t, fakellm.Config{TTFT: 5 * time.Second}, "")
	tab := newTab(t)
	signInWithKey(t, tab, e, adminKey)
	// click confirms (the page's confirm dialog would block the tab) and
	// clicks sel, then waits for the answer's page (a new document, marked
	// by the stale flag's absence) to show cond.
	click := func(sel, cond string) {
		t.Helper()
		run(t, tab, chromedp.Evaluate[chromedp.Void](`window.confirm = () => true; window.stale = true`), chromedp.Click(chromedp.CSS(sel)))
		waitJS(t, tab, `!window.stale && `+cond)
	}
	flash := func(want string) {
		t.Helper()
		if s := text(t, tab, "p.flash"); !strings.Contains(s, want) {
			t.Errorf("flash %q, want %q", s, want)
		}
	}

	// The queue page, opened while nobody waits, shows the waiters of a
	// saturated backend without being reloaded by hand.
	run(t, tab, chromedp.Navigate(e.console("admin/queue")), chromedp.WaitVisible(chromedp.ID("no-waiters")))
	run(t, tab, chromedp.Evaluate[chromedp.Void](`window.loadedOnce = true`))
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = e.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: testModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("wait for it")}})
		}()
	}
	waitJS(t, tab, `document.querySelector('section[data-model="`+testModel+`"] tr.waiter')`)
	if ok := get(t, tab, chromedp.Evaluate[bool](`window.loadedOnce === true`)); !ok {
		t.Errorf("the queue page was reloaded as a whole, not refreshed in place")
	}
	cancel()
	wg.Wait()

	// Groups: create, refused deletion with a member, deleted once empty.
	run(t, tab,
		chromedp.Navigate(e.console("admin/groups")),
		chromedp.WaitVisible(chromedp.ID("create-group")),
		chromedp.SendKeys(chromedp.CSS(`#create-group input[name=name]`), "club"),
		chromedp.SendKeys(chromedp.CSS(`#create-group input[name=scheduler_weight]`), "2.5"),
		chromedp.SendKeys(chromedp.CSS(`#create-group input[name=model_access]`), "llama3*"),
	)
	click(`#create-group button`, `document.querySelector('#group-club')`)
	flash("Group created.")
	var groups struct {
		Groups []struct {
			ID          int64    `json:"id"`
			Name        string   `json:"name"`
			Weight      float64  `json:"scheduler_weight"`
			ModelAccess []string `json:"model_access"`
		} `json:"groups"`
	}
	api(t, e, adminKey, "GET", "/api/admin/groups", "", &groups)
	var club int64
	for _, g := range groups.Groups {
		if g.Name == "club" {
			club = g.ID
			if g.Weight != 2.5 || len(g.ModelAccess) != 1 || g.ModelAccess[0] != "llama3*" {
				t.Errorf("the new group: %+v", g)
			}
		}
	}
	if club == 0 {
		t.Fatalf("no group club after creating it: %+v", groups)
	}
	var u struct {
		ID int64 `json:"id"`
	}
	if st := api(t, e, adminKey, "POST", "/api/admin/users", `{"username":"member","group":"club"}`, &u); st != 200 {
		t.Fatalf("create member: %d", st)
	}
	run(t, tab, chromedp.Navigate(e.console("admin/groups")), chromedp.WaitVisible(chromedp.ID("group-club")))
	click(`form.delete-group[data-group="club"] button`, `document.getElementById('error')`)
	if s := text(t, tab, "#error"); !strings.Contains(s, "Cannot delete group with users") {
		t.Errorf("deleting a group with a member: %q", s)
	}

	// Users: delete the member from its page.
	run(t, tab, chromedp.Navigate(e.console("admin/users/"+itoa(u.ID))), chromedp.WaitVisible(chromedp.ID("delete-user")))
	click(`#delete-user`, `document.querySelector('p.flash')`)
	flash("User deleted")
	if st := api(t, e, adminKey, "GET", "/api/admin/users/"+itoa(u.ID), "", nil); st != 404 {
		t.Errorf("the deleted user: %d, want 404", st)
	}
	run(t, tab, chromedp.Navigate(e.console("admin/groups")), chromedp.WaitVisible(chromedp.ID("group-club")))
	click(`form.delete-group[data-group="club"] button`, `document.querySelector('p.flash')`)
	flash("Group deleted.")
	if st := api(t, e, adminKey, "GET", "/api/admin/groups/"+itoa(club), "", nil); st != 404 {
		t.Errorf("the deleted group: %d, want 404", st)
	}

	// Nodes and backends: edit a node, refused deletion while a backend is
	// placed on it, then the backend and the node deleted.
	var n struct {
		ID int64 `json:"id"`
	}
	if st := api(t, e, adminKey, "POST", "/api/admin/nodes", `{"name":"gpu-c","sidecar_url":"http://127.0.0.1:1"}`, &n); st != 200 {
		t.Fatalf("register a node: %d", st)
	}
	var b struct {
		ID int64 `json:"id"`
	}
	if st := api(t, e, adminKey, "POST", "/api/admin/backends/register", `{"name":"gpu9","url":"http://127.0.0.1:2","engine":"vllm","max_concurrent":2}`, &b); st != 200 {
		t.Fatalf("register a backend: %d", st)
	}
	if st := api(t, e, adminKey, "PATCH", "/api/admin/backends/"+itoa(b.ID), `{"node_id":`+itoa(n.ID)+`}`, nil); st != 200 {
		t.Fatalf("place gpu9 on gpu-c: %d", st)
	}
	node := `tr[data-node="gpu-c"] `
	run(t, tab,
		chromedp.Navigate(e.console("admin/backends")),
		chromedp.WaitVisible(chromedp.CSS(node+`form.edit-node`)),
		chromedp.SetValue(chromedp.CSS(node+`input[name=name]`), "gpu-d"),
		chromedp.SetValue(chromedp.CSS(node+`input[name=sidecar_url]`), "http://127.0.0.1:3"),
		chromedp.SetValue(chromedp.CSS(node+`select[name=status]`), "disabled"),
		chromedp.SendKeys(chromedp.CSS(node+`input[name=sidecar_key]`), "sk-new"),
	)
	click(node+`form.edit-node button.save`, `document.querySelector('p.flash')`)
	flash("Node saved")
	var nv struct {
		Name          string `json:"name"`
		SidecarURL    string `json:"sidecar_url"`
		SidecarKeySet bool   `json:"sidecar_key_set"`
		Status        string `json:"status"`
	}
	api(t, e, adminKey, "GET", "/api/admin/nodes/"+itoa(n.ID), "", &nv)
	if nv.Name != "gpu-d" || nv.SidecarURL != "http://127.0.0.1:3" || !nv.SidecarKeySet || nv.Status != "disabled" {
		t.Errorf("the node after its edit: %+v", nv)
	}
	node = `tr[data-node="gpu-d"] `
	click(node+`form[action$="/delete"] button`, `document.getElementById('error')`)
	if s := text(t, tab, "#error"); !strings.Contains(s, "Cannot delete node with backends") {
		t.Errorf("deleting a node with a backend: %q", s)
	}
	click(`tr[data-backend="gpu9"] form[action$="/delete"] button`, `document.querySelector('p.flash')`)
	flash("Backend deleted.")
	if st := api(t, e, adminKey, "GET", "/api/admin/backends/"+itoa(b.ID), "", nil); st != 404 {
		t.Errorf("the deleted backend: %d, want 404", st)
	}
	click(node+`form[action$="/delete"] button`, `document.querySelector('p.flash')`)
	flash("Node deleted.")
	if st := api(t, e, adminKey, "GET", "/api/admin/nodes/"+itoa(n.ID), "", nil); st != 404 {
		t.Errorf("the deleted node: %d, want 404", st)
	}
}
