package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// The backends and nodes page: register, edit and delete a backend or a
// node, refresh a node. Live state and drain/enable are on the cluster
// page.
func init() {
	adminNav = append(adminNav, NavLink{Path: "admin/backends", Label: "Backends", Need: RoleAudit})
	adminPages = append(adminPages, func(c *Console) {
		c.page("GET /admin/backends", RoleAudit, c.adminBackends)
		c.page("POST /admin/backends", RoleAdmin, c.adminRegisterBackend)
		c.page("POST /admin/backends/{id}", RoleAdmin, c.adminUpdateBackend)
		c.page("POST /admin/nodes", RoleAdmin, c.adminRegisterNode)
		c.page("POST /admin/backends/{id}/delete", RoleAdmin, c.adminDeleteBackend)
		c.page("POST /admin/nodes/{id}", RoleAdmin, c.adminUpdateNode)
		c.page("POST /admin/nodes/{id}/delete", RoleAdmin, c.adminDeleteNode)
		c.page("POST /admin/nodes/{id}/refresh", RoleAdmin, c.adminRefreshNode)
	})
}

type storedBackend struct {
	ID            int64    `json:"id"`
	Name          string   `json:"name"`
	URL           string   `json:"url"`
	Engine        string   `json:"engine"`
	Status        string   `json:"status"`
	MaxConcurrent int      `json:"max_concurrent"`
	Priority      int      `json:"priority"`
	Models        []string `json:"models"`
	NodeID        *int64   `json:"node_id"`
	NodeName      *string  `json:"node_name"`
	GPUIndices    []int    `json:"gpu_indices"`
	FromConfig    bool     `json:"from_config"`
}

// Node is the backend's node id (0: none).
func (b storedBackend) Node() int64 {
	if b.NodeID == nil {
		return 0
	}
	return *b.NodeID
}

// GPUs is the backend's GPU list as the form shows it.
func (b storedBackend) GPUs() string {
	s := make([]string, len(b.GPUIndices))
	for i, g := range b.GPUIndices {
		s[i] = strconv.Itoa(g)
	}
	return strings.Join(s, ",")
}

type storedNode struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	SidecarURL    string `json:"sidecar_url"`
	SidecarKeySet bool   `json:"sidecar_key_set"`
	Status        string `json:"status"`
	FromConfig    bool   `json:"from_config"`
}

type backendsPage struct {
	Backends []storedBackend
	Nodes    []storedNode
	Error    string
}

func (c *Console) backendsPage(r *http.Request, rq *Request, v *backendsPage) error {
	if err := rq.API(r.Context(), "GET", "/api/admin/backends", nil, nil, &v.Backends); err != nil {
		return err
	}
	return rq.API(r.Context(), "GET", "/api/admin/nodes", nil, nil, &v.Nodes)
}

func (c *Console) adminBackends(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v backendsPage
	if err := c.backendsPage(r, rq, &v); err != nil {
		c.apiFail(w, r, rq, err)
		return
	}
	c.render(w, r, rq, http.StatusOK, "admin_backends.html", "Backends and nodes", v)
}

// backendsDone redirects after a change, or shows the page again with the
// API's refusal.
// done is a key of flashes.
func (c *Console) backendsDone(w http.ResponseWriter, r *http.Request, rq *Request, err error, done string) {
	if err == nil {
		http.Redirect(w, r, c.prefix+"admin/backends?done="+done, http.StatusSeeOther)
		return
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		c.apiFail(w, r, rq, err)
		return
	}
	v := backendsPage{Error: ae.Detail}
	if lerr := c.backendsPage(r, rq, &v); lerr != nil {
		c.apiFail(w, r, rq, lerr)
		return
	}
	c.render(w, r, rq, ae.Status, "admin_backends.html", "Backends and nodes", v)
}

// number puts a form's integer field into body (empty: left out); a
// non-number is the API's kind of 400.
func number(r *http.Request, form, field string, body map[string]any) error {
	s := strings.TrimSpace(r.PostFormValue(form))
	if s == "" {
		return nil
	}
	if _, err := strconv.Atoi(s); err != nil {
		return &APIError{Status: http.StatusBadRequest, Detail: "field " + field + ": not an integer"}
	}
	body[field] = json.Number(s)
	return nil
}

func (c *Console) adminRegisterBackend(w http.ResponseWriter, r *http.Request, rq *Request) {
	body := map[string]any{"name": strings.TrimSpace(r.PostFormValue("name")), "url": strings.TrimSpace(r.PostFormValue("url")),
		"engine": strings.TrimSpace(r.PostFormValue("engine"))}
	err := errors.Join(number(r, "max_concurrent", "max_concurrent", body), number(r, "priority", "priority", body))
	if err == nil {
		err = rq.API(r.Context(), "POST", "/api/admin/backends/register", nil, body, nil)
	}
	c.backendsDone(w, r, rq, unjoin(err), "backend-registered")
}

