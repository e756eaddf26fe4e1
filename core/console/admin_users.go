package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mindrouter/mindrouter/core/admin"
)

// The users pages: search, create, edit overrides, disable, delete, and the CSV
// import with its dry run. Every change goes through the admin API (so it
// is validated and recorded in the admin log as the signed-in user).
func init() {
	adminNav = append(adminNav, NavLink{Path: "admin/users", Label: "Users", Need: RoleAudit})
	adminPages = append(adminPages, func(c *Console) {
		c.page("GET /admin/users", RoleAudit, c.adminUsers)
		c.page("POST /admin/users", RoleAdmin, c.adminCreateUser)
		c.page("GET /admin/users/{id}", RoleAudit, c.adminUser)
		c.page("POST /admin/users/{id}", RoleAdmin, c.adminUpdateUser)
		c.page("POST /admin/users/{id}/active", RoleAdmin, c.adminUserActive)
		c.page("POST /admin/users/{id}/delete", RoleAdmin, c.adminDeleteUser)
		c.page("POST /admin/users/import", RoleAdmin, c.adminImportUsers)
	})
}

type userRow struct {
	ID            int64     `json:"id"`
	Username      string    `json:"username"`
	Email         string    `json:"email"`
	FullName      string    `json:"full_name"`
	GroupID       int64     `json:"group_id"`
	GroupName     string    `json:"group_name"`
	IsActive      bool      `json:"is_active"`
	TokenBudget   *int64    `json:"token_budget_override"`
	RPM           *int      `json:"rpm_limit_override"`
	MaxConcurrent *int      `json:"max_concurrent_override"`
	Weight        *float64  `json:"weight_override"`
	ModelAccess   *[]string `json:"model_access"`
}

// Models is the user's own allowlist as the form shows it ("" inherits).
func (u userRow) Models() string {
	if u.ModelAccess == nil {
		return ""
	}
	return strings.Join(*u.ModelAccess, " ")
}

type groupRow struct {
	ID               int64    `json:"id"`
	Name             string   `json:"name"`
	Description      string   `json:"description"`
	TokenBudget      int64    `json:"token_budget"`
	BudgetPeriodDays int      `json:"budget_period_days"`
	RPM              int      `json:"rpm_limit"`
	MaxConcurrent    int      `json:"max_concurrent"`
	Weight           float64  `json:"scheduler_weight"`
	IsAdmin          bool     `json:"is_admin"`
	IsAuditor        bool     `json:"is_auditor"`
	KeyExpiryDays    int      `json:"api_key_expiry_days"`
	MaxKeys          int      `json:"max_api_keys"`
	ModelAccess      []string `json:"model_access"`
	UserCount        int64    `json:"user_count"`
}

// Models is the group's allowlist as the form shows it ("": every model).
func (g groupRow) Models() string { return strings.Join(g.ModelAccess, " ") }

type importLine struct {
	Line     int    `json:"line"`
	Username string `json:"username"`
	Status   string `json:"status"`
	Error    string `json:"error"`
	UserID   int64  `json:"user_id"`
	Group    string `json:"group"`
}

type importResult struct {
	DryRun   bool         `json:"dry_run"`
	Lines    []importLine `json:"lines"`
	Total    int          `json:"total"`
	Valid    int          `json:"valid"`
	Refused  int          `json:"refused"`
	Created  int          `json:"created"`
	Complete bool         `json:"complete"`
}

type usersPage struct {
	Users  []userRow
	Groups []groupRow
	Total  int
	Search string
	Skip   int
	Next   int // the next page's skip; 0: none
	Error  string
	Import *importResult
	CSV    string // the import's text, kept for a second try
}

const usersPerPage = 50

func (c *Console) usersPage(r *http.Request, rq *Request, v *usersPage) error {
	v.Search = strings.TrimSpace(r.FormValue("search"))
	v.Skip, _ = strconv.Atoi(r.FormValue("skip"))
	v.Skip = max(v.Skip, 0)
	q := url.Values{"limit": {strconv.Itoa(usersPerPage)}, "skip": {strconv.Itoa(v.Skip)}}
	if v.Search != "" {
		q.Set("search", v.Search)
	}
	var list struct {
		Users []userRow `json:"users"`
		Total int       `json:"total"`
	}
	if err := rq.API(r.Context(), "GET", "/api/admin/users", q, nil, &list); err != nil {
		return err
	}
	v.Users, v.Total = list.Users, list.Total
	if v.Skip+len(v.Users) < v.Total {
		v.Next = v.Skip + usersPerPage
	}
	var err error
	v.Groups, err = listGroups(r, rq)
	return err
}

