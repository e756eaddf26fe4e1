package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/store"
)

// nodeIn is the body of POST /nodes (and the reference's /nodes/register)
// and PATCH /nodes/{id}. The sidecar key is write-only.
type nodeIn struct {
	Name       *string `json:"name"`
	SidecarURL *string `json:"sidecar_url"`
	SidecarKey *string `json:"sidecar_key"`
	Status     *string `json:"status"`   // enabled or disabled
	Hostname   *string `json:"hostname"` // the reference's; accepted and ignored
}

func (in *nodeIn) apply(n *store.Node) error {
	if in.Name != nil {
		if err := checkName("name", *in.Name, 100); err != nil {
			return err
		}
		n.Name = *in.Name
	}
	if in.Hostname != nil {
		if err := checkText("hostname", *in.Hostname, 0, 255); err != nil {
			return err
		}
	}
	if in.SidecarURL != nil {
		if *in.SidecarURL != "" {
			if err := checkURL("sidecar_url", *in.SidecarURL); err != nil {
				return err
			}
		}
		n.SidecarURL = *in.SidecarURL
	}
	if in.SidecarKey != nil {
		// Checked without echoing: the message never quotes a secret.
		if err := checkText("sidecar_key", *in.SidecarKey, 0, 512); err != nil {
			return err
		}
		n.SidecarKey = *in.SidecarKey
	}
	if in.Status != nil {
		if *in.Status != "enabled" && *in.Status != "disabled" {
			return badRequest("field status: must be enabled or disabled")
		}
		n.Status = *in.Status
	}
	return nil
}

func (h *Handler) node(c *call, id int64) (store.Node, error) {
	n, err := h.st.Node(c.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return n, notFound("Node not found")
	}
	if err != nil {
		return n, fmt.Errorf("read node %d: %w", id, err)
	}
	return n, nil
}

func (h *Handler) listNodes(c *call) (any, error) {
	ns, err := h.st.Nodes(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := make([]nodeView, 0, len(ns))
	for _, n := range ns {
		out = append(out, viewNode(n))
	}
	return out, nil
}

func (h *Handler) createNode(c *call) (any, error) {
	var in nodeIn
	if _, err := decode(c.req.Body, &in); err != nil {
		return nil, err
	}
	if in.Name == nil {
		return nil, badRequest("field name: required")
	}
	n := store.Node{Status: "enabled"}
	if err := in.apply(&n); err != nil {
		return nil, err
	}
	// UpsertNode would overwrite a namesake: registering is create-only.
	all, err := h.st.Nodes(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for _, o := range all {
		if o.Name == n.Name {
			return nil, conflict(fmt.Sprintf("Node with name '%s' already exists", n.Name))
		}
	}
	if err := h.st.UpsertNode(c.ctx, &n); err != nil {
		return nil, fmt.Errorf("create node: %w", err)
	}
	v := viewNode(n)
	h.record(c, "node.register", "node", n.ID, map[string]any{"after": v})
	return v, nil
}

func (h *Handler) updateNode(c *call) (any, error) {
	var in nodeIn
	fields, err := decode(c.req.Body, &in)
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 {
		return nil, badRequest("No fields to update")
	}
	n, err := h.node(c, c.id())
	if err != nil {
		return nil, err
	}
	if err := in.apply(&n); err != nil {
		return nil, err
	}
	if err := h.st.UpdateNode(c.ctx, &n); err != nil {
		switch {
		case errors.Is(err, store.ErrConflict):
			return nil, conflict(fmt.Sprintf("Node with name '%s' already exists", n.Name))
		case errors.Is(err, store.ErrNotFound):
			return nil, notFound("Node not found")
		}
		return nil, fmt.Errorf("update node: %w", err)
	}
	v := viewNode(n)
	h.record(c, "node.update", "node", n.ID, map[string]any{"fields": fields, "after": v})
	return v, nil
}

func (h *Handler) deleteNode(c *call) (any, error) {
	n, err := h.node(c, c.id())
	if err != nil {
		return nil, err
	}
	if err := h.st.DeleteNode(c.ctx, n.ID); err != nil {
		switch {
		case errors.Is(err, store.ErrConflict):
			return nil, conflict("Cannot delete node with backends. Remove backends first.")
		case errors.Is(err, store.ErrNotFound):
			return nil, notFound("Node not found")
		}
		return nil, fmt.Errorf("delete node: %w", err)
	}
	h.record(c, "node.delete", "node", n.ID, map[string]any{"before": viewNode(n)})
	return done("deleted", "node_id", n.ID), nil
}

// NodeRefresher is implemented by a Backends that can take the store's
// GPU nodes into the live registry on demand. The registry has no hook to
// poll one sidecar now, so a node's refresh re-reads the nodes (and the
// backends' placement on them) from the store into the registry; their
// sidecars are polled at the next discovery round.
type NodeRefresher interface {
	RefreshNodes(ctx context.Context) error
}

func (h *Handler) getNode(c *call) (any, error) {
	n, err := h.node(c, c.id())
	if err != nil {
		return nil, err
	}
	return viewNode(n), nil
}

// refreshNode re-reads the node from the store and, in a running
// gateway, hands the store's nodes to the live registry (NodeRefresher).
// "applied" says whether the registry took them; without a registry (the
// CLI) only the store is read.
func (h *Handler) refreshNode(c *call) (any, error) {
	n, err := h.node(c, c.id())
	if err != nil {
		return nil, err
	}
	out := done("refreshed", "node_id", n.ID)
	out["node"] = viewNode(n)
	if nr, ok := h.backends.(NodeRefresher); ok {
		err := nr.RefreshNodes(c.ctx)
		out["applied"] = err == nil
		if err != nil {
			h.log.LogAttrs(c.ctx, slog.LevelWarn, "refresh nodes", slog.String("node", n.Name), slog.String("err", err.Error()))
			out["apply_error"] = logredact.Truncate(err.Error(), logredact.MaxEcho)
		}
	}
	h.record(c, "node.refresh", "node", n.ID, map[string]any{"name": n.Name})
	return out, nil
}
