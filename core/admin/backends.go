package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/store"
)

// backendIn is the body of PATCH /backends/{id}; registerIn adds upsert.
type backendIn struct {
	Name          *string         `json:"name"`
	URL           *string         `json:"url"`
	Engine        *string         `json:"engine"`
	MaxConcurrent *int            `json:"max_concurrent"`
	Priority      *int            `json:"priority"`
	Models        *[]string       `json:"models"`
	NodeID        nullable[int64] `json:"node_id"`
	GPUIndices    nullable[[]int] `json:"gpu_indices"`

	// The reference's; accepted and ignored.
	GPUMemoryGB nullable[float64] `json:"gpu_memory_gb"`
	GPUType     nullable[string]  `json:"gpu_type"`
}

type registerIn struct {
	backendIn
	// Upsert updates the backend with the same name (or else URL) in
	// place instead of answering 409: idempotent re-registration.
	Upsert bool `json:"upsert"`
}

func (h *Handler) applyBackend(c *call, in *backendIn, b *store.Backend) error {
	if in.Name != nil {
		if err := checkName("name", *in.Name, 100); err != nil {
			return err
		}
		b.Name = *in.Name
	}
	if in.URL != nil {
		if err := checkURL("url", *in.URL); err != nil {
			return err
		}
		b.URL = *in.URL
	}
	if in.Engine != nil {
		if !isToken(*in.Engine, 32) {
			return badRequest("field engine: must be an adapter name such as vllm or ollama (lowercase letters, digits, - and _)")
		}
		b.Engine = *in.Engine
	}
	if in.MaxConcurrent != nil {
		if err := checkRange("max_concurrent", *in.MaxConcurrent, 1, maxConcurrent); err != nil {
			return err
		}
		b.MaxConcurrent = *in.MaxConcurrent
	}
	if in.Priority != nil {
		if err := checkRange("priority", *in.Priority, -1000, 1000); err != nil {
			return err
		}
		b.Priority = *in.Priority
	}
	if in.Models != nil {
		if len(*in.Models) > 1000 {
			return badRequest("field models: at most 1000 models")
		}
		for _, m := range *in.Models {
			if err := checkName("models", m, 200); err != nil {
				return err
			}
		}
		b.Models = *in.Models
	}
	if in.NodeID.Set {
		if !in.NodeID.Null {
			if _, err := h.st.Node(c.ctx, in.NodeID.V); errors.Is(err, store.ErrNotFound) {
				return badRequest(fmt.Sprintf("field node_id: node %d not found", in.NodeID.V))
			} else if err != nil {
				return fmt.Errorf("read node: %w", err)
			}
		}
		b.NodeID = in.NodeID.ptr()
	}
	if in.GPUIndices.Set {
		if len(in.GPUIndices.V) > 64 {
			return badRequest("field gpu_indices: at most 64 GPUs")
		}
		for _, i := range in.GPUIndices.V {
			if err := checkRange("gpu_indices", i, 0, 1023); err != nil {
				return err
			}
		}
		b.GPUIndices = in.GPUIndices.V // nil when null
	}
	return nil
}

func checkURL(field, s string) error {
	if err := checkText(field, s, 1, 2048); err != nil {
		return err
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badRequest("field " + field + ": must be an http:// or https:// URL with a host")
	}
	return nil
}

func isToken(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
	}
	return true
}

func (h *Handler) backend(c *call, id int64) (store.Backend, error) {
	b, err := h.st.Backend(c.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return b, notFound("Backend not found")
	}
	if err != nil {
		return b, fmt.Errorf("read backend %d: %w", id, err)
	}
	return b, nil
}

