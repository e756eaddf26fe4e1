package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The groups page: weights, budgets, RPM, concurrency, key expiry
// defaults and model access, each group edited in place.
func init() {
	adminNav = append(adminNav, NavLink{Path: "admin/groups", Label: "Groups", Need: RoleAudit})
	adminPages = append(adminPages, func(c *Console) {
		c.page("GET /admin/groups", RoleAudit, c.adminGroups)
		c.page("POST /admin/groups/{id}", RoleAdmin, c.adminUpdateGroup)
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

func (c *Console) adminUpdateGroup(w http.ResponseWriter, r *http.Request, rq *Request) {
	id := r.PathValue("id")
	body := map[string]any{"model_access": patterns(r.PostFormValue("model_access"))}
	var err error
	for _, f := range groupNumbers {
		s := strings.TrimSpace(r.PostFormValue(f.form))
		if s == "" {
			continue
		}
		if _, perr := strconv.ParseFloat(s, 64); perr != nil {
			err = &APIError{Status: http.StatusBadRequest, Detail: "field " + f.field + ": not a number"}
			break
		}
		body[f.field] = json.Number(s)
	}
	if err == nil {
		err = rq.API(r.Context(), "PATCH", "/api/admin/groups/"+id, nil, body, nil)
	}
	if err != nil {
		var ae *APIError
		if !errors.As(err, &ae) {
			c.apiFail(w, r, rq, err)
			return
		}
		v := groupsPage{Error: ae.Detail}
		v.Failed, _ = strconv.ParseInt(id, 10, 64)
		var lerr error
		if v.Groups, lerr = listGroups(r, rq); lerr != nil {
			c.apiFail(w, r, rq, lerr)
			return
		}
		c.render(w, r, rq, ae.Status, "admin_groups.html", "Groups", v)
		return
	}
	http.Redirect(w, r, c.prefix+"admin/groups?flash="+url.QueryEscape("Group saved: its users' keys pick it up within a second."), http.StatusSeeOther)
}
