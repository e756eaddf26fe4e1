package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// The groups page: weights, budgets, RPM, concurrency, key expiry
// defaults and model access, each group edited in place; create and
// delete a group.
func init() {
	adminNav = append(adminNav, NavLink{Path: "admin/groups", Label: "Groups", Need: RoleAudit})
	adminPages = append(adminPages, func(c *Console) {
		c.page("GET /admin/groups", RoleAudit, c.adminGroups)
		c.page("POST /admin/groups", RoleAdmin, c.adminCreateGroup)
		c.page("POST /admin/groups/{id}", RoleAdmin, c.adminUpdateGroup)
		c.page("POST /admin/groups/{id}/delete", RoleAdmin, c.adminDeleteGroup)
	})
}

type groupsPage struct {
	Groups []groupRow
	Error  string
	Failed int64 // the group whose form failed
}

func (c *Console) adminGroups(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v groupsPage
	var err error
	if v.Groups, err = listGroups(r, rq); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	c.render(w, r, rq, http.StatusOK, "admin_groups.html", "Groups", v)
}

// groupNumbers are the group form's numeric fields and the API's names.
var groupNumbers = []struct{ form, field string }{
	{"scheduler_weight", "scheduler_weight"}, {"token_budget", "token_budget"}, {"budget_period_days", "budget_period_days"},
	{"rpm_limit", "rpm_limit"}, {"max_concurrent", "max_concurrent"}, {"api_key_expiry_days", "api_key_expiry_days"},
	{"max_api_keys", "max_api_keys"},
}

// groupForm reads the numeric fields present in the form into body
// (empty: left out); a non-number is the API's kind of 400.
func groupForm(r *http.Request, body map[string]any) error {
	for _, f := range groupNumbers {
		s := strings.TrimSpace(r.PostFormValue(f.form))
		if s == "" {
			continue
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return &APIError{Status: http.StatusBadRequest, Detail: "field " + f.field + ": not a number"}
		}
		body[f.field] = json.Number(s)
	}
	return nil
}

// groupsDone redirects after a change (done: a key of flashes), or shows
// the page again with the API's refusal; failed marks the group whose
// form it was (0: the new-group form).
func (c *Console) groupsDone(w http.ResponseWriter, r *http.Request, rq *Request, err error, failed int64, done string) {
	if err == nil {
		http.Redirect(w, r, c.prefix+"admin/groups?done="+done, http.StatusSeeOther)
		return
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		c.apiFail(w, r, rq, err)
		return
	}
	v := groupsPage{Error: ae.Detail, Failed: failed}
	var lerr error
	if v.Groups, lerr = listGroups(r, rq); lerr != nil {
		c.apiFail(w, r, rq, lerr)
		return
	}
	c.render(w, r, rq, ae.Status, "admin_groups.html", "Groups", v)
}

func (c *Console) adminCreateGroup(w http.ResponseWriter, r *http.Request, rq *Request) {
	body := map[string]any{"name": strings.TrimSpace(r.PostFormValue("name")),
		"is_admin": r.PostFormValue("is_admin") == "1", "is_auditor": r.PostFormValue("is_auditor") == "1"}
	if d := strings.TrimSpace(r.PostFormValue("description")); d != "" {
		body["description"] = d
	}
	if m := patterns(r.PostFormValue("model_access")); len(m) > 0 {
		body["model_access"] = m
	}
	err := groupForm(r, body)
	if err == nil {
		err = rq.API(r.Context(), "POST", "/api/admin/groups", nil, body, nil)
	}
	c.groupsDone(w, r, rq, err, 0, "group-created")
}

// adminDeleteGroup deletes a group; the API refuses one with users, and
// the page shows its reason.
func (c *Console) adminDeleteGroup(w http.ResponseWriter, r *http.Request, rq *Request) {
	id := r.PathValue("id")
	err := rq.API(r.Context(), "DELETE", "/api/admin/groups/"+id, nil, nil, nil)
	failed, _ := strconv.ParseInt(id, 10, 64)
	c.groupsDone(w, r, rq, err, failed, "group-deleted")
}

func (c *Console) adminUpdateGroup(w http.ResponseWriter, r *http.Request, rq *Request) {
	id := r.PathValue("id")
	body := map[string]any{"model_access": patterns(r.PostFormValue("model_access"))}
	err := groupForm(r, body)
	if err == nil {
		err = rq.API(r.Context(), "PATCH", "/api/admin/groups/"+id, nil, body, nil)
	}
	failed, _ := strconv.ParseInt(id, 10, 64)
	c.groupsDone(w, r, rq, err, failed, "group-saved")
}