// listGroups reads GET /api/admin/groups.
func listGroups(r *http.Request, rq *Request) ([]groupRow, error) {
	var out struct {
		Groups []groupRow `json:"groups"`
	}
	err := rq.API(r.Context(), "GET", "/api/admin/groups", nil, nil, &out)
	return out.Groups, err
}

func (c *Console) adminUsers(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v usersPage
	if err := c.usersPage(r, rq, &v); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	c.render(w, r, rq, http.StatusOK, "admin_users.html", "Users", v)
}

// rerender shows the users page again with an error from a form (a 4xx
// the API gave), keeping the page usable.
func (c *Console) rerenderUsers(w http.ResponseWriter, r *http.Request, rq *Request, err error, v usersPage) {
	var ae *APIError
	if !errors.As(err, &ae) {
		c.apiFail(w, r, rq, err)
		return
	}
	v.Error = ae.Detail
	if lerr := c.usersPage(r, rq, &v); lerr != nil {
		c.apiFail(w, r, rq, lerr)
		return
	}
	c.render(w, r, rq, ae.Status, "admin_users.html", "Users", v)
}

func (c *Console) adminCreateUser(w http.ResponseWriter, r *http.Request, rq *Request) {
	body := map[string]any{"username": strings.TrimSpace(r.PostFormValue("username")), "group": r.PostFormValue("group")}
	for _, f := range []string{"email", "full_name"} {
		if s := strings.TrimSpace(r.PostFormValue(f)); s != "" {
			body[f] = s
		}
	}
	var u userRow
	if err := rq.API(r.Context(), "POST", "/api/admin/users", nil, body, &u); err != nil {
		c.rerenderUsers(w, r, rq, err, usersPage{})
		return
	}
	http.Redirect(w, r, c.prefix+"admin/users/"+strconv.FormatInt(u.ID, 10)+"?done=user-created", http.StatusSeeOther)
}

type userPage struct {
	User   userRow
	Groups []groupRow
	Keys   []keyRow
	Error  string
}

func (c *Console) userPage(r *http.Request, rq *Request, id string, v *userPage) error {
	var got struct {
		User userRow  `json:"user"`
		Keys []keyRow `json:"api_keys"`
	}
	if err := rq.API(r.Context(), "GET", "/api/admin/users/"+id, nil, nil, &got); err != nil {
		return err
	}
	v.User, v.Keys = got.User, got.Keys
	var err error
	v.Groups, err = listGroups(r, rq)
	return err
}

func (c *Console) adminUser(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v userPage
	if err := c.userPage(r, rq, r.PathValue("id"), &v); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	c.render(w, r, rq, http.StatusOK, "admin_user.html", "User "+v.User.Username, v)
}

// adminUpdateUser applies the edit form: the group, and each override
// (empty: back to the group's value).
func (c *Console) adminUpdateUser(w http.ResponseWriter, r *http.Request, rq *Request) {
	id := r.PathValue("id")
	body := map[string]any{}
	if g := r.PostFormValue("group"); g != "" {
		body["group"] = g
	}
	for _, f := range []string{"email", "full_name"} {
		if vs, ok := r.PostForm[f]; ok {
			body[f] = strings.TrimSpace(vs[0])
		}
	}
	var bad []string
	for _, f := range []struct{ form, field string }{{"token_budget", "token_budget_override"}, {"rpm", "rpm_limit_override"},
		{"max_concurrent", "max_concurrent_override"}, {"weight", "weight_override"}} {
		s := strings.TrimSpace(r.PostFormValue(f.form))
		if s == "" {
			body[f.field] = nil
			continue
		}
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			bad = append(bad, f.form)
			continue
		}
		body[f.field] = json.Number(strconv.FormatFloat(n, 'f', -1, 64))
	}
	if r.PostFormValue("models_inherit") == "1" {
		body["model_access"] = nil
	} else {
		body["model_access"] = patterns(r.PostFormValue("models"))
	}
	var v userPage
	var err error
	if len(bad) > 0 {
		err = &APIError{Status: http.StatusBadRequest, Detail: "not a number: " + strings.Join(bad, ", ")}
	} else {
		err = rq.API(r.Context(), "PATCH", "/api/admin/users/"+id, nil, body, nil)
	}
	if err != nil {
		var ae *APIError
		if !errors.As(err, &ae) {
			c.apiFail(w, r, rq, err)
			return
		}
		if lerr := c.userPage(r, rq, id, &v); lerr != nil {
			c.apiFail(w, r, rq, lerr)
			return
		}
		v.Error = ae.Detail
		c.render(w, r, rq, ae.Status, "admin_user.html", "User "+v.User.Username, v)
		return
	}
	http.Redirect(w, r, c.prefix+"admin/users/"+id+"?done=saved", http.StatusSeeOther)
}