func (h *Handler) nodeNames(c *call) (map[int64]string, error) {
	ns, err := h.st.Nodes(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	m := make(map[int64]string, len(ns))
	for _, n := range ns {
		m[n.ID] = n.Name
	}
	return m, nil
}

func (h *Handler) viewBackend(c *call, b store.Backend) (backendView, error) {
	var name *string
	if b.NodeID != nil {
		n, err := h.st.Node(c.ctx, *b.NodeID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return backendView{}, fmt.Errorf("read node: %w", err)
		}
		if err == nil {
			name = &n.Name
		}
	}
	return viewBackend(b, name), nil
}

// apply hands a stored change to the live registry, when this process has
// one, and says in v how that went. oldName is the backend's name before
// a rename, so the registry drops it.
func (h *Handler) apply(c *call, b store.Backend, oldName string, applied **bool, applyErr *string) {
	if h.backends == nil {
		return
	}
	var err error
	if oldName != "" && oldName != b.Name {
		err = h.backends.Remove(c.ctx, oldName)
	}
	if err == nil {
		err = h.backends.Apply(c.ctx, b)
	}
	ok := err == nil
	*applied = &ok
	if err != nil {
		*applyErr = logredact.Truncate(err.Error(), logredact.MaxEcho)
		h.log.LogAttrs(c.ctx, slog.LevelWarn, "apply backend change", slog.String("backend", b.Name), slog.String("err", err.Error()))
	}
}

func (h *Handler) listBackends(c *call) (any, error) {
	bs, err := h.st.Backends(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("list backends: %w", err)
	}
	names, err := h.nodeNames(c)
	if err != nil {
		return nil, err
	}
	out := make([]backendView, 0, len(bs))
	for _, b := range bs {
		var name *string
		if b.NodeID != nil {
			if n, ok := names[*b.NodeID]; ok {
				name = &n
			}
		}
		out = append(out, viewBackend(b, name))
	}
	return out, nil
}

func (h *Handler) getBackend(c *call) (any, error) {
	b, err := h.backend(c, c.id())
	if err != nil {
		return nil, err
	}
	return h.viewBackend(c, b)
}

func (h *Handler) registerBackend(c *call) (any, error) {
	var in registerIn
	if _, err := decode(c.req.Body, &in); err != nil {
		return nil, err
	}
	switch {
	case in.Name == nil:
		return nil, badRequest("field name: required")
	case in.URL == nil:
		return nil, badRequest("field url: required")
	case in.Engine == nil:
		return nil, badRequest("field engine: required")
	}
	all, err := h.st.Backends(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("list backends: %w", err)
	}
	var byName, byURL *store.Backend
	for i := range all {
		if all[i].Name == *in.Name {
			byName = &all[i]
		}
		if all[i].URL == *in.URL {
			byURL = &all[i]
		}
	}
	action, oldName := "backend.register", ""
	b := store.Backend{MaxConcurrent: 4, Status: store.BackendEnabled}
	switch {
	case in.Upsert && (byName != nil || byURL != nil):
		action = "backend.upsert"
		if byName != nil {
			b = *byName
		} else {
			b = *byURL
		}
		oldName = b.Name
	case byName != nil:
		return nil, conflict(fmt.Sprintf("Backend with name '%s' already exists", *in.Name))
	case byURL != nil:
		return nil, conflict(fmt.Sprintf("Backend with URL '%s' already exists (registered as '%s')", *in.URL, byURL.Name))
	}
	if err := h.applyBackend(c, &in.backendIn, &b); err != nil {
		return nil, err
	}
	if b.ID != 0 {
		err = h.st.UpdateBackend(c.ctx, &b)
	} else {
		err = h.st.UpsertBackend(c.ctx, &b)
	}
	if errors.Is(err, store.ErrConflict) {
		return nil, conflict(fmt.Sprintf("Backend with name '%s' or URL '%s' already exists", b.Name, b.URL))
	} else if err != nil {
		return nil, fmt.Errorf("register backend: %w", err)
	}
	v, err := h.viewBackend(c, b)
	if err != nil {
		return nil, err
	}
	h.record(c, action, "backend", b.ID, map[string]any{"after": v})
	h.apply(c, b, oldName, &v.Applied, &v.ApplyError)
	return v, nil
}

func (h *Handler) updateBackend(c *call) (any, error) {
	var in backendIn
	fields, err := decode(c.req.Body, &in)
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 {
		return nil, badRequest("No fields to update")
	}
	b, err := h.backend(c, c.id())
	if err != nil {
		return nil, err
	}
	oldName := b.Name
	if err := h.applyBackend(c, &in, &b); err != nil {
		return nil, err
	}
	if err := h.st.UpdateBackend(c.ctx, &b); err != nil {
		switch {
		case errors.Is(err, store.ErrConflict):
			return nil, conflict(fmt.Sprintf("Backend with name '%s' or URL '%s' already exists", b.Name, b.URL))
		case errors.Is(err, store.ErrNotFound):
			return nil, notFound("Backend not found")
		}
		return nil, fmt.Errorf("update backend: %w", err)
	}
	v, err := h.viewBackend(c, b)
	if err != nil {
		return nil, err
	}
	h.record(c, "backend.update", "backend", b.ID, map[string]any{"fields": fields, "after": v})
	h.apply(c, b, oldName, &v.Applied, &v.ApplyError)
	return v, nil
}

// backendStatus is POST /backends/{id}/enable|disable|drain.
func backendStatus(verb string) handlerFunc {
	status := map[string]string{"enable": store.BackendEnabled, "disable": store.BackendDisabled, "drain": store.BackendDraining}[verb]
	return func(h *Handler, c *call) (any, error) {
		b, err := h.backend(c, c.id())
		if err != nil {
			return nil, err
		}
		b.Status = status
		if err := h.st.UpdateBackend(c.ctx, &b); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, notFound("Backend not found")
			}
			return nil, fmt.Errorf("%s backend: %w", verb, err)
		}
		h.record(c, "backend."+verb, "backend", b.ID, map[string]any{"name": b.Name, "status": status})
		out := map[string]any{"status": status, "backend_id": b.ID}
		var applied *bool
		var applyErr string
		h.apply(c, b, "", &applied, &applyErr)
		if applied != nil {
			out["applied"] = *applied
		}
		if applyErr != "" {
			out["apply_error"] = applyErr
		}
		return out, nil
	}
}

