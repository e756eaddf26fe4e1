package admin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/core/store"
)

func (e *env) importCSV(key, query, csv string, want int) importAnswer {
	e.t.Helper()
	status, out := e.call(key, "POST", "/api/admin/users/import"+query, csv)
	if status != want {
		e.t.Fatalf("import%s: status %d, want %d: %s", query, status, want, out)
	}
	var a importAnswer
	if status == 200 {
		if err := json.Unmarshal(out, &a); err != nil {
			e.t.Fatalf("import: %v: %s", err, out)
		}
	} else {
		var d detail
		_ = json.Unmarshal(out, &d)
		a.Lines = []importLine{{Error: d.Detail}}
	}
	return a
}

func (e *env) userCount() int {
	e.t.Helper()
	_, total, err := e.st.Users(context.Background(), store.UserFilter{Limit: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	return total
}

func statuses(a importAnswer) string {
	var s []string
	for _, l := range a.Lines {
		s = append(s, l.Status)
	}
	return strings.Join(s, ",")
}

func TestImportUsers(t *testing.T) { importUsers(t, newEnv(t)) }

func importUsers(t *testing.T, e *env) {
	good := "\ufeffUsername,Email,Group,full_name,rpm_limit_override,model_access,is_active\n" +
		"carol,carol@example.edu,students,Carol C,10,qwen3-* llama3-8b,\n" +
		"\n" + // blank lines are skipped
		"dave,dave@example.edu,staff,,,,false\n"
	before := e.userCount()

	// A dry run checks every line and creates nothing.
	a := e.importCSV(e.adminKey, "?dry_run=1", good, 200)
	if !a.DryRun || a.Total != 2 || a.Valid != 2 || a.Refused != 0 || a.Created != 0 || statuses(a) != "ok,ok" ||
		a.Lines[0].Line != 2 || a.Lines[1].Line != 4 {
		t.Fatalf("dry run: %+v", a)
	}
	if n := e.userCount(); n != before {
		t.Fatalf("a dry run created users: %d, had %d", n, before)
	}

	// The import creates them, with their fields.
	a = e.importCSV(e.adminKey, "", good, 200)
	if a.DryRun || a.Created != 2 || !a.Complete || statuses(a) != "created,created" || a.Lines[0].UserID == 0 {
		t.Fatalf("import: %+v", a)
	}
	carol, err := e.st.UserByName(context.Background(), "carol")
	if err != nil {
		t.Fatal(err)
	}
	if carol.FullName != "Carol C" || carol.GroupID != e.groups["students"].ID || carol.RPM == nil || *carol.RPM != 10 ||
		carol.ModelAccess == nil || strings.Join(*carol.ModelAccess, " ") != "qwen3-* llama3-8b" || !carol.Active || carol.ID != a.Lines[0].UserID {
		t.Errorf("carol: %+v", carol)
	}
	dave, err := e.st.UserByName(context.Background(), "dave")
	if err != nil || dave.Active || dave.GroupID != e.groups["staff"].ID || dave.RPM != nil || dave.ModelAccess != nil {
		t.Errorf("dave: %+v, %v", dave, err)
	}
	ev, err := e.st.AdminEvents(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, x := range ev {
		actions = append(actions, x.Action)
	}
	if got := strings.Join(actions, ","); !strings.Contains(got, "user.import") || strings.Count(got, "user.create") < 2 {
		t.Errorf("admin log: %s", got)
	}

	// A file with a bad line creates nothing, and the dry run says why for
	// every line.
	bad := "username,email,group,weight_override\n" +
		"erin,erin@example.edu,students,\n" + // fine
		"carol,c2@example.edu,students,\n" + // exists (any case)
		"frank,not-an-email,students,\n" +
		"gina,gina@example.edu,nosuchgroup,\n" +
		"Erin,erin2@example.edu,staff,\n" + // repeats line 2, ignoring case
		"hank,hank@example.edu,students,-1\n" +
		"ivan,,students,\n" +
		"jo,jo@example.edu,students,lots\n"
	before = e.userCount()
	a = e.importCSV(e.adminKey, "?dry_run=true", bad, 200)
	want := []string{"", "already exists", "not an email address", `group "nosuchgroup" not found`, "repeats line 2",
		"weight_override: must be greater than 0", "column email: required", "weight_override: not a number"}
	if a.Valid != 1 || a.Refused != 7 || len(a.Lines) != len(want) {
		t.Fatalf("dry run of a bad file: %+v", a)
	}
	for i, w := range want {
		l := a.Lines[i]
		if w == "" && l.Status != "ok" || w != "" && (l.Status != "refused" || !strings.Contains(l.Error, w)) {
			t.Errorf("line %d: %+v, want %q", l.Line, l, w)
		}
	}
	a = e.importCSV(e.adminKey, "", bad, 400)
	if d := a.Lines[0].Error; !strings.Contains(d, "7 of 8 lines refused, nothing was created: line 3:") || !strings.Contains(d, "(and 4 more)") {
		t.Errorf("import of a bad file: %q", d)
	}
	if n := e.userCount(); n != before {
		t.Errorf("a refused import created users: %d, had %d", n, before)
	}

	// Whole-file errors: 400s naming the problem.
	for _, tc := range []struct{ query, body, detail string }{
		{"", "", "expected CSV with a header row"},
		{"", "username,email\nx,x@y.z\n", "column group is required"},
		{"", "username,email,group,password\n", "unknown column \"password\""},
		{"", "username,email,group,email\n", "column \"email\" twice"},
		{"", "username,email,group\n", "no users after the header row"},
		{"", "username,email,group\na,a@b.c\n", "CSV line 2: wrong number of fields"},
		{"", "username,email,group\n\"a,a@b.c,students\n", "CSV line 2"},
		{"?dry_run=maybe", "username,email,group\na,a@b.c,students\n", "dry_run: must be 1 or 0"},
	} {
		a := e.importCSV(e.adminKey, tc.query, tc.body, 400)
		if !strings.Contains(a.Lines[0].Error, tc.detail) {
			t.Errorf("import %q: %q, want it to say %q", tc.body, a.Lines[0].Error, tc.detail)
		}
	}
	// The audit scope may not import, even as a dry run (it is a POST).
	e.importCSV(e.auditorKey, "?dry_run=1", good, 403)
	e.importCSV(e.aliceKey, "?dry_run=1", good, 403)
	if status, _ := e.call(e.adminKey, "GET", "/api/admin/users/import", nil); status != 405 {
		t.Errorf("GET /users/import: %d, want 405", status)
	}
}