// patterns splits a form's model patterns (spaces, commas or newlines).
func patterns(s string) []string {
	out := []string{}
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' || r == ';' }) {
		out = append(out, p)
	}
	return out
}

func (c *Console) adminUserActive(w http.ResponseWriter, r *http.Request, rq *Request) {
	id := r.PathValue("id")
	active := r.PostFormValue("active") == "1"
	if err := rq.API(r.Context(), "PATCH", "/api/admin/users/"+id, nil, map[string]any{"is_active": active}, nil); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	msg := "user-disabled"
	if active {
		msg = "user-enabled"
	}
	to := r.PostFormValue("back")
	if to != "list" {
		to = "admin/users/" + id
	} else {
		to = "admin/users"
	}
	http.Redirect(w, r, c.prefix+to+"?done="+msg, http.StatusSeeOther)
}

// adminDeleteUser deletes a user (their keys with them); a refusal (one's
// own account) is shown on the user's page.
func (c *Console) adminDeleteUser(w http.ResponseWriter, r *http.Request, rq *Request) {
	id := r.PathValue("id")
	err := rq.API(r.Context(), "DELETE", "/api/admin/users/"+id, nil, nil, nil)
	if err == nil {
		http.Redirect(w, r, c.prefix+"admin/users?done=user-deleted", http.StatusSeeOther)
		return
	}
	var ae *APIError
	var v userPage
	if !errors.As(err, &ae) {
		c.apiFail(w, r, rq, err)
		return
	}
	if lerr := c.userPage(r, rq, id, &v); lerr != nil {
		c.apiFail(w, r, rq, lerr)
		return
	}
	v.Error = ae.Detail
	c.render(w, r, rq, ae.Status, "admin_user.html", "User "+v.User.Username, v)
}

// adminImportUsers posts the CSV (a file or the text box) to POST
// /api/admin/users/import, a dry run unless the "import" button was
// pressed, and shows every line's result.
func (c *Console) adminImportUsers(w http.ResponseWriter, r *http.Request, rq *Request) {
	csv := r.PostFormValue("csv")
	if f, _, err := r.FormFile("file"); err == nil {
		b, rerr := io.ReadAll(io.LimitReader(f, maxBodyBytes))
		f.Close()
		if rerr == nil && len(bytes.TrimSpace(b)) > 0 {
			csv = string(b)
		}
	}
	q := url.Values{}
	dry := r.PostFormValue("action") != "import"
	if dry {
		q.Set("dry_run", "1")
	}
	remote, _, _ := net.SplitHostPort(r.RemoteAddr)
	// The body is CSV, not JSON: Request.API would encode it as a string.
	status, out := c.o.Admin.Do(r.Context(), rq.Principal, admin.Request{Method: "POST", Path: "/api/admin/users/import",
		Query: q, Body: []byte(csv), RemoteAddr: remote})
	v := usersPage{CSV: csv}
	if status != http.StatusOK {
		var d struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(out, &d)
		c.rerenderUsers(w, r, rq, &APIError{Status: status, Detail: d.Detail}, v)
		return
	}
	var res importResult
	if err := json.Unmarshal(out, &res); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	v.Import = &res
	if !dry {
		v.CSV = ""
	}
	if err := c.usersPage(r, rq, &v); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	c.render(w, r, rq, http.StatusOK, "admin_users.html", "Users", v)
}