func (h *Handler) refreshBackend(c *call) (any, error) {
	b, err := h.backend(c, c.id())
	if err != nil {
		return nil, err
	}
	if h.backends == nil {
		return nil, errorf(fasthttp.StatusServiceUnavailable, "refresh needs a running gateway: this process has no live backend registry")
	}
	if err := h.backends.Refresh(c.ctx, b.Name); err != nil {
		h.log.LogAttrs(c.ctx, slog.LevelWarn, "refresh backend", slog.String("backend", b.Name), slog.String("err", err.Error()))
		return nil, errorf(fasthttp.StatusBadGateway, "Failed to refresh backend: "+logredact.Truncate(err.Error(), logredact.MaxEcho))
	}
	h.record(c, "backend.refresh", "backend", b.ID, map[string]any{"name": b.Name})
	return done("refreshed", "backend_id", b.ID), nil
}

func (h *Handler) deleteBackend(c *call) (any, error) {
	b, err := h.backend(c, c.id())
	if err != nil {
		return nil, err
	}
	if err := h.st.DeleteBackend(c.ctx, b.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound("Backend not found")
		}
		return nil, fmt.Errorf("delete backend: %w", err)
	}
	h.record(c, "backend.delete", "backend", b.ID, map[string]any{"before": viewBackend(b, nil)})
	out := done("deleted", "backend_id", b.ID)
	if h.backends != nil {
		err := h.backends.Remove(c.ctx, b.Name)
		out["applied"] = err == nil
		if err != nil {
			out["apply_error"] = logredact.Truncate(err.Error(), logredact.MaxEcho)
		}
	}
	return out, nil
}