func (c *Console) adminUpdateBackend(w http.ResponseWriter, r *http.Request, rq *Request) {
	body := map[string]any{}
	err := errors.Join(number(r, "max_concurrent", "max_concurrent", body), number(r, "priority", "priority", body))
	if err == nil {
		switch n := r.PostFormValue("node_id"); n {
		case "":
			body["node_id"] = nil
		default:
			body["node_id"] = json.Number(n)
		}
		if g := strings.TrimSpace(r.PostFormValue("gpus")); g == "" {
			body["gpu_indices"] = nil
		} else {
			var gs []int
			for _, p := range strings.Split(g, ",") {
				i, perr := strconv.Atoi(strings.TrimSpace(p))
				if perr != nil {
					err = &APIError{Status: http.StatusBadRequest, Detail: "field gpu_indices: integers separated by commas"}
					break
				}
				gs = append(gs, i)
			}
			body["gpu_indices"] = gs
		}
	}
	if err == nil {
		err = rq.API(r.Context(), "PATCH", "/api/admin/backends/"+r.PathValue("id"), nil, body, nil)
	}
	c.backendsDone(w, r, rq, unjoin(err), "backend-saved")
}

func (c *Console) adminRegisterNode(w http.ResponseWriter, r *http.Request, rq *Request) {
	body := map[string]any{"name": strings.TrimSpace(r.PostFormValue("name"))}
	if u := strings.TrimSpace(r.PostFormValue("sidecar_url")); u != "" {
		body["sidecar_url"] = u
	}
	if k := r.PostFormValue("sidecar_key"); k != "" {
		body["sidecar_key"] = k // write-only: never shown again
	}
	err := rq.API(r.Context(), "POST", "/api/admin/nodes", nil, body, nil)
	c.backendsDone(w, r, rq, err, "node-registered")
}

func (c *Console) adminRefreshNode(w http.ResponseWriter, r *http.Request, rq *Request) {
	err := rq.API(r.Context(), "POST", "/api/admin/nodes/"+r.PathValue("id")+"/refresh", nil, nil, nil)
	c.backendsDone(w, r, rq, err, "node-refreshed")
}

// adminUpdateNode applies a node's edit form: name, sidecar URL (empty:
// none), status, and the sidecar key only when one is typed (it is
// write-only; "clear" removes it).
func (c *Console) adminUpdateNode(w http.ResponseWriter, r *http.Request, rq *Request) {
	body := map[string]any{"name": strings.TrimSpace(r.PostFormValue("name")), "sidecar_url": strings.TrimSpace(r.PostFormValue("sidecar_url"))}
	if s := r.PostFormValue("status"); s != "" {
		body["status"] = s
	}
	if r.PostFormValue("clear_key") == "1" {
		body["sidecar_key"] = ""
	} else if k := r.PostFormValue("sidecar_key"); k != "" {
		body["sidecar_key"] = k
	}
	err := rq.API(r.Context(), "PATCH", "/api/admin/nodes/"+r.PathValue("id"), nil, body, nil)
	c.backendsDone(w, r, rq, err, "node-saved")
}

// adminDeleteNode deletes a node; the API refuses one that backends are
// still placed on, and the page shows why.
func (c *Console) adminDeleteNode(w http.ResponseWriter, r *http.Request, rq *Request) {
	err := rq.API(r.Context(), "DELETE", "/api/admin/nodes/"+r.PathValue("id"), nil, nil, nil)
	c.backendsDone(w, r, rq, err, "node-deleted")
}

// adminDeleteBackend deletes a backend from the store and the live
// registry (one from the config file comes back at the next start).
func (c *Console) adminDeleteBackend(w http.ResponseWriter, r *http.Request, rq *Request) {
	var out struct {
		Applied    *bool  `json:"applied"`
		ApplyError string `json:"apply_error"`
	}
	err := rq.API(r.Context(), "DELETE", "/api/admin/backends/"+r.PathValue("id"), nil, nil, &out)
	done := "backend-deleted"
	if err == nil && out.Applied != nil && !*out.Applied {
		c.log.Warn("console: backend deleted from the store, not from the registry", "backend", r.PathValue("id"), "err", out.ApplyError)
		done = "backend-unapplied"
	}
	c.backendsDone(w, r, rq, err, done)
}

// unjoin returns the first APIError of a joined error (form checks), or
// err.
func unjoin(err error) error {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	return err
}
